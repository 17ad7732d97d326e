"""OpenClaw transcripts: session JSONL (≤ 2026.8) and the SQLite store (2026.9+)."""

from __future__ import annotations

import json
import os
import random
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pytest
import zstandard

from skillsleep.core.harvest.discovery import Found
from skillsleep.harnesses.openclaw import store as openclaw
from skillsleep.harnesses.openclaw.store import read_openclaw_sqlite
from skillsleep.harnesses.openclaw.transcripts import agent_id, openclaw_sources, parse_openclaw_jsonl

FIXTURES = Path(__file__).parent / "fixtures" / "openclaw"
CHANNEL = FIXTURES / "channel_session.jsonl"


def _parse(data: bytes, source: str = "/s/agents/main/sessions/sess-1.jsonl", base_offset: int = 0):
    return parse_openclaw_jsonl(data, source=source, base_offset=base_offset)


def _channel_session():
    result = _parse(CHANNEL.read_bytes(), source=str(CHANNEL))
    assert len(result.sessions) == 1
    return result, result.sessions[0]


# --- JSONL --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, prompts",
    [
        ("agent-sessions_openclaw_small.jsonl", ["List files"]),
        ("agent-sessions_openclaw_large.jsonl", ["Open /tmp/large and run status"]),
        ("agent-sessions_openclaw_schema_drift.jsonl", ["Need a quick diagnostic"]),
        (
            "agent-sessions_pi_small.jsonl",
            [
                "Read hello.py and summarize what it prints without editing files.",
                "Add one concise follow-up sentence.",
            ],
        ),
    ],
)
def test_sample_v3_transcripts_parse_and_give_prompts(transcripts: Path, name: str, prompts: list[str]) -> None:
    path = transcripts / "openclaw" / name
    data = path.read_bytes()
    result = _parse(data, source=str(path))
    assert [s.prompts() for s in result.sessions] == [prompts]
    assert result.bytes_read == len(data)
    session = result.sessions[0]
    assert session.harness == "openclaw" and session.project and session.started is not None


def test_schema_drift_counts_the_unknown_type_and_keeps_the_rest(transcripts: Path) -> None:
    path = transcripts / "openclaw" / "agent-sessions_openclaw_schema_drift.jsonl"
    result = _parse(path.read_bytes(), source=str(path))
    assert result.skipped["unknown_type"] == 1
    kinds = [t.kind for t in result.sessions[0].turns]
    assert kinds == ["user", "assistant", "tool_call", "tool_result"]  # the system message is no turn


def test_header_gives_session_id_project_times_and_models() -> None:
    _, session = _channel_session()
    assert session.id == "fixture-channel-1"
    assert session.project == "/home/dev/proj"
    assert session.started is not None and session.started.isoformat() == "2026-11-29T10:00:00+00:00"
    assert session.ended is not None and session.ended.isoformat() == "2026-11-29T10:04:00+00:00"
    assert session.models == ["qwen-fixture", "qwen-bigger"]
    assert (session.byte_start, session.byte_end) == (0, CHANNEL.stat().st_size)


def test_channel_wrappers_are_stripped_to_the_users_words() -> None:
    _, session = _channel_session()
    assert session.prompts() == [
        "Fix the failing test in parser.py",  # conversation-info and sender metadata blocks
        "try again please",  # [Telegram … 2026-11-29 10:01 UTC] envelope
        "why did it stop?",  # [Sun 2026-11-29 10:02 UTC] timestamp prefix
        "summarise the repo changes",  # [cron:…] prefix, current time and unattended preamble
    ]


def test_a_prompt_without_wrapper_is_kept_verbatim() -> None:
    text = "[1] first item\nsecond line\n[x] done"
    lines = [_header(), _entry("message", message={"role": "user", "content": text})]
    assert _parse(_jsonl(lines)).sessions[0].prompts() == [text]


def test_slash_prompt_becomes_a_command_turn() -> None:
    _, session = _channel_session()
    commands = [t for t in session.turns if t.kind == "command"]
    assert [(t.tool, t.arguments) for t in commands] == [("sleep", {"args": "status"})]


