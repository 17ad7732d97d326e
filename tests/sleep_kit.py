"""Shared pieces for tests of `skillsleep run` (one night of the sleep cycle).

write_scripts(root)       opt.json (optimizer: mine, relevance, dream, reflect, merge, rank,
                          slow update, meta) and target.json (the chat target: follows RULE
                          only when the skill holds it; `unsolved`: fails one held-out task
                          whatever the skill) for the scripted backend
write_script(root)        both in one rules file, for `--backend scripted:<file>` (every role)
write_chat_logs(dir, …)   direct-chat logs in which TASKS recur `times` times, each followed by
                          a correction (so they mine as failing recurring tasks)
night_env(monkeypatch, root)  SKILLSLEEP_HOME / HOME / chat dirs pointed into `root`
run_args(root, *extra)    the `skillsleep run` arguments for the scripted backend
Recorder                  records every model request with its role (LLM.complete wrapped), for
                          checks of what each role was shown
in_terminal(*args)        `skillsleep <args>` in a pseudo-terminal: what a person would see
pty_run(args, …)          the same with a cwd, an environment and a window size: (bytes, exit code)

and for the verbs that read what nights left (status, cost, diff, adopt …):

data, live (fixtures)     SKILLSLEEP_HOME (not created yet) with an empty HOME; a live skill (OLD)
save_night(data, n, …)    night n's record (skill "fmt" on codex unless told otherwise)
spend(data, n, role, …)   one model call in night n's ledger
dead_pid()                a process id that names no process
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord
from skillsleep.core.shared.records import CompletionRequest, LedgerEntry, Usage
from skillsleep.slash_commands.cli import main

RULE = "End every reply with a final line `ANSWER: <answer>`."
TASKS = [
    "Write the changelog entry for the new login feature",
    "Bump the package version and tag the release",
    "Explain why the CI job for the docs failed",
    "Rename the helper function across the codebase",
    "Add type hints to the parser module",
    "Draft the weekly status email for the team",
]
DREAM = "Please handle this one for the staging branch instead"
CORRECTION = "no, put the answer on its own last line"
# a target rule failing "Draft the weekly status email", which the mined splits hold out, whatever the skill
UNSOLVED = {"match": "weekly status email", "reply": "Done."}  # what grounds the answer-line check of the judge


def optimizer_rules(
    *, findings: list[dict[str, Any]] | None = None, relevant: list[int] | None = None, dream: str = DREAM
) -> list[dict[str, str]]:
    """Optimizer rules; `findings` replaces the reflection's default (add RULE)."""
    findings = (
        findings
        if findings is not None
        else [{"kind": "skill_defect", "diagnosis": "no answer line", "op": "add", "target": "", "content": RULE}]
    )
    return [
        {"match": '"mine_merge"', "reply": json.dumps({"groups": []})},
        {
            "match": '"mine_judge"',
            "reply": json.dumps(
                {
                    "checks": [
                        {
                            "type": "last_line_regex",
                            "value": "^ANSWER: .+",
                            "feedback": "the last line must be `ANSWER: <answer>`",
                        }
                    ],
                    "rubric": "",
                }
            ),
        },
        {
            "match": '"relevance"',
            "reply": json.dumps({"relevant": relevant if relevant is not None else list(range(1, 41))}),
        },
        {"match": '"dream"', "reply": json.dumps({"variants": [dream]})},
        {"match": '"findings"', "reply": json.dumps({"findings": findings})},
        {"match": '"groups"', "reply": json.dumps({"groups": []})},
        {"match": '"order"', "reply": json.dumps({"order": [1]})},
        {"match": '"required": \\["reply"\\]', "reply": json.dumps({"reply": "Done.\nANSWER: <answer>"})},
        {"match": '"guidance"', "reply": json.dumps({"guidance": ["Keep the ANSWER line last."]})},
        {"match": '"notes"', "reply": json.dumps({"notes": ["Answer-format rules pay off."]})},
        # the rubric judge, for a task whose judge is the outcome-signals rubric (nothing the user
        # wrote grounds the answer-line check): a reply ending in the answer line passes
        {"match": "(?s)<response-data>.*ANSWER: ", "reply": json.dumps({"score": 1, "rationale": "answer line"})},
        {"match": "(?s)<response-data>.*</response-data>", "reply": json.dumps({"score": 0, "rationale": "none"})},
    ]


TARGET_RULES = [{"match": "ANSWER:", "reply": "Done.\nANSWER: ok"}, {"match": "[\\s\\S]", "reply": "Done."}]


def write_scripts(root: Path, *, unsolved: bool = False, **optimizer: Any) -> tuple[Path, Path]:
    """opt.json and target.json; `unsolved`: the target fails one held-out task (UNSOLVED) whatever
    the skill, so that a night's held-out tasks never all have the top score (then the steps left
    are skipped) and a night of several steps runs them all."""
    root.mkdir(parents=True, exist_ok=True)
    opt, target = root / "opt.json", root / "target.json"
    opt.write_text(json.dumps(optimizer_rules(**optimizer)))
    target.write_text(json.dumps([UNSOLVED, *TARGET_RULES] if unsolved else TARGET_RULES))
    return opt, target


