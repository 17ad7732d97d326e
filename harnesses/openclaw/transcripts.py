"""OpenClaw transcripts: pi-agent session JSONL (≤ 2026.8) and the SQLite store (2026.9+, `store.py`).

Both hold the same entries (a `session` header, then `message` / `model_change` / `custom` / …
entries keyed on `type`): one `Builder` makes sessions of them, the two readers only differ in
where the entries come from. What is stripped from a prompt, how usage counts and which agents
are never read: docs/agents.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Set
from datetime import datetime
from pathlib import Path
from typing import Any

from skillsleep.core.harvest.discovery import Found, Parts, walk
from skillsleep.core.shared.jsonl import Reader
from skillsleep.core.shared.session import ParseResult, Session, Turn, utc
from skillsleep.harnesses.agent import Env
from skillsleep.harnesses.openclaw.cli import NAME, REPLAY_AGENT
from skillsleep.harnesses.openclaw.home import state_dirs
from skillsleep.harnesses.openclaw.wire import usage
from skillsleep.harnesses.skill_use import skills_read

__all__ = [
    "SQLITE_NAME",
    "Builder",
    "agent_id",
    "openclaw_sources",
    "parse",
    "parse_openclaw_jsonl",
    "sources",
    "watch_roots",
]

SQLITE_NAME = "openclaw-agent.sqlite"
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


class Builder:
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
                harness=NAME, id=self.default_id, source=self.source, byte_start=start, byte_end=start
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
                args = _arguments(part.get("arguments"))
                call = Turn(kind="tool_call", tool=_str(part.get("name")), call_id=_str(part.get("id")), arguments=args)
                call.ts, call.model = ts, model
                session.turns.append(call)
                skills_read(session, [call])  # a skill is loaded by reading its SKILL.md
        self._flush(session, texts, ts, model)
        stop = _str(msg.get("stopReason"))
        if stop in _ERROR_STOPS:
            text = _str(msg.get("errorMessage")) or stop
            session.turns.append(Turn(kind="error", text=text, is_error=True, ts=ts, model=model))
        session.usage = session.usage + usage(msg.get("usage"))

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


# --- JSONL --------------------------------------------------------------------------------------


def parse_openclaw_jsonl(data: bytes, *, source: str, base_offset: int = 0) -> ParseResult:
    """Sessions in a chunk of a session JSONL file that starts at `base_offset`; a half-written
    last line is left unread (`bytes_read` says how far to resume). Without a header in the
    chunk the session id is taken from the file name (`<id>.jsonl[.reset.<ts>]`)."""
    reader = Reader(data, base_offset=base_offset)
    builder = Builder(source=source, default_id=Path(source).name.split(".jsonl")[0] or source)
    for line in reader.records():
        builder.add(line.value, line.offset, line.end)
    return ParseResult(
        sessions=builder.sessions, skipped=reader.skipped + builder.skipped, bytes_read=reader.consumed - base_offset
    )


def parse(data: bytes, source: str, offset: int) -> ParseResult:
    """`parse_openclaw_jsonl` as harvest calls a parser."""
    return parse_openclaw_jsonl(data, source=source, base_offset=offset)


# --- discovery ----------------------------------------------------------------------------------


def agent_id(path: Path) -> str | None:
    """The agent id a transcript path belongs to: the component after `agents/`."""
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "agents" and parts[i + 1] not in ("", "."):
            return parts[i + 1]
    return None


def sources(env: Env) -> Found:
    """Every OpenClaw transcript on this machine, the replay agent's left out."""
    return sum((openclaw_sources(root, exclude_agents={REPLAY_AGENT}) for root in state_dirs(env)), Found())


def watch_roots(env: Env) -> list[Path]:
    return [root / "agents" for root in state_dirs(env)]


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