def test_tool_calls_pair_with_results_and_failures_are_flagged() -> None:
    _, session = _channel_session()
    calls = {t.call_id: t for t in session.turns if t.kind == "tool_call"}
    results = {t.call_id: t for t in session.turns if t.kind == "tool_result"}
    assert calls.keys() == results.keys() == {"call-1", "call-2"}
    assert calls["call-1"].tool == results["call-1"].tool == "exec"
    assert calls["call-1"].arguments == {"command": "pytest -q"}
    assert calls["call-2"].arguments == {"path": "parser.py"}  # arguments given as a JSON string
    assert results["call-1"].is_error  # isError: true
    assert results["call-2"].is_error  # isError: false but details.status: "error"
    assert results["call-1"].text == "1 failed"


def test_thinking_is_dropped_and_assistant_text_kept() -> None:
    _, session = _channel_session()
    texts = [t.text for t in session.turns if t.kind == "assistant"]
    assert texts == ["Running the tests.", "Partial answer", "Last night: 2 edits accepted."]
    assert all("secret plan" not in t.text for t in session.turns)


def test_error_and_aborted_stop_reasons_become_error_turns() -> None:
    _, session = _channel_session()
    errors = [t for t in session.turns if t.kind == "error"]
    assert [t.text for t in errors] == ["429 rate limited by provider", "aborted"]
    assert all(t.is_error and t.model == "qwen-fixture" for t in errors)


def test_usage_counts_cache_reads_and_writes_as_part_of_the_input() -> None:
    _, session = _channel_session()
    # (100 + 300 + 50) + 10 + 7 input; 300 of it read from the cache
    assert (session.usage.input_tokens, session.usage.cached_tokens, session.usage.output_tokens) == (467, 300, 28)


def test_unknown_types_and_roles_are_counted_not_raised() -> None:
    result, _ = _channel_session()
    assert result.skipped["unknown_type"] == 1
    lines = [_header(), {"id": "no-type"}, _entry("message", message={"role": "critic", "content": "x"})]
    assert dict(_parse(_jsonl(lines)).skipped) == {"no_type": 1, "unknown_role": 1}


def test_a_type_role_or_stop_reason_that_is_no_text_is_counted_not_raised() -> None:
    """Found by tests/test_fuzz_readers.py: `{"type": []}` raised TypeError (unhashable)."""
    lines = [
        _header(),
        {"type": [], "id": "e1"},
        {"type": {"a": 1}},
        _entry("message", message={"role": ["user"], "content": "x"}),
        _entry("message", message={"role": "assistant", "content": "ok", "stopReason": {"e": 1}}),
        _entry("message", message={"role": "user", "content": "hi"}),
    ]
    result = _parse(_jsonl(lines))
    assert dict(result.skipped) == {"no_type": 2, "unknown_role": 1}
    assert [(t.kind, t.text) for t in result.sessions[0].turns] == [("assistant", "ok"), ("user", "hi")]


def test_malformed_and_garbage_lines_are_counted_and_skipped() -> None:
    good = CHANNEL.read_bytes()
    first, rest = good.split(b"\n", 1)
    data = first + b'\n{"type": "message", "mess\n\xff\xfe\x00\x81garbage\x00\n[1, 2]\n\n' + rest
    result = _parse(data)
    assert result.skipped["malformed_json"] == 1
    assert result.skipped["binary_garbage"] == 1
    assert result.skipped["not_an_object"] == 1
    assert len(result.sessions[0].prompts()) == 4
    assert result.bytes_read == len(data)


def test_half_written_last_line_is_not_consumed_and_resumes_cleanly() -> None:
    data = CHANNEL.read_bytes()
    cut = data.rindex(b"\n", 0, len(data) - 1) + 40  # 40 bytes into the last line
    first = _parse(data[:cut], source=str(CHANNEL))
    done = first.bytes_read
    assert done == data.rindex(b"\n", 0, len(data) - 1) + 1
    assert first.sessions[0].prompts()[-1] == "why did it stop?"
    second = _parse(data[done:], source=str(CHANNEL), base_offset=done)
    assert second.sessions[0].id == "channel_session"  # no header in this chunk: the file name
    assert second.sessions[0].prompts() == ["summarise the repo changes"]
    assert second.sessions[0].byte_start == done and second.sessions[0].byte_end == len(data)
    assert sum(second.skipped.values()) == 0


