"""OpenClaw's SQLite transcript store (2026.9+), read incrementally by `seq` (docs/agents.md).

The database is opened read-only with a short busy timeout and never written; a locked store is
skipped for now, an unreadable one counted, and one bad row never makes the store unreadable.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Set
from pathlib import Path
from typing import Any

from skillsleep.core.shared.jsonl import MAX_LINE_BYTES, Reader
from skillsleep.core.shared.session import ParseResult, Session, source_key
from skillsleep.harnesses.openclaw.cli import REPLAY_AGENT
from skillsleep.harnesses.openclaw.transcripts import Builder, agent_id

__all__ = ["BUSY_TIMEOUT_S", "read_new", "read_openclaw_sqlite"]

BUSY_TIMEOUT_S = 0.5


def read_new(db: Path, after_seq: dict[str, int]) -> tuple[ParseResult, dict[str, int]]:
    """`read_openclaw_sqlite` as harvest calls a database reader: the replay agent's sessions left out."""
    return read_openclaw_sqlite(db, after_seq=after_seq, exclude_agents={REPLAY_AGENT})


def read_openclaw_sqlite(
    db: Path, *, after_seq: dict[str, int] | None = None, exclude_agents: Set[str] = frozenset()
) -> tuple[ParseResult, dict[str, int]]:
    """Sessions with events after `after_seq[session_id]` (all events for unseen sessions), and
    the new cursor: the last seq read per session. Never raises and never writes the database."""
    cursor = dict(after_seq or {})
    result = ParseResult()
    if agent_id(db) in exclude_agents:
        result.skipped["excluded_agent"] += 1
        return result, cursor
    try:
        # as_uri() quotes the path: a `#`, `?` or `%` in a folder name stays part of it
        conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error:
        result.skipped["sqlite_unreadable"] += 1
        return result, cursor
    conn.text_factory = _text
    try:
        sessions, skipped, new_cursor = _read_store(conn, db, cursor, exclude_agents)
    except sqlite3.OperationalError as exc:
        locked = "locked" in str(exc) or "busy" in str(exc)
        result.skipped["sqlite_locked" if locked else "sqlite_unreadable"] += 1
        return result, cursor
    except sqlite3.Error:  # "file is not a database", a damaged page, …
        result.skipped["sqlite_unreadable"] += 1
        return result, cursor
    finally:
        conn.close()
    return ParseResult(sessions=sessions, skipped=skipped), new_cursor


def _read_store(
    conn: sqlite3.Connection, db: Path, cursor: dict[str, int], exclude_agents: Set[str]
) -> tuple[list[Session], Counter[str], dict[str, int]]:
    keys = _session_keys(conn)
    excluded = set(exclude_agents)
    sessions: list[Session] = []
    skipped: Counter[str] = Counter()
    cursor = dict(cursor)
    tops = conn.execute("SELECT session_id, MAX(seq) FROM transcript_events GROUP BY session_id").fetchall()
    for sid, top in sorted(tops, key=lambda row: str(row[0])):
        if not isinstance(sid, str) or not isinstance(top, int):
            skipped["bad_row"] += 1
            continue
        key = keys.get(sid, "")
        if key.startswith("agent:") and key.split(":")[1] in excluded:
            skipped["excluded_agent"] += 1
            continue
        after = cursor.get(sid)
        if after is not None and top < after:  # the session was rewritten: read it again
            skipped["seq_reset"] += 1
            after = None
        if after is not None and top == after:
            continue
        session, last = _read_session(conn, db, sid, after, skipped)
        cursor[sid] = last if last is not None else cursor.get(sid, top)
        if session is not None:
            session.sidechain = ":subagent:" in key
            sessions.append(session)
    return sessions, skipped, cursor


def _text(data: bytes) -> str | bytes:
    """A TEXT value as str, or as bytes when it is not UTF-8 (SQLite stores what it is given): an
    event is then decoded with replacement characters and counted, any other value is a bad row."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _read_session(
    conn: sqlite3.Connection, db: Path, sid: str, after: int | None, skipped: Counter[str]
) -> tuple[Session | None, int | None]:
    builder = Builder(source=source_key(db), default_id=sid, split_on_header=False)
    if after is not None:  # an incremental read: take the header again for id, cwd and start
        row = conn.execute(
            "SELECT event_json, event_zstd FROM transcript_events WHERE session_id = ? ORDER BY seq LIMIT 1", (sid,)
        ).fetchone()
        event = _event(row[0], row[1], Counter()) if row else None
        if event is not None and event.get("type") == "session":
            builder.header(event, after + 1)
    first: int | None = None
    last: int | None = None
    rows = conn.execute(
        "SELECT seq, event_json, event_zstd FROM transcript_events WHERE session_id = ? AND seq > ? ORDER BY seq",
        (sid, -(2**63) if after is None else after),
    )
    for seq, text, blob in rows:
        if not isinstance(seq, int):
            skipped["bad_row"] += 1
            continue
        first, last = seq if first is None else first, seq
        event = _event(text, blob, skipped)
        if event is not None:
            builder.add(event, seq, seq)
    skipped.update(builder.skipped)
    if not builder.sessions or first is None or last is None:
        return None, last
    session = builder.sessions[0]
    session.id, session.byte_start, session.byte_end = sid, first, last
    return session, last


def _event(text: Any, blob: Any, skipped: Counter[str]) -> dict[str, Any] | None:
    raw: bytes | None = None
    if isinstance(text, str) and text:
        raw = text.encode("utf-8", errors="replace")
    elif isinstance(text, bytes) and text:
        raw = text
    elif isinstance(blob, (bytes, memoryview)) and len(blob):
        raw = _unzstd(bytes(blob), skipped)
        if raw is None:
            return None
    if raw is None:
        skipped["empty_event"] += 1
        return None
    reader = Reader(raw.replace(b"\n", b" ") + b"\n")
    values = [line.value for line in reader.records()]
    skipped.update(reader.skipped)
    return values[0] if values else None


def _unzstd(blob: bytes, skipped: Counter[str]) -> bytes | None:
    import zstandard  # a declared dependency; imported here so JSONL-only users never load it

    try:
        with zstandard.ZstdDecompressor().stream_reader(blob) as stream:
            data = stream.read(MAX_LINE_BYTES + 1)
    except zstandard.ZstdError:
        skipped["zstd_corrupt"] += 1
        return None
    if len(data) > MAX_LINE_BYTES:
        skipped["huge_line"] += 1
        return None
    return data


def _session_keys(conn: sqlite3.Connection) -> dict[str, str]:
    """session_id → session key (`agent:main:main`, …) from `session_nodes`, when it has them."""
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(session_nodes)")}
        if not {"session_id", "session_key"} <= columns:
            return {}
        rows = conn.execute("SELECT session_id, session_key FROM session_nodes")
        return {sid: key for sid, key in rows if isinstance(sid, str) and isinstance(key, str)}
    except sqlite3.Error:
        return {}
