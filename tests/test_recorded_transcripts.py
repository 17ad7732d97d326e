"""The harvesters on transcripts the real CLIs wrote (tests/fixtures/recorded, made by
scripts/record_fixtures.py against tests/agent_server.py). Ids and timestamps change with every
recording, so every expectation comes from the fixtures' manifest.json: what was sent, what the
stub server answers, and the usage it reports per model call."""

from __future__ import annotations

import hashlib
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from skillsleep.core.harvest.harvester import Harvester, Source
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.session import Session
from skillsleep.harnesses.claude_code.transcripts import claude_session_files, parse_claude
from skillsleep.harnesses.codex.transcripts import codex_session_files, parse_codex
from skillsleep.harnesses.openclaw.store import read_openclaw_sqlite
from skillsleep.harnesses.openclaw.transcripts import openclaw_sources
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.harvester import DB_READERS, PARSERS

REC = Path(__file__).parent / "fixtures" / "recorded"
MANIFEST = json.loads((REC / "manifest.json").read_text())
STUB = MANIFEST["stub"]
ENTRIES: list[dict[str, Any]] = MANIFEST["transcripts"]
HARNESS = {"claude": "claude-code", "codex": "codex", "openclaw": "openclaw"}
ROOTS = {
    "claude": REC / "claude" / "config",
    "codex": REC / "codex" / "codex-home",
    "openclaw": REC / "openclaw" / "state",
}
# Text an agent injects next to the user's words; none of it may come out as a prompt.
INJECTED = (
    "<environment_context>",
    "AGENTS.md",
    "<skill>",
    "SKILL_SAYS",
    "Base directory for this skill",
    "<system-reminder>",
    "<command-name>",
    "Keep answers short",
)


def entry_id(entry: dict[str, Any]) -> str:
    return f"{entry['agent']}-{entry['kind']}"


def of(agent: str) -> list[dict[str, Any]]:
    return [e for e in ENTRIES if e["agent"] == agent]


@cache
def parsed(agent: str, file: str) -> dict[str, Session]:
    """Sessions (by id) of one recorded file, read by the harvester's own parser."""
    path = REC / file
    if agent == "openclaw":
        result, _ = read_openclaw_sqlite(path)
    else:
        parse = parse_claude if agent == "claude" else parse_codex
        result = parse(path.read_bytes(), source=str(path))
    assert not result.skipped.get("bad_record") and not result.skipped.get("malformed"), result.skipped
    return {s.id: s for s in result.sessions}


def session_of(entry: dict[str, Any]) -> Session:
    sessions = parsed(entry["agent"], entry["file"])
    assert entry["session_id"] in sessions, (entry["session_id"], list(sessions))
    return sessions[entry["session_id"]]


@pytest.fixture()
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Copies of the recorded agent folders, the agents' env vars and SKILLSLEEP_HOME pointed at them."""
    for agent, root in ROOTS.items():
        shutil.copytree(root, tmp_path / agent)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "openclaw"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "skillsleep"))
    for name in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# --- the fixtures themselves ---------------------------------------------------------------------


def test_the_manifest_covers_every_agent_and_kind_that_was_asked_for() -> None:
    kinds = {(e["agent"], e["kind"]) for e in ENTRIES}
    assert {("claude", k) for k in ("plain", "tool", "resume", "slash", "bare")} <= kinds
    assert {("codex", k) for k in ("plain", "tool", "resume")} <= kinds
    assert {("openclaw", k) for k in ("plain", "tool")} <= kinds
    assert all(e["cli_version"] == MANIFEST["versions"][e["agent"]] for e in ENTRIES)


def test_discovery_finds_exactly_the_recorded_files() -> None:
    assert {str(p.relative_to(REC)) for p in claude_session_files(ROOTS["claude"]).files} == {
        e["file"] for e in of("claude")
    }
    assert {str(p.relative_to(REC)) for p in codex_session_files(ROOTS["codex"]).files} == {
        e["file"] for e in of("codex")
    }
    assert {str(p.relative_to(REC)) for p in openclaw_sources(ROOTS["openclaw"]).files} == {
        e["file"] for e in of("openclaw")
    }


def test_the_fixtures_hold_no_temporary_path_of_the_recording() -> None:
    for path in REC.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"skillsleep-rec-" not in data and str(REC.parents[2]).encode() not in data, path


# --- every recorded session through the parsers ---------------------------------------------------