def test_archived_file_name_gives_the_session_id_of_a_headerless_chunk() -> None:
    lines = [_entry("message", message={"role": "user", "content": "hi"})]
    result = _parse(_jsonl(lines), source="/s/agents/main/sessions/abc-123.jsonl.reset.2026-11-29T10-00-00Z")
    assert result.sessions[0].id == "abc-123"


def test_deeply_nested_lines_and_odd_field_types_are_skipped_not_raised() -> None:
    data = (
        b'{"a":'
        + b"[" * 100_000
        + b"\n"
        + _jsonl(
            [
                {"type": "session", "id": "h1", "timestamp": {"not": "a time"}, "cwd": ["/p"]},
                {"type": "message", "timestamp": 1e300, "message": {"role": "user", "content": "hi", "timestamp": [1]}},
                {
                    "type": "message",
                    "message": {"role": "assistant", "content": {"x": 1}, "usage": {"input": "9", "output": -1}},
                },
                {"type": "message", "message": "not an object"},
            ]
        )
    )
    result = _parse(data)
    assert dict(result.skipped) == {"too_deep": 1, "bad_message": 1}
    session = result.sessions[0]
    assert session.prompts() == ["hi"] and session.project is None and session.usage.total == 0


@pytest.mark.parametrize(
    "text",
    [
        "[" + "2026-01-01 " * 100_000,
        "x" + "\n" * 500_000 + "Current time: now",
        "Conversation info (untrusted metadata):\n```json\n" + "{" * 1_000_000,
        "System: [t] event\n" * 50_000 + "hi",
    ],
)
def test_pathological_prompts_are_parsed_into_one_session(text: str) -> None:
    """Inputs that make a backtracking wrapper regex blow up (speed lives in bench/, not here)."""
    lines = [_header(), _entry("message", message={"role": "user", "content": text})]
    result = _parse(_jsonl(lines))
    assert len(result.sessions) == 1 and not result.skipped


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_never_raise(seed: int) -> None:
    rng = random.Random(seed)
    base = bytearray(CHANNEL.read_bytes())
    for _ in range(60):
        base[rng.randrange(len(base))] = rng.randrange(256)
    for data in (bytes(base), rng.randbytes(5000)):
        result = _parse(data)
        assert result.bytes_read == data.rfind(b"\n") + 1  # every complete line consumed, good or bad
        assert all(s.byte_end <= len(data) for s in result.sessions)


# --- SQLite -------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE transcript_events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event_json TEXT,
    event_zstd BLOB,
    created_at INTEGER,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE session_nodes (session_key TEXT PRIMARY KEY, session_id TEXT, updated_at INTEGER);
