"""Reading OpenClaw transcripts: pi-agent session JSONL (≤ 2026.8) and the SQLite store (2026.9+).

Both hold the same entries: a header `{"type":"session","id","timestamp","cwd"}` then
`message` / `model_change` / `custom` / … entries keyed on `type`. One parser builds sessions
from entries; the two readers only differ in where the entries come from.

Choices (callers rely on them):
- Usage follows the OpenAI convention of `Usage`: `input_tokens` is the whole prompt
  (`input + cacheRead + cacheWrite`, since pi-ai's `input` excludes cached tokens) and
  `cached_tokens = cacheRead`, a part of it; `output_tokens = output`.
- `Session.byte_start`/`byte_end` are byte offsets for JSONL, and the first/last `seq` read
  for SQLite (`source` is then the database path).
- A user message `/name args` becomes a `command` turn (`tool="name"`); channel wrappers
  (untrusted-metadata blocks, `[Telegram … 2026-…]` envelopes, timestamp and cron prefixes,
  the cron preamble, a trailing `Current time: …` line) are stripped so a `user` turn holds
  the user's own words.
- The SQLite store is opened read-only (`mode=ro`) with a short busy timeout; the database file
  is never written (SQLite may still create the `-wal`/`-shm` side files of a WAL store, as any
  reader does). A locked database is skipped for now (`sqlite_locked`, cursor unchanged), an
  unreadable one (corrupt, no `transcript_events`) is `sqlite_unreadable`. One bad row never makes
  it unreadable: an event whose TEXT is not UTF-8 is read with U+FFFD (`bad_encoding_repaired`),
  a row of another shape is a `bad_row`.
- Sessions of an excluded agent (the replay agent) are never read: the agent id is the path
  component after `agents/` (or the `agent:<id>:…` session key in `session_nodes`).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Set
from datetime import datetime
from pathlib import Path
from typing import Any

from skillsleep.core.discovery import Found, Parts, walk
from skillsleep.core.jsonl import MAX_LINE_BYTES, Reader
from skillsleep.core.records import Usage
from skillsleep.core.session import ParseResult, Session, Turn, source_key, utc

SQLITE_NAME = "openclaw-agent.sqlite"
BUSY_TIMEOUT_S = 0.5
_QUIET_TYPES = {
    "model_change",
    "thinking_level_change",
    "custom",
    "custom_message",
    "compaction",
    "branch_summary",
    "reset",
    "label",
    "session_info",
}
_QUIET_ROLES = {"system", "custom", "bashExecution", "branchSummary", "compactionSummary"}
_ERROR_STOPS = {"error", "aborted"}

# --- channel wrappers ---------------------------------------------------------------------------

_META_BLOCK = re.compile(r"\A[^\n]{1,80}\(untrusted[^)\n]*\):[ \t]*\n```[a-z]*\n.*?\n```[ \t]*(?:\n|\Z)", re.S)
_BRACKET = re.compile(r"\A\[([^\]\n]{1,300})\][ \t]*")  # an envelope when it holds a date:
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # "[Telegram … 2026-11-29 10:00 UTC] ", "[Sun 2026-11-29 …] "
_CRON = re.compile(r"\A\[cron:[^\]\n]*\][ \t]*")
_SYSTEM_LINE = re.compile(r"\ASystem: \[[^\]\n]*\][^\n]*\n")
_MESSAGE_ID_LINE = re.compile(r"\A\[message_id: [^\]\n]*\][ \t]*\n")
_TIME = "\nCurrent time: "
_COMMAND = re.compile(r"\A/([A-Za-z][\w:.-]*)(?:\s+(.*))?\Z", re.S)


def _strip_wrapper(text: str) -> str:
    """The user's own words of a channel prompt (metadata blocks, envelope and prefixes removed)."""
    text = text.strip()
    for _ in range(20):  # wrappers stack (conversation info, sender, thread, …): peel them in turn
        stripped = text
        for pattern in (_META_BLOCK, _SYSTEM_LINE, _MESSAGE_ID_LINE):
            stripped = pattern.sub("", stripped, count=1).lstrip()
        envelope = _BRACKET.match(stripped)
        if envelope and _DATE.search(envelope.group(1)):
            stripped = stripped[envelope.end() :].lstrip()
        if stripped == text:
            break
        text = stripped
    if _CRON.match(text):  # "[cron:<job> <name>] message\nCurrent time: …" and the run preamble
        text = _CRON.sub("", text, count=1)
        text = text[: text.find(_TIME)] if _TIME in text else text
    last = text.rfind("\n")
    if last >= 0 and text.startswith(_TIME, last):  # a trailing "Current time: …" line
        text = text[:last]
    return text.strip()


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