@pytest.mark.parametrize("agent", sorted(HARNESS))
def test_each_file_holds_exactly_the_sessions_that_were_recorded(agent: str) -> None:
    for file in {e["file"] for e in of(agent)}:
        got = parsed(agent, file)
        assert set(got) == {e["session_id"] for e in of(agent) if e["file"] == file}
        assert all(s.harness == HARNESS[agent] and not s.sidechain for s in got.values())


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_user_prompts_are_exactly_what_was_sent(entry: dict[str, Any]) -> None:
    session = session_of(entry)
    assert session.prompts() == entry["prompts"]
    assert len(session.prompts()) == entry["expect"]["user_prompts"]
    commands = [{"name": t.tool, "args": (t.arguments or {}).get("args")} for t in session.turns if t.kind == "command"]
    assert commands == entry.get("commands", [])
    for turn in session.turns:
        if turn.kind in ("user", "command"):
            assert not any(marker in turn.text for marker in INJECTED), turn.text


def test_the_recordings_do_carry_the_injected_blocks_the_parsers_must_drop() -> None:
    codex = b"".join((REC / e["file"]).read_bytes() for e in of("codex"))
    assert b"# AGENTS.md instructions" in codex and b"<environment_context>" in codex and b"<skill>" in codex
    (slash,) = [e for e in of("claude") if e["kind"] == "slash"]
    assert b"Base directory for this skill" in (REC / slash["file"]).read_bytes()


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_tool_calls_are_paired_with_their_results(entry: dict[str, Any]) -> None:
    turns = session_of(entry).turns
    calls = [t for t in turns if t.kind == "tool_call"]
    assert len(calls) == entry["expect"]["tool_calls"]
    for call, want in zip(calls, entry["tool_calls"], strict=True):
        assert call.tool == want["tool"] and call.call_id
        assert {k: call.arguments.get(k) for k in want["arguments"]} == want["arguments"]  # type: ignore[union-attr]
        results = [t for t in turns if t.kind == "tool_result" and t.call_id == call.call_id]
        assert len(results) == 1 and turns.index(results[0]) > turns.index(call)
        assert want["result_contains"] in results[0].text and not results[0].is_error
    assert len([t for t in turns if t.kind == "tool_result"]) == len(calls)
    assert not [t for t in turns if t.kind == "error"]


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_assistant_text_is_the_stub_servers_answer(entry: dict[str, Any]) -> None:
    session = session_of(entry)
    answers = [t.text for t in session.turns if t.kind == "assistant"]
    assert answers == entry["answers"] and len(answers) == entry["expect"]["assistant_turns"]
    assert session.models == [STUB["model"]]
    assert all(t.model == STUB["model"] for t in session.turns if t.kind in ("assistant", "tool_call"))


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_usage_is_counted_once_per_model_call(entry: dict[str, Any]) -> None:
    usage = session_of(entry).usage
    assert (usage.input_tokens, usage.output_tokens) == (
        entry["model_calls"] * STUB["usage_in"],
        entry["model_calls"] * STUB["usage_out"],
    )
    reported = entry["reported_usage"]  # the CLI's own totals, from its headless output
    assert (usage.input_tokens, usage.output_tokens) == (reported["input_tokens"], reported["output_tokens"])
    assert usage.cached_tokens == 0


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["agent"] != "openclaw"], ids=entry_id)
def test_usage_equals_the_agents_own_running_total_in_the_transcript(entry: dict[str, Any]) -> None:
    records = [json.loads(line) for line in (REC / entry["file"]).read_text().splitlines()]
    if entry["agent"] == "claude":  # cost-state: Claude Code's per-model totals, cumulative over --resume
        (last,) = [r for r in records if r.get("type") == "cost-state"][-1:]
        totals = [
            (u["inputTokens"] + u["cacheReadInputTokens"] + u["cacheCreationInputTokens"], u["outputTokens"])
            for u in last["modelUsage"].values()
        ]
        own = (sum(t[0] for t in totals), sum(t[1] for t in totals))
    else:  # token_count: Codex's total_token_usage, cumulative over the thread
        counts = [
            r["payload"]["info"]
            for r in records
            if r.get("type") == "event_msg" and r["payload"].get("type") == "token_count" and r["payload"].get("info")
        ]
        total = counts[-1]["total_token_usage"]
        own = (total["input_tokens"], total["output_tokens"])
    usage = session_of(entry).usage
    assert (usage.input_tokens, usage.output_tokens) == own


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_session_id_cwd_version_and_utc_times(entry: dict[str, Any]) -> None:
    session = session_of(entry)
    assert session.id == entry["session_id"] and session.project == entry["cwd"]
    if entry["agent"] != "openclaw":  # OpenClaw's transcript does not name the CLI version
        assert session.agent_version == entry["cli_version"]
    assert session.started is not None and session.ended is not None and session.started <= session.ended
    stamps = [session.started, session.ended, *(t.ts for t in session.turns)]
    assert all(ts is not None and ts.utcoffset() is not None and ts.utcoffset().total_seconds() == 0 for ts in stamps)
    assert [t.ts for t in session.turns] == sorted(t.ts for t in session.turns)  # type: ignore[type-var]