"""


def _db(tmp_path: Path, agent: str = "main", *, wal: bool = False) -> Path:
    path = tmp_path / "state" / "agents" / agent / "agent" / "openclaw-agent.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
    conn.close()
    return path


def _insert(
    db: Path, session_id: str, events: Iterable[tuple[int, dict]], *, zstd_every: int = 0, key: str | None = None
) -> None:
    conn = sqlite3.connect(db)
    with conn:
        for i, (seq, event) in enumerate(events):
            text = json.dumps(event)
            if zstd_every and i % zstd_every == zstd_every - 1:
                row = (session_id, seq, None, zstandard.ZstdCompressor().compress(text.encode()))
            else:
                row = (session_id, seq, text, None)
            conn.execute(
                "INSERT INTO transcript_events (session_id, seq, event_json, event_zstd) VALUES (?, ?, ?, ?)", row
            )
        if key:
            conn.execute("INSERT OR REPLACE INTO session_nodes VALUES (?, ?, 0)", (key, session_id))
    conn.close()


def _channel_events() -> list[dict]:
    return [json.loads(line) for line in CHANNEL.read_text().splitlines()]


def test_sqlite_decodes_json_and_zstd_rows_in_seq_order(tmp_path: Path) -> None:
    db = _db(tmp_path)
    events = list(enumerate(_channel_events()))
    _insert(db, "fixture-channel-1", reversed(events), zstd_every=2)  # stored out of order
    result, cursor = read_openclaw_sqlite(db)
    assert [s.id for s in result.sessions] == ["fixture-channel-1"]
    session = result.sessions[0]
    assert session.prompts() == _channel_session()[1].prompts()
    assert [t.kind for t in session.turns] == [t.kind for t in _channel_session()[1].turns]
    assert session.project == "/home/dev/proj" and session.source == str(db)
    assert (session.byte_start, session.byte_end) == (0, len(events) - 1)  # the seq range
    assert cursor == {"fixture-channel-1": len(events) - 1}
    assert result.skipped["unknown_type"] == 1


def test_sqlite_incremental_read_returns_only_new_events_and_the_new_cursor(tmp_path: Path) -> None:
    db = _db(tmp_path)
    events = _channel_events()
    _insert(db, "s1", enumerate(events[:6]))
    _insert(db, "s2", enumerate(events[:5]), zstd_every=1)
    first, cursor = read_openclaw_sqlite(db)
    assert cursor == {"s1": 5, "s2": 4}
    assert [s.prompts() for s in first.sessions] == [["Fix the failing test in parser.py"]] * 2

    _insert(db, "s1", [(i, e) for i, e in enumerate(events) if i >= 6], zstd_every=3)
    second, cursor2 = read_openclaw_sqlite(db, after_seq=cursor)
    assert cursor2 == {"s1": len(events) - 1, "s2": 4}
    assert [s.id for s in second.sessions] == ["s1"]  # s2 has nothing new
    session = second.sessions[0]
    assert session.prompts() == ["try again please", "why did it stop?", "summarise the repo changes"]
    assert session.project == "/home/dev/proj"  # the header is read again for its metadata
    assert (session.byte_start, session.byte_end) == (6, len(events) - 1)

    third, cursor3 = read_openclaw_sqlite(db, after_seq=cursor2)
    assert third.sessions == [] and cursor3 == cursor2


def test_sqlite_read_leaves_the_database_file_unchanged(tmp_path: Path) -> None:
    db = _db(tmp_path)
    _insert(db, "s1", enumerate(_channel_events()))
    past = 1_700_000_000
    os.utime(db, (past, past))
    before = (db.read_bytes(), db.stat().st_mtime, sorted(p.name for p in db.parent.iterdir()))
    result, _ = read_openclaw_sqlite(db)
    assert result.sessions
    after = (db.read_bytes(), db.stat().st_mtime, sorted(p.name for p in db.parent.iterdir()))
    assert after == before


def test_sqlite_reads_while_a_writer_holds_a_transaction_in_wal_mode(tmp_path: Path) -> None:
    db = _db(tmp_path, wal=True)
    events = _channel_events()
    _insert(db, "s1", enumerate(events[:6]))
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json) VALUES (?, ?, ?)",
            ("s1", 6, json.dumps(events[6])),
        )
        before = db.read_bytes()
        result, cursor = read_openclaw_sqlite(db)
        assert db.read_bytes() == before
        assert result.sessions[0].prompts() == ["Fix the failing test in parser.py"]
        assert cursor == {"s1": 5}  # the uncommitted row is not seen
        assert not result.skipped
    finally:
        writer.execute("COMMIT")
        writer.close()
    _, cursor = read_openclaw_sqlite(db, after_seq=cursor)
    assert cursor == {"s1": 6}


def test_sqlite_locked_database_is_skipped_for_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openclaw, "BUSY_TIMEOUT_S", 0.05)
    db = _db(tmp_path)  # rollback journal: an exclusive writer locks readers out
    _insert(db, "s1", enumerate(_channel_events()))
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        result, cursor = read_openclaw_sqlite(db, after_seq={"s1": 2})
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert result.sessions == [] and dict(result.skipped) == {"sqlite_locked": 1}
    assert cursor == {"s1": 2}  # unchanged: read again next time


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_corrupt_sqlite_file_is_skipped_not_raised(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    db.write_bytes(content)
    result, cursor = read_openclaw_sqlite(db, after_seq={"x": 1})
    assert result.sessions == [] and dict(result.skipped) == {"sqlite_unreadable": 1}
    assert cursor == {"x": 1}


def test_missing_table_or_missing_file_is_skipped_not_raised(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite"
    sqlite3.connect(db).close()
    assert dict(read_openclaw_sqlite(db)[0].skipped) == {"sqlite_unreadable": 1}
    assert dict(read_openclaw_sqlite(tmp_path / "absent.sqlite")[0].skipped) == {"sqlite_unreadable": 1}
    assert not (tmp_path / "absent.sqlite").exists()


def test_corrupt_zstd_and_empty_rows_are_counted(tmp_path: Path) -> None:
    db = _db(tmp_path)
    _insert(db, "s1", enumerate(_channel_events()[:5]))
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO transcript_events (session_id, seq, event_zstd) VALUES ('s1', 5, ?)",
            (b"\x28\xb5\x2f\xfdnot really zstd",),
        )
        conn.execute("INSERT INTO transcript_events (session_id, seq) VALUES ('s1', 6)")
    conn.close()
    result, cursor = read_openclaw_sqlite(db)
    assert result.skipped["zstd_corrupt"] == 1 and result.skipped["empty_event"] == 1
    assert cursor == {"s1": 6}
    assert result.sessions[0].prompts() == ["Fix the failing test in parser.py"]


def test_a_row_whose_text_is_not_utf8_is_read_with_replacement_characters(tmp_path: Path) -> None:
    """Found by tests/test_fuzz_readers.py: one such row made the whole store `sqlite_unreadable`,
    on every harvest."""
    db = _db(tmp_path)
    _insert(db, "s1", enumerate(_channel_events()[:1]))
    event = json.dumps({"type": "message", "message": {"role": "user", "content": "caf\u00e9"}}, ensure_ascii=False)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json) VALUES ('s1', 1, CAST(? AS TEXT))",
            (event.encode("latin-1"),),
        )
        conn.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json) VALUES (CAST(? AS TEXT), 1, '{}')", (b"s\xff",)
        )
    conn.close()
    result, cursor = read_openclaw_sqlite(db)
    assert dict(result.skipped) == {"bad_encoding_repaired": 1, "bad_row": 1}
    assert [s.prompts() for s in result.sessions] == [["caf\ufffd"]] and cursor == {"s1": 1}


def test_a_store_under_a_folder_named_in_no_utf8_gives_sessions_that_can_be_stored(tmp_path: Path) -> None:
    """Found by tests/test_fuzz_readers.py: `source` held the path's surrogate escapes."""
    db = _db(tmp_path / os.fsdecode(b"caf\xe9"))
    _insert(db, "s1", enumerate(_channel_events()))
    result, _ = read_openclaw_sqlite(db)
    assert result.sessions[0].source == str(db).replace("\udce9", "\\xe9")
    assert json.loads(result.sessions[0].model_dump_json())["source"].endswith(
        "caf\\xe9/state/agents/main/agent/openclaw-agent.sqlite"
    )