# --- entries → sessions -------------------------------------------------------------------------


class _Builder:
    """Turns a stream of entries into sessions; every `session` header starts a new one."""

    def __init__(self, *, source: str, default_id: str, split_on_header: bool = True) -> None:
        self.source, self.default_id, self.split_on_header = source, default_id, split_on_header
        self.sessions: list[Session] = []
        self.skipped: Counter[str] = Counter()
        self.current: Session | None = None
        self.model: str | None = None

    def _session(self, start: int) -> Session:
        if self.current is None:
            self.current = Session(
                harness="openclaw", id=self.default_id, source=self.source, byte_start=start, byte_end=start
            )
            self.sessions.append(self.current)
        return self.current

    def add(self, entry: dict[str, Any], start: int, end: int) -> None:
        kind = entry.get("type")
        if not isinstance(kind, str):
            self.skipped["no_type"] += 1
            return
        if kind == "session":
            if self.split_on_header:
                self.current, self.model = None, None
            self.header(entry, start)
        elif kind == "message":
            if not isinstance(entry.get("message"), dict):
                self.skipped["bad_message"] += 1
                return
            self.message(self._session(start), entry)
        elif kind == "model_change":
            model = entry.get("modelId")
            if isinstance(model, str) and model:
                self.model = model
                self._note_model(self._session(start), model)
        elif kind in _QUIET_TYPES:
            self._session(start)
        else:
            self.skipped["unknown_type"] += 1
            return
        session = self._session(start)
        session.byte_end = end
        ts = _ts(entry.get("timestamp"))
        if ts is not None:
            session.started = session.started or ts
            session.ended = ts if session.ended is None or ts > session.ended else session.ended

    def header(self, entry: dict[str, Any], start: int) -> None:
        session = self._session(start)
        if isinstance(entry.get("id"), str) and entry["id"]:
            session.id = entry["id"]
        if isinstance(entry.get("cwd"), str) and entry["cwd"]:
            session.project = entry["cwd"]
        parent = entry.get("parentSession")
        if isinstance(parent, str) and parent:
            session.parent_id = Path(parent).name.split(".jsonl")[0]
        session.started = session.started or _ts(entry.get("timestamp"))

    def message(self, session: Session, entry: dict[str, Any]) -> None:
        msg = entry["message"]
        ts = _ts(entry.get("timestamp")) or _ts(msg.get("timestamp"))
        role = _str(msg.get("role"))
        if role == "user":
            self._user(session, msg, ts)
        elif role == "assistant":
            self._assistant(session, msg, ts)
        elif role == "toolResult":
            details = msg.get("details") if isinstance(msg.get("details"), dict) else {}
            failed = msg.get("isError") is True or details.get("status") == "error"
            session.turns.append(
                Turn(
                    kind="tool_result",
                    text=_text_of(msg.get("content")),
                    tool=_str(msg.get("toolName")),
                    call_id=_str(msg.get("toolCallId")),
                    is_error=failed,
                    ts=ts,
                )
            )
        elif role not in _QUIET_ROLES:
            self.skipped["unknown_role"] += 1

    def _user(self, session: Session, msg: dict[str, Any], ts: Any) -> None:
        text = _strip_wrapper(_text_of(msg.get("content")))
        if not text:
            self.skipped["empty_user_message"] += 1
            return
        command = _COMMAND.match(text)
        if command:
            args = (command.group(2) or "").strip()
            session.turns.append(
                Turn(kind="command", text=text, tool=command.group(1), arguments={"args": args}, ts=ts)
            )
        else:
            session.turns.append(Turn(kind="user", text=text, ts=ts))

    def _assistant(self, session: Session, msg: dict[str, Any], ts: Any) -> None:
        model = _str(msg.get("model")) or self.model
        if model:
            self._note_model(session, model)
        content = msg.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts: list[str] = []
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part.get("type") == "toolCall":
                self._flush(session, texts, ts, model)
                session.turns.append(
                    Turn(
                        kind="tool_call",
                        tool=_str(part.get("name")),
                        call_id=_str(part.get("id")),
                        arguments=_arguments(part.get("arguments")),
                        ts=ts,
                        model=model,
                    )
                )
        self._flush(session, texts, ts, model)
        stop = _str(msg.get("stopReason"))
        if stop in _ERROR_STOPS:
            text = _str(msg.get("errorMessage")) or stop
            session.turns.append(Turn(kind="error", text=text, is_error=True, ts=ts, model=model))
        session.usage = session.usage + _usage(msg.get("usage"))

    @staticmethod
    def _flush(session: Session, texts: list[str], ts: Any, model: str | None) -> None:
        text = "\n".join(texts).strip()
        texts.clear()
        if text:
            session.turns.append(Turn(kind="assistant", text=text, ts=ts, model=model))

    @staticmethod
    def _note_model(session: Session, model: str) -> None:
        if model not in session.models:
            session.models.append(model)


