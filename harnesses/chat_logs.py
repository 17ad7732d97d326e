"""Direct-chat logs: JSONL files of OpenAI-shaped conversations, one conversation per line.

A line is `{"messages": [...], "id"?, "model"?, "created"? / "timestamp"?, "usage"?, "metadata"?}`
with messages `{"role": "system"|"user"|"assistant"|"tool", "content": str | [{"type": "text",
"text": ...}], "tool_calls"?: [{"id", "type": "function", "function": {"name", "arguments"}}],
"tool_call_id"?}`. Each line becomes one `Session(harness="chat")`: system messages are not
prompts (skipped), a tool call's `arguments` JSON string is parsed (`{"raw": text}` when it is not
a JSON object), and a tool result is named after its matching call. The session id is the
record's `id`, else `<file stem>:<line offset>` (stable across reads).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from skillsleep.core.harvest.discovery import Found, walk
from skillsleep.core.shared.jsonl import Line, Reader
from skillsleep.core.shared.records import Usage
from skillsleep.core.shared.session import ParseResult, Session, Turn, utc

__all__ = ["chat_log_files", "parse_chat_log"]


def parse_chat_log(data: bytes, *, source: str, base_offset: int = 0) -> ParseResult:
    """One session per complete chat-log line of `data` (which starts at `base_offset` in `source`).

    Never raises for bad input: JSON-level problems are counted by the reader, records without a
    `messages` list as "not_a_chat_log". A half-written last line is left unread (`bytes_read`
    is relative to `data`).
    """
    reader = Reader(data, base_offset=base_offset)
    skipped: Counter[str] = Counter()
    sessions = []
    for line in reader.records():
        session = _conversation(line, source, skipped)
        if session is not None:
            sessions.append(session)
    return ParseResult(
        sessions=sessions, skipped=Counter(reader.skipped) + skipped, bytes_read=reader.consumed - base_offset
    )


def chat_log_files(dirs: Sequence[Path], *, exclude: Sequence[Path] = ()) -> Found:
    """`*.jsonl` files under each of `dirs` (recursive), sorted, none inside an `exclude` folder;
    with the folders that could not be read and the entries that are no transcript file."""
    found = Found()
    for root in dirs:
        found += walk(Path(root), wanted=lambda parts: parts[-1].endswith(".jsonl"), exclude=exclude)
    return found


def _session_id(rid: object, source: str, offset: int) -> str:
    """The log's own id of a conversation, else its file's stem and byte offset."""
    if isinstance(rid, (str, int)) and not isinstance(rid, bool) and str(rid):
        return str(rid)
    return f"{Path(source).stem}:{offset}"


def _conversation(line: Line, source: str, skipped: Counter[str]) -> Session | None:
    rec = line.value
    messages = rec.get("messages")
    if not isinstance(messages, list):
        skipped["not_a_chat_log"] += 1
        return None
    model = _str(rec.get("model"))
    times = [t for t in (utc(_when(rec.get("created"))), utc(_when(rec.get("timestamp")))) if t is not None]
    turns: list[Turn] = []
    tool_names: dict[str, str] = {}
    for msg in messages:
        if not isinstance(msg, dict):
            skipped["bad_message"] += 1
            continue
        ts = utc(_when(msg.get("timestamp")))
        if ts is not None:
            times.append(ts)
        role = msg.get("role")
        text = _text(msg.get("content"))
        if role == "system" or role == "developer":
            continue  # instructions, not the user's prompts
        if role == "user":
            if text:
                turns.append(Turn(kind="user", text=text, ts=ts))
        elif role == "assistant":
            if text:
                turns.append(Turn(kind="assistant", text=text, ts=ts, model=model))
            for call in msg.get("tool_calls") or []:
                turn = _tool_call(call, ts, skipped)
                if turn is not None:
                    turns.append(turn)
                    if turn.call_id and turn.tool:
                        tool_names[turn.call_id] = turn.tool
        elif role == "tool":
            call_id = _str(msg.get("tool_call_id"))
            tool = tool_names.get(call_id or "") or _str(msg.get("name"))
            turns.append(Turn(kind="tool_result", text=text, tool=tool, call_id=call_id, ts=ts))
        else:
            skipped[f"unknown_role:{str(role)[:40]}"] += 1
    metadata = rec.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    project = _str(meta.get("project")) or _str(meta.get("cwd"))
    return Session(
        harness="chat",
        id=_session_id(rec.get("id"), source, line.offset),
        project=project,
        turns=turns,
        models=[model] if model else [],
        usage=_usage(rec.get("usage")),
        started=min(times) if times else None,
        ended=max(times) if times else None,
        source=source,
        byte_start=line.offset,
        byte_end=line.end,
    )


def _tool_call(call: Any, ts: datetime | None, skipped: Counter[str]) -> Turn | None:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        skipped["bad_tool_call"] += 1
        return None
    raw = fn.get("arguments")
    args: dict[str, Any]
    if isinstance(raw, dict):
        args = raw
    else:
        try:
            parsed = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
        except (ValueError, RecursionError):
            parsed = None
        args = parsed if isinstance(parsed, dict) else {"raw": raw if isinstance(raw, str) else json.dumps(raw)}
    return Turn(kind="tool_call", tool=_str(fn.get("name")), call_id=_str(call.get("id")), arguments=args, ts=ts)


def _usage(u: Any) -> Usage:
    if not isinstance(u, dict):
        return Usage()
    details = u.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_int(u.get("prompt_tokens", u.get("input_tokens"))),
        output_tokens=_int(u.get("completion_tokens", u.get("output_tokens"))),
        cached_tokens=_int(cached),
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text")
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _when(value: Any) -> Any:
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
