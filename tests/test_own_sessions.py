"""skillsleep never learns from itself: the predicate over parsed sessions (`core/harvest/own.py`), the
run folder every agent process runs in (`harnesses/run_folder.py`), and the harvest that refuses
skillsleep's own sessions, on transcripts the real CLIs wrote in the worst case (a user whose agent
persists every session: tests/fixtures/<agent>/own/, recorded by scripts/record_own_fixtures.py).
The same, live with the real CLIs, is tests/test_own_sessions_real.py."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fixture_sessions import FIXTURES, first_prompt, fixture_sessions, fixture_sources

from skillsleep.core.document.skill import Skill
from skillsleep.core.harvest.harvester import Harvester, Source
from skillsleep.core.harvest.own import in_run_folder, is_sleep_verb, own_reason
from skillsleep.core.mine.intents import extract_instances
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.records import Run, Task
from skillsleep.core.shared.session import Session, Turn
from skillsleep.harnesses import registry
from skillsleep.harnesses.agent_cli import AgentCLI, AgentSettings, CLIResult, HarnessStatus, workdir
from skillsleep.harnesses.failures import Wording
from skillsleep.harnesses.replay import CLIHarness, Invocation, Parsed
from skillsleep.harnesses.run_folder import run_folder

OWN = {"claude-code": FIXTURES / "claude" / "own", "codex": FIXTURES / "codex" / "own", "openclaw": FIXTURES / "openclaw" / "own"}  # fmt: skip


# --- the predicate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "own"),
    [
        ("/tmp/skillsleep-run-k2x9_0ab/work", True),
        ("/var/folders/x/T/skillsleep-run-abcdefgh/work/src", True),  # a subfolder, macOS' temp folder
        ("C:\\Users\\u\\AppData\\Local\\Temp\\skillsleep-run-abcdefgh\\work", True),
        ("/tmp/skillsleep-replay-abcdefgh/work", True),  # the replays of earlier versions
        ("/home/u/project", False),
        ("/home/u/skillsleep-run-notes", False),  # a user's folder: not tempfile's 8 characters
        ("/home/u/skillsleep-runner/x", False),
        ("/home/u/my-skillsleep-run-abcdefgh", False),
        ("", False),
        (None, False),
    ],
)
def test_a_run_folder_is_recognised_by_its_name(path: str | None, own: bool) -> None:
    assert in_run_folder(path) is own


def _user(text: str) -> Turn:
    return Turn(kind="user", text=text)


def _cmd(name: str, args: str = "") -> Turn:
    return Turn(kind="command", tool=name, arguments={"args": args}, text=f"{name} {args}".strip())


@pytest.mark.parametrize(
    ("turn", "verb"),
    [
        (_cmd("/sleep", "status"), True),
        (_cmd("/skillsleep:sleep", "adopt"), True),
        (_cmd("/sleep"), True),
        (_user("$sleep status"), True),
        (_user("$skillsleep:sleep diff"), True),
        (_user("/sleep run --detach"), True),  # typed where the agent keeps no command record
        (_user("/skill sleep status"), True),  # OpenClaw
        (_cmd("/sleepy"), False),
        (_user("$sleeping bag prices"), False),
        (_user("sleep 5 then retry the deploy"), False),
        (_user("why does /sleep say no proposal?"), False),
        (Turn(kind="assistant", text="/sleep status"), False),
    ],
)
def test_sleep_verbs(turn: Turn, verb: bool) -> None:
    assert is_sleep_verb(turn) is verb


def test_own_reason_of_a_session() -> None:
    def session(*turns: Turn, project: str | None = "/home/u/p") -> Session:
        return Session(harness="codex", id="s", project=project, turns=list(turns))

    said = Turn(kind="assistant", text="done")
    assert own_reason(session(_user("fix the bug"), said, project="/tmp/skillsleep-run-abcdefgh/work")) == "run_folder"
    assert own_reason(session(_cmd("/sleep", "status"), said, _user("$sleep diff"))) == "sleep_verbs"
    # anything else the user typed keeps the session: its work is the user's
    assert own_reason(session(_cmd("/sleep", "status"), said, _user("now fix the bug"))) is None
    assert own_reason(session(_user("thanks"), _cmd("/sleep"))) is None
    assert own_reason(session(said)) is None  # no prompt at all: nothing says it is ours
    assert own_reason(session(_user("fix the bug"), project=None)) is None


# --- the run folder -------------------------------------------------------------------------------


def test_run_folder_holds_a_copy_of_the_work_and_the_agent_state_and_goes_away(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "a.txt").write_text("a\n")
    with run_folder(Task(id="t", prompt="p", workdir=str(project)), parent=tmp_path) as folder:
        assert folder.root.parent == tmp_path and folder.root.name.startswith("skillsleep-run-")
        assert in_run_folder(str(folder.work)) and in_run_folder(str(folder.agent))
        assert (folder.work / "a.txt").read_text() == "a\n" and not (folder.work / ".git").exists()
        assert folder.agent.is_dir() and not any(folder.agent.iterdir())
        root = folder.root
    assert not root.exists()
    with run_folder() as empty:  # a model call: no task, an empty working folder in the temp folder
        assert not any(empty.work.iterdir()) and in_run_folder(str(empty.work))
    with workdir(Task(id="t", prompt="p")) as work:  # the replays' working copy is one too
        assert in_run_folder(str(work))


class _PwdHarness(CLIHarness):
    """A CLI harness whose agent prints its working folder: where every replay runs."""

    name = "pwd"
    cli: ClassVar[AgentCLI] = AgentCLI(harness="pwd", default_command="sh", package="-", min_version=(0,))
    words: ClassVar[Wording] = Wording(
        name="pwd", harness="pwd", check="-", login="-", provider="-", final="-", install_hint="-"
    )

    def status(self) -> HarnessStatus:
        return HarnessStatus(name="pwd", installed=True, usable=True, command="/bin/sh")

    def prepare(
        self, command: str, task: Task, skill: Skill, base: dict[str, str], *, cwd: Path, tmp: Path, timeout_s: float
    ) -> Invocation:
        return Invocation(argv=[command, "-c", 'pwd; echo "$STATE"'], env={**base, "STATE": str(tmp)}, state=tmp)

    def parse(self, result: CLIResult, call: Invocation) -> Parsed:
        return Parsed(run=Run(response=result.stdout), complete=True)


def test_every_replay_runs_in_a_run_folder(tmp_path: Path) -> None:
    run = asyncio.run(_PwdHarness(AgentSettings()).run(Task(id="t", prompt="p"), Skill("")))
    cwd, state = run.response.split()
    assert run.error is None and in_run_folder(cwd) and in_run_folder(state)
    assert Path(cwd).name == "work" and Path(state).parent == Path(cwd).parent
    assert not Path(cwd).exists()


# --- what the real CLIs wrote, in the worst case ---------------------------------------------------


@pytest.mark.parametrize("harness", list(OWN))
def test_recorded_own_sessions_are_recognised(harness: str) -> None:
    expect: dict[str, dict[str, Any]] = json.loads((OWN[harness] / "manifest.json").read_text())["sessions"]
    sessions = [s for s in fixture_sessions(harness, OWN[harness]) if not s.sidechain]
    seen = set()
    for session in sessions:
        first = first_prompt(session)
        [(key, want)] = [(k, v) for k, v in expect.items() if k in first]
        assert own_reason(session) == want["own"], (key, session.project)
        if "prompts" in want:
            assert session.prompts() == want["prompts"]
        seen.add(key)
    assert seen == set(expect)


def test_the_users_own_recorded_sessions_are_never_taken_for_skillsleeps() -> None:
    recorded = FIXTURES / "recorded"
    roots = {
        "claude-code": recorded / "claude" / "config",
        "codex": recorded / "codex",
        "openclaw": recorded / "openclaw",
    }
    sessions = [s for harness, root in roots.items() for s in fixture_sessions(harness, root)]
    assert len(sessions) >= 10
    assert [own_reason(s) for s in sessions] == [None] * len(sessions)


def test_harvest_stores_none_of_skillsleeps_sessions_and_says_so(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    harvester = Harvester(store, registry.parsers(), Redactor(), db_readers=registry.db_readers())
    sources = [s for harness, root in OWN.items() for s in fixture_sources(root, harness)]
    report = harvester.harvest(sources)
    assert report.own_sessions == 7  # Claude Code 3, Codex 3, OpenClaw 1
    assert report.sessions == {"claude-code": 1}  # the session that mixed /sleep with work
    [kept] = store.sessions()
    assert kept.prompts() == ["say hello"] and [t.text for t in kept.turns if t.kind == "command"] == ["/sleep diff"]
    again = harvester.harvest(sources)  # read once: the cursors moved past them
    assert again.own_sessions == 0 and again.bytes_read == 0
    [instance] = extract_instances(store.sessions())[0]
    assert instance.prompt == "say hello"
    store.close()


def test_mining_skips_skillsleeps_sessions_a_store_already_holds() -> None:
    sessions = [s for harness, root in OWN.items() for s in fixture_sessions(harness, root) if not s.sidechain]
    instances, intake = extract_instances(sessions)
    assert [i.prompt for i in instances] == ["say hello"]
    assert intake.sessions_skipped == {"skillsleep_own": 7}


if sys.platform == "win32":  # pragma: no cover
    pytest.skip("run folders are tested on POSIX", allow_module_level=True)


def test_a_session_that_turns_to_work_after_sleep_verbs_is_stored_from_there(tmp_path: Path) -> None:
    """Harvested while it is written (watch, the hook): the part with nothing but `/sleep diff` is not
    stored; the work the user asks for afterwards, in the same session, is."""
    [mixed] = [
        p for p in (OWN["claude-code"] / "projects").rglob("*.jsonl") if '"content":"say hello"' in p.read_text()
    ]
    lines = mixed.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"say hello"' in line and b'"type":"user"' in line)
    transcript = tmp_path / "projects" / "-home-dev-project" / mixed.name
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b"".join(lines[:cut]))
    store = Store(tmp_path / "state.db")
    harvester = Harvester(store, registry.parsers(), Redactor())
    source = [Source(harness="claude-code", path=transcript)]
    first = harvester.harvest(source)
    assert (first.own_sessions, first.sessions, store.sessions()) == (1, {}, [])
    with transcript.open("ab") as fh:
        fh.write(b"".join(lines[cut:]))
    second = harvester.harvest(source)
    assert (second.own_sessions, second.sessions) == (0, {"claude-code": 1})
    [kept] = store.sessions()
    assert kept.prompts() == ["say hello"] and not [t for t in kept.turns if t.kind == "command"]
    store.close()