def _ts(value: Any) -> datetime | None:
    return utc(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"raw": value}
        return parsed if isinstance(parsed, dict) else {"raw": value}
    return {}


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()

    def n(key: str) -> int:
        value = raw.get(key)
        return int(value) if isinstance(value, (int, float)) and 0 < value < 2**53 else 0

    return Usage(
        input_tokens=n("input") + n("cacheRead") + n("cacheWrite"),
        output_tokens=n("output"),
        cached_tokens=n("cacheRead"),
    )


# --- JSONL --------------------------------------------------------------------------------------


def parse_openclaw_jsonl(data: bytes, *, source: str, base_offset: int = 0) -> ParseResult:
    """Sessions in a chunk of a session JSONL file that starts at `base_offset`; a half-written
    last line is left unread (`bytes_read` says how far to resume). Without a header in the
    chunk the session id is taken from the file name (`<id>.jsonl[.reset.<ts>]`)."""
    reader = Reader(data, base_offset=base_offset)
    builder = _Builder(source=source, default_id=Path(source).name.split(".jsonl")[0] or source)
    for line in reader.records():
        builder.add(line.value, line.offset, line.end)
    return ParseResult(
        sessions=builder.sessions, skipped=reader.skipped + builder.skipped, bytes_read=reader.consumed - base_offset
    )


# --- SQLite -------------------------------------------------------------------------------------


def agent_id(path: Path) -> str | None:
    """The agent id a transcript path belongs to: the component after `agents/`."""
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "agents" and parts[i + 1] not in ("", "."):
            return parts[i + 1]
    return None


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
    builder = _Builder(source=source_key(db), default_id=sid, split_on_header=False)
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


# --- discovery ----------------------------------------------------------------------------------


def openclaw_sources(state_dir: Path, *, exclude_agents: Set[str] = frozenset()) -> Found:
    """Transcript files under one OpenClaw state root: each agent's SQLite store and its session
    JSONL files, archived `*.jsonl.reset.*` / `*.jsonl.deleted.*` included; with the folders that
    could not be read and the entries that are no transcript file."""

    def wanted(parts: Parts) -> bool:  # agents/<agent>/agent/<store> or agents/<agent>/sessions/<file>
        return len(parts) == 3 and (
            (parts[1] == "agent" and parts[2] == SQLITE_NAME) or (parts[1] == "sessions" and _is_session_file(parts[2]))
        )

    def enter(parts: Parts) -> bool:
        return (len(parts) == 1 and parts[0] not in exclude_agents) or (
            len(parts) == 2 and parts[1] in ("agent", "sessions")
        )

    return walk(state_dir / "agents", wanted=wanted, enter=enter)


def _is_session_file(name: str) -> bool:
    return name.endswith(".jsonl") or ".jsonl.reset." in name or ".jsonl.deleted." in name
