"""Incremental harvest: cursors, appended / truncated / replaced files, redaction before storage."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from skillsleep.core.harvest.harvester import Harvester, Source
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.harnesses.claude_code.transcripts import parse_claude

SID = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
FAKE_KEY = "sk-ant-api03-" + "Q7xL2pZ9" * 6


def user(text: str, n: int, sid: str = SID) -> bytes:
    record = {
        "type": "user",
        "sessionId": sid,
        "cwd": "/home/me/proj",
        "uuid": f"u{n}",
        "timestamp": f"2026-11-0{1 + n % 8}T10:00:00Z",
        "message": {"role": "user", "content": text},
    }
    return (json.dumps(record) + "\n").encode()


def assistant(text: str, n: int, sid: str = SID) -> bytes:
    record = {
        "type": "assistant",
        "sessionId": sid,
        "uuid": f"a{n}",
        "timestamp": f"2026-11-0{1 + n % 8}T10:00:05Z",
        "message": {
            "id": f"msg{n}",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }
    return (json.dumps(record) + "\n").encode()


@pytest.fixture()
def world(tmp_path: Path) -> tuple[Harvester, Store, Path]:
    store = Store(tmp_path / "state.db")
    parsers = {"claude-code": lambda data, source, offset: parse_claude(data, source=source, base_offset=offset)}
    transcript = tmp_path / "projects" / "-home-me-proj" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(user("fix the failing test", 1) + assistant("done", 1))
    return Harvester(store, parsers, Redactor()), store, transcript


def run(h: Harvester, path: Path):  # type: ignore[no-untyped-def]
    return h.harvest([Source(harness="claude-code", path=path)])


def test_first_harvest_stores_sessions_and_a_second_reads_no_bytes(world) -> None:  # type: ignore[no-untyped-def]
    h, store, path = world
    first = run(h, path)
    assert first.sessions == {"claude-code": 1} and first.bytes_read == path.stat().st_size and first.turns == 2
    assert store.session("claude-code", SID).prompts() == ["fix the failing test"]  # type: ignore[union-attr]
    second = run(h, path)
    assert second.bytes_read == 0 and second.files_read == 0 and second.sessions == {}


def test_an_appended_file_is_read_from_its_old_end_and_merged(world) -> None:  # type: ignore[no-untyped-def]
    h, store, path = world
    run(h, path)
    size = path.stat().st_size
    half = user("and update the docs", 3)[:25]  # the agent is still writing this line
    with path.open("ab") as fh:
        fh.write(user("now add a test", 2) + assistant("added", 2) + half)
    report = run(h, path)
    assert report.bytes_read == path.stat().st_size - size and not report.skipped
    session = store.session("claude-code", SID)
    assert session is not None and session.prompts() == ["fix the failing test", "now add a test"]
    assert session.usage.output_tokens == 10
    with path.open("ab") as fh:  # the line is finished
        fh.write(user("and update the docs", 3)[25:])
    report = run(h, path)
    assert report.bytes_read == len(half) + len(user("and update the docs", 3)[25:])
    assert store.session("claude-code", SID).prompts()[-1] == "and update the docs"  # type: ignore[union-attr]


def test_a_truncated_file_is_read_again_and_its_sessions_replaced(world) -> None:  # type: ignore[no-untyped-def]
    h, store, path = world
    run(h, path)
    path.write_bytes(user("something else", 5))
    report = run(h, path)
    assert report.files_reset == 1 and report.bytes_read == path.stat().st_size
    assert store.session("claude-code", SID).prompts() == ["something else"]  # type: ignore[union-attr]


def test_a_replaced_file_of_the_same_size_is_detected(world) -> None:  # type: ignore[no-untyped-def]
    h, store, path = world
    run(h, path)
    data = path.read_bytes().replace(b"fix the failing test", b"fix the passing test")
    os.replace(_write(path.with_suffix(".tmp"), data), path)
    report = run(h, path)
    assert report.files_reset == 1
    assert store.session("claude-code", SID).prompts() == ["fix the passing test"]  # type: ignore[union-attr]


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def test_secrets_never_reach_the_state_database(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    h, store, path = world
    with path.open("ab") as fh:
        fh.write(user(f"use ANTHROPIC_API_KEY={FAKE_KEY} for the call", 4))
    run(h, path)
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("state.db*"))
    assert FAKE_KEY.encode() not in raw and b"Q7xL2pZ9Q7xL2pZ9" not in raw
    assert b"ANTHROPIC_API_KEY" in raw  # the name stays, only the value goes


def test_a_vanished_file_is_counted_not_fatal(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    h, _, path = world
    report = h.harvest(
        [Source(harness="claude-code", path=tmp_path / "gone.jsonl"), Source(harness="claude-code", path=path)]
    )
    assert report.skipped["unreadable_file:FileNotFoundError"] == 1 and report.sessions == {"claude-code": 1}
    assert report.unreadable == [f"{tmp_path / 'gone.jsonl'}: No such file or directory"]


def test_since_counts_older_sessions_apart_and_still_stores_them(world) -> None:  # type: ignore[no-untyped-def]
    h, store, path = world
    late = datetime(2026, 12, 1, tzinfo=UTC)
    report = h.harvest([Source(harness="claude-code", path=path)], since=late)
    assert report.sessions == {} and report.before_since == 1 and report.turns == 0
    assert store.session("claude-code", SID).prompts() == ["fix the failing test"]  # type: ignore[union-attr]


def test_since_compares_instants_not_strings(world) -> None:  # type: ignore[no-untyped-def]
    h, _, path = world
    # the session ended 2026-11-02T10:00:05Z; as text "2026-11-02T10:30:00+01:00" sorts after it, as an instant before
    since = datetime.fromisoformat("2026-11-02T10:30:00+01:00")
    report = h.harvest([Source(harness="claude-code", path=path)], since=since)
    assert report.sessions == {"claude-code": 1} and report.before_since == 0


def test_a_half_written_last_line_is_reported_as_waiting_until_it_ends(world) -> None:  # type: ignore[no-untyped-def]
    h, _, path = world
    half = user("and update the docs", 3)[:25]
    with path.open("ab") as fh:
        fh.write(half)
    first = run(h, path)
    assert (first.waiting_files, first.waiting_bytes) == (1, len(half))
    again = run(h, path)  # unchanged file: not opened, still said to be waiting
    assert again.files_read == 0 and (again.waiting_files, again.waiting_bytes) == (1, len(half))
    with path.open("ab") as fh:
        fh.write(user("and update the docs", 3)[25:])
    done = run(h, path)
    assert (done.waiting_files, done.waiting_bytes) == (0, 0) and done.turns == 1


def test_a_prompt_with_a_lone_surrogate_is_stored_not_raised(world) -> None:  # type: ignore[no-untyped-def]
    """Found by tests/test_fuzz_readers.py: the session could not be written to the state database."""
    h, store, path = world
    with path.open("ab") as fh:
        fh.write(user("half an emoji \ud83d here", 2))
    report = run(h, path)
    assert report.skipped == {"lone_surrogate_repaired": 1}
    assert store.session("claude-code", SID).prompts()[-1] == "half an emoji \ufffd here"  # type: ignore[union-attr]


def test_a_transcript_under_a_folder_named_in_no_utf8_is_read_and_read_once(tmp_path: Path) -> None:
    """Found by tests/test_fuzz_readers.py: the path (str with surrogate escapes) could not be
    written to the state database, so the whole harvest raised UnicodeEncodeError."""
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    folder.mkdir()
    path = folder / f"{SID}.jsonl"
    path.write_bytes(user("fix the failing test", 1))
    h = Harvester(
        Store(tmp_path / "state.db"),
        {"claude-code": lambda d, s, o: parse_claude(d, source=s, base_offset=o)},
        Redactor(),
    )
    first = run(h, path)
    assert first.sessions == {"claude-code": 1} and first.bytes_read == path.stat().st_size
    session = h.store.session("claude-code", SID)
    assert session is not None and session.source == f"{tmp_path}/caf\\xe9/{SID}.jsonl"
    assert run(h, path).files_read == 0


def test_an_openclaw_database_is_read_incrementally_by_seq(tmp_path: Path) -> None:
    from test_openclaw_transcripts import _db, _insert  # the real table shape

    from skillsleep.harnesses.openclaw.store import read_openclaw_sqlite

    store = Store(tmp_path / "state.db")
    h = Harvester(
        store, {}, Redactor(), db_readers={"openclaw": lambda path, seqs: read_openclaw_sqlite(path, after_seq=seqs)}
    )
    db = _db(tmp_path)
    _insert(db, "s1", [(1, _oc_header("s1")), (2, _oc_user("summarise the logs"))])
    source = Source(harness="openclaw", path=db, kind="sqlite")
    first = h.harvest([source])
    assert first.sessions == {"openclaw": 1} and store.session("openclaw", "s1").prompts() == ["summarise the logs"]  # type: ignore[union-attr]
    assert h.harvest([source]).files_read == 0  # unchanged database: not even opened
    _insert(db, "s1", [(3, _oc_user(f"and rotate key {FAKE_KEY}"))])
    third = h.harvest([source])
    assert third.sessions == {"openclaw": 1} and third.turns == 1
    prompts = store.session("openclaw", "s1").prompts()  # type: ignore[union-attr]
    assert prompts[0] == "summarise the logs" and len(prompts) == 2 and FAKE_KEY not in prompts[1]


def _oc_header(sid: str) -> dict[str, object]:
    return {"type": "session", "version": 4, "id": sid, "timestamp": "2026-11-29T08:00:00Z", "cwd": "/home/me/ops"}


def _oc_user(text: str) -> dict[str, object]:
    return {
        "type": "message",
        "id": text[:8],
        "timestamp": "2026-11-29T08:01:00Z",
        "message": {"role": "user", "content": text},
    }


def test_harvest_command_finds_every_agent_and_a_second_run_reads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from skillsleep.slash_commands.cli import main

    fixtures = Path(__file__).parent / "fixtures"
    claude = tmp_path / "claude" / "projects" / "-home-me-proj"
    claude.mkdir(parents=True)
    (claude / f"{SID}.jsonl").write_bytes(user(f"deploy with token {FAKE_KEY}", 1) + assistant("ok", 1))
    codex = tmp_path / "codex" / "sessions" / "2026" / "11" / "29"
    codex.mkdir(parents=True)
    sample = sorted((fixtures / "codex").glob("*.jsonl"))[0]
    (codex / f"rollout-2026-11-29T10-00-00-{SID}.jsonl").write_bytes(sample.read_bytes())
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "openclaw"))
    result = CliRunner().invoke(main, ["harvest", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["sessions"] == {"claude-code": 1, "codex": 1, "openclaw": 0}
    assert report["bytes_read"] > 0 and isinstance(report["skipped"], dict)
    assert sum(report["redactions"].values()) >= 1
    again = json.loads(CliRunner().invoke(main, ["harvest", "--json"]).stdout)
    assert again["bytes_read"] == 0 and again["sessions"] == {"claude-code": 0, "codex": 0, "openclaw": 0}
    bad = CliRunner().invoke(main, ["harvest", "--since", "last tuesday"])
    assert bad.exit_code == 2 and "24h" in bad.stderr


def test_harvest_since_stores_older_sessions_and_the_report_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from skillsleep.slash_commands.cli import main

    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    chats = tmp_path / "chats"
    chats.mkdir()
    (chats / "log.jsonl").write_text(
        '{"created":"2026-11-01T10:00:00Z","messages":[{"role":"user","content":"old prompt"}]}\n'
        '{"messages":[{"role":"user","content":"half-writ'
    )
    first = CliRunner().invoke(main, ["harvest", "--chat-dir", str(chats), "--since", "1h", "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["sessions"] == {"claude-code": 0, "codex": 0, "openclaw": 0, "chat": 0}
    assert report["before_since"] == 1 and report["waiting_files"] == 1
    store = Store(tmp_path / "home" / "state.db")
    assert [s.prompts() for s in store.sessions("chat")] == [["old prompt"]]
    store.close()
    (chats / "new.jsonl").write_text('{"created":"2026-11-01T10:00:00Z","messages":[{"role":"user","content":"x"}]}\n')
    text = CliRunner().invoke(main, ["harvest", "--chat-dir", str(chats), "--since", "1h"]).stdout
    assert "1 session(s) stored for later use, ended before --since" in text
    assert "the last line of 1 file(s) is not finished" in text


def test_harvest_since_then_a_night_mines_the_older_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sleep_kit import TASKS, invoke, night_env, run_night, write_chat_logs, write_scripts

    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")  # sessions of 2026-11-21..23: all before --since 1h
    code, out, err = invoke("harvest", "--since", "1h", "--json")
    assert code == 0, err
    assert json.loads(out)["sessions"]["chat"] == 0 and json.loads(out)["before_since"] == 3 * len(TASKS)
    summary = run_night(tmp_path)  # --since 3650d
    assert summary["sessions"] == 3 * len(TASKS) and summary["recurring_tasks"] == len(TASKS)