def test_a_resumed_session_is_one_session_with_both_turns_in_order() -> None:
    for entry in (e for e in ENTRIES if e["kind"] == "resume"):
        session = session_of(entry)
        kinds = [t.kind for t in session.turns]
        assert kinds == ["user", "assistant", "user", "assistant"], (entry["agent"], kinds)


# --- through the Harvester and the command line ---------------------------------------------------


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if e["kind"] == "resume" and e["agent"] != "openclaw"], ids=entry_id
)
def test_a_resumed_session_harvested_between_its_two_runs_is_merged(entry: dict[str, Any], tmp_path: Path) -> None:
    """The file as the first run left it, harvested; then the resumed run's lines appended."""
    data = (REC / entry["file"]).read_bytes()
    end_of_run = b'"type":"cost-state"' if entry["agent"] == "claude" else b'"type":"task_complete"'
    lines = data.splitlines(keepends=True)
    cut = sum(len(line) for line in lines[: next(i for i, line in enumerate(lines) if end_of_run in line) + 1])
    path = tmp_path / Path(entry["file"]).name
    path.write_bytes(data[:cut])
    store = Store(tmp_path / "state.db")
    harvester = Harvester(store, PARSERS, Redactor())
    source = Source(harness=HARNESS[entry["agent"]], path=path)
    first = harvester.harvest([source])
    assert first.turns == 2 and first.bytes_read == cut
    with path.open("ab") as fh:
        fh.write(data[cut:])
    second = harvester.harvest([source])
    assert second.bytes_read == len(data) - cut and second.files_reset == 0 and second.turns == 2
    session = store.session(HARNESS[entry["agent"]], entry["session_id"])
    assert session is not None and session.prompts() == entry["prompts"]
    assert [t.text for t in session.turns if t.kind == "assistant"] == entry["answers"]
    assert (session.usage.input_tokens, session.usage.output_tokens) == (
        entry["model_calls"] * STUB["usage_in"],
        entry["model_calls"] * STUB["usage_out"],
    )
    store.close()


def test_openclaw_store_is_harvested_read_only_and_a_second_harvest_reads_nothing(tmp_path: Path) -> None:
    (entry_file,) = {e["file"] for e in of("openclaw")}
    db = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    shutil.copyfile(REC / entry_file, db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    store = Store(tmp_path / "state.db")
    harvester = Harvester(store, PARSERS, Redactor(), db_readers=DB_READERS)
    source = Source(harness="openclaw", path=db, kind="sqlite")
    first = harvester.harvest([source])
    assert first.sessions == {"openclaw": len(of("openclaw"))} and not first.skipped
    assert first.tools == {t["tool"]: 1 for e in of("openclaw") for t in e["tool_calls"]}
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    stored = {s.id: s for s in store.sessions("openclaw")}
    assert {i: s.prompts() for i, s in stored.items()} == {e["session_id"]: e["prompts"] for e in of("openclaw")}
    second = harvester.harvest([source])
    assert second.sessions == {} and second.files_read == 0 and second.turns == 0
    store.close()


def test_skillsleep_harvest_json_finds_every_recorded_session(homes: Path) -> None:
    result = CliRunner().invoke(main, ["harvest", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    want = {HARNESS[a]: len({e["session_id"] for e in of(a)}) for a in HARNESS}
    assert report["sessions"] == want
    assert report["errors"] == 0 and not report["unreadable"]
    assert report["files_seen"] == len({e["file"] for e in ENTRIES})
    store = Store(homes / "skillsleep" / "state.db")
    for entry in ENTRIES:
        session = store.session(HARNESS[entry["agent"]], entry["session_id"])
        assert session is not None and session.prompts() == entry["prompts"]
        assert [t.text for t in session.turns if t.kind == "assistant"] == entry["answers"]
    store.close()
    again = CliRunner().invoke(main, ["harvest", "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["sessions"] == {name: 0 for name in want}