@pytest.mark.parametrize("folder", ["C# 100% done?", "notes#2", "%41", "a?mode=rw"])
def test_a_store_under_a_folder_with_uri_characters_is_read(tmp_path: Path, folder: str) -> None:
    """Found by tests/test_fuzz_readers.py: the path went into a `file:` URI unquoted, so `#`, `?`
    or `%` in a folder name made the store `sqlite_unreadable` (or named another file)."""
    db = _db(tmp_path / folder)
    _insert(db, "s1", enumerate(_channel_events()))
    result, cursor = read_openclaw_sqlite(db)
    assert dict(result.skipped) == {"unknown_type": 1}  # the fixture's future_event_kind, not "sqlite_unreadable"
    assert [s.id for s in result.sessions] == ["s1"] and cursor == {"s1": 18}


def test_sessions_of_an_excluded_replay_agent_are_absent(tmp_path: Path) -> None:
    replay_db = _db(tmp_path, agent="skillsleep-replay")
    _insert(replay_db, "r1", enumerate(_channel_events()))
    result, cursor = read_openclaw_sqlite(replay_db, exclude_agents={"skillsleep-replay"})
    assert result.sessions == [] and cursor == {}
    assert agent_id(replay_db) == "skillsleep-replay"

    main_db = _db(tmp_path)  # a replay session recorded under its own key in a shared store
    _insert(main_db, "mine", enumerate(_channel_events()), key="agent:main:main")
    _insert(main_db, "replayed", enumerate(_channel_events()), key="agent:skillsleep-replay:explicit:u1")
    _insert(main_db, "helper", enumerate(_channel_events()), key="agent:main:subagent:u2")
    result, cursor = read_openclaw_sqlite(main_db, exclude_agents={"skillsleep-replay"})
    assert [s.id for s in result.sessions] == ["helper", "mine"]
    assert [s.sidechain for s in result.sessions] == [True, False]
    assert "replayed" not in cursor

    jsonl = tmp_path / "state" / "agents" / "skillsleep-replay" / "sessions" / "r.jsonl"
    jsonl.parent.mkdir(parents=True)
    jsonl.write_bytes(CHANNEL.read_bytes())
    assert jsonl not in openclaw_sources(tmp_path / "state", exclude_agents={"skillsleep-replay"}).files
    assert agent_id(jsonl) == "skillsleep-replay"