def write_script(root: Path, **optimizer: Any) -> Path:
    """The optimizer's and the target's rules in one file (the optimizer's match their schemas first)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "script.json"
    path.write_text(json.dumps(optimizer_rules(**optimizer) + TARGET_RULES))
    return path


def write_chat_logs(
    folder: Path, tasks: list[str] = TASKS, *, times: int = 3, extra: list[str] = (), correction: str = CORRECTION
) -> Path:
    """One chat-log file: every task asked `times` times (a session each, with `correction`);
    `extra` prompts once each."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        corrected_session(f"s{rep}-{i}", f"2026-11-2{rep + 1}T10:{i:02d}:00Z", t, correction)
        for rep in range(times)
        for i, t in enumerate(tasks)
    ]
    for n, t in enumerate(extra):
        lines.append(
            json.dumps(
                {
                    "id": f"x{n}",
                    "created": "2026-11-25T09:00:00Z",
                    "messages": [{"role": "user", "content": t}, {"role": "assistant", "content": "Done."}],
                }
            )
        )
    path = folder / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def corrected_session(sid: str, created: str, prompt: str, correction: str = CORRECTION) -> str:
    """One chat-log line: `prompt`, the agent's answer and the user's `correction` of it."""
    return json.dumps(
        {
            "id": sid,
            "created": created,
            "messages": [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": correction},
                {"role": "assistant", "content": "ok"},
            ],
        }
    )


def night_env(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    """A private data dir, an empty HOME (no real transcripts) and the chat-log folder; returns the data dir."""
    data = root / "data"
    (root / "home").mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("SKILLSLEEP_HOME", str(data))
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", str(root / "chats"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    return data


def scripted_night(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    """`root` ready for a scripted night run from inside it: the data dir and HOME of `night_env`,
    the working folder, the optimizer's and target's scripts and the chat logs; returns `root`."""
    night_env(monkeypatch, root)
    monkeypatch.chdir(root)
    write_scripts(root)
    write_chat_logs(root / "chats")
    return root


def run_args(root: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--backend",
        "scripted",
        "--optimizer-model",
        str(root / "opt.json"),
        "--target-model",
        str(root / "target.json"),
        "--since",
        "3650d",
        *extra,
    ]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def run_night(root: Path, *extra: str) -> dict[str, Any]:
    """`skillsleep run … --json`; asserts it exited 0 and returns the summary."""
    code, out, err = invoke(*run_args(root, *extra, "--json"))
    assert code == 0, err
    return dict(json.loads(out))


class Recorder:
    """Every model request of this test, with its role (cache hits included): LLM.complete is
    wrapped, so this sees exactly what each role was shown."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, CompletionRequest]] = []
        original = LLM.complete

        async def complete(llm: LLM, role: str, request: CompletionRequest, **kwargs: Any) -> Any:
            self.seen.append((role, request))
            return await original(llm, role, request, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(LLM, "complete", complete)

    def texts(self, *roles: str) -> list[str]:
        """All message text of the requests in these roles (every request when none given)."""
        return ["\n".join(m.content for m in r.messages) for role, r in self.seen if not roles or role in roles]

    def roles(self) -> set[str]:
        return {role for role, _ in self.seen}


def in_terminal(*args: str) -> str:
    """`skillsleep <args>` as a subprocess whose stdin, stdout and stderr are a pseudo-terminal (the
    environment as set, e.g. by night_env); returns everything it wrote, as the terminal got it."""
    return pty_run(list(args))[0].decode("utf-8", errors="replace")


def pty_run(
    args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, size: tuple[int, int] | None = None
) -> tuple[bytes, int]:
    """(every byte `skillsleep ARGS` wrote, its exit code), run with a pseudo-terminal as stdin, stdout
    and stderr; `size` (columns, rows) sets the terminal's window size."""
    master, slave = pty.openpty()
    if size is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillsleep.slash_commands.cli", *args],
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=dict(os.environ) if env is None else env,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        proc.wait(60)
    return b"".join(chunks), proc.returncode


# --- what nights left, for the verbs that read it ------------------------------------------------

OLD = "---\nname: fmt\n---\n- answer briefly — kurz\n"
NEW = "---\nname: fmt\n---\n- answer briefly — kurz\n- end with `Answer: <value>`\n"
HOSTILE = "see [the docs](http://evil.example) and `rm -rf ~` \x1b[31mred\x1b[0m\x1b]0;pwned\x07 \u202eevil"


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SKILLSLEEP_HOME (not created yet) and an empty HOME, so no real transcript is ever read."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    return tmp_path / "data"


@pytest.fixture
def live(tmp_path: Path) -> Path:
    path = tmp_path / "skills" / "fmt" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(OLD)
    return path


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the pid names no process now
    return proc.pid


# a night whose candidate the gate accepted (0.40 → 0.70 on the held-out tasks)
ACCEPTED: dict[str, Any] = {
    "status": "finished",
    "outcome": "accepted",
    "reason": "0.40 → 0.70",
    "baseline": 0.4,
    "candidate": 0.7,
    "accepted": True,
}


def save_night(data: Path, night: int, started: datetime, skill_path: Path | str, **fields: Any) -> None:
    """Night `night`'s record of the skill at `skill_path`, `fields` named as night.json names them
    (flat: "outcome", "tokens" …): skill "fmt" on codex unless `fields` say otherwise."""
    flat = {"night": night, "started": started, "skill_path": str(skill_path), "harness": "codex", "skill_name": "fmt"}
    Nights(data).save(NightRecord.model_validate({**flat, **fields}))


def spend(
    data: Path,
    night: int,
    role: str,
    tokens: int,
    usd: float,
    when: datetime,
    *,
    output_tokens: int = 0,
    cache_hit: bool = False,
    provider: str = "deepseek",
) -> None:
    """One model call of `role` in night `night`'s ledger: `tokens` in, `output_tokens` out, `usd`."""
    RunDir(Nights(data).folder(night)).append_ledger(
        LedgerEntry(
            ts=when,
            role=role,
            provider=provider,
            model="m",
            usage=Usage(input_tokens=tokens, output_tokens=output_tokens),
            cost_usd=usd,
            latency_s=1.0,
            cache_hit=cache_hit,
        )
    )