def test_generated_openclaw_store_rows_parse_and_show_their_prompts(transcripts: Path, tmp_path: Path) -> None:
    exported = transcripts / "generated" / "openclaw" / "sessions-from-sqlite"
    files = sorted(p for p in exported.rglob("*.jsonl") if not p.name.endswith(".trajectory-runtime.jsonl"))
    assert len(files) == 5
    db = _db(tmp_path)
    for path in files:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        _insert(db, rows[0]["id"], enumerate(rows), zstd_every=2, key=f"agent:main:explicit:{rows[0]['id']}")
    result, cursor = read_openclaw_sqlite(db)
    assert not result.skipped
    by_id = {s.id: s for s in result.sessions}
    assert len(by_id) == 5 and set(cursor) == set(by_id)
    assert by_id["8d176f14-94e8-414d-85da-14bfe2c48871"].prompts() == ["Reply with the word hello"] * 2
    assert [t.tool for t in by_id["8d176f14-94e8-414d-85da-14bfe2c48871"].turns if t.kind == "command"] == ["ws-skill"]
    assert by_id["c816b604-d198-4c12-a1bd-849a6f90b51a"].prompts() == ["CRON_MARKER reply with hello"]
    tool_session = by_id["481ec3f4-6e45-4b80-9ddb-51a3d6c48903"]
    assert tool_session.prompts() == ["STUB_TOOL: run echo"]
    assert tool_session.project == "/home/dev/work/openclaw" and tool_session.models == ["stub-model"]
    assert [(t.kind, t.tool) for t in tool_session.turns if t.tool] == [("tool_call", "exec"), ("tool_result", "exec")]
    # the agent's own stdout summary of this run agrees on tokens
    stdout = json.loads((transcripts / "generated" / "openclaw" / "stdout" / "tool.agent-exec-json.json").read_text())
    assert tool_session.usage.input_tokens == stdout["usage"]["input"]
    assert tool_session.usage.output_tokens == stdout["usage"]["output"]


# --- discovery ----------------------------------------------------------------------------------


def test_openclaw_sources_finds_sqlite_jsonl_and_archived_files(tmp_path: Path) -> None:
    root = tmp_path / "state"
    db = _db(tmp_path)
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    names = ["a.jsonl", "b.jsonl.reset.2026-11-29T10-00-00.000Z", "c.jsonl.deleted.2026-11-29T10-00-00.000Z"]
    for name in [*names, "sessions.json", "a.jsonl.lock", "notes.txt"]:
        (sessions / name).write_text("{}\n")
    old = root / "agents" / "work" / "sessions"
    old.mkdir(parents=True)
    (old / "d.jsonl").write_text("{}\n")
    (root / "agents" / "stray-file").write_text("")
    found = openclaw_sources(root)
    assert not found.unreadable and not found.skipped
    assert found.files == [db, *(sessions / n for n in names), old / "d.jsonl"]
    assert openclaw_sources(tmp_path / "missing") == Found()


def _header() -> dict:
    return {"type": "session", "version": 3, "id": "h1", "timestamp": "2026-11-29T10:00:00Z", "cwd": "/p"}


def _entry(kind: str, **fields: object) -> dict:
    return {"type": kind, "id": f"e-{kind}", "parentId": None, "timestamp": "2026-11-29T10:00:01Z", **fields}


def _jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)
