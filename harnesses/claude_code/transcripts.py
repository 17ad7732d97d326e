"""Claude Code transcripts (`<config dir>/projects/**.jsonl`) read into sessions of turns.

Each line is decoded straight into a `TranscriptRecord` (record.py: only the fields read here, so
big unread payloads such as a tool result's `toolUseResult` copy are never built). Records are
keyed on `type`; an unknown type is skipped and counted (`unknown_type:<t>`), known metadata
records are ignored, and nothing here raises for bad input. The choices the format leaves open
(usage per message id, what is not a prompt, sidechains, `byte_end`) are listed in docs/agents.md.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

import msgspec

from skillsleep.core.harvest.discovery import Found, Parts, walk
from skillsleep.core.shared.jsonl import Reader, Span
from skillsleep.core.shared.records import Usage
from skillsleep.core.shared.session import ParseResult, Session, Turn, utc
from skillsleep.harnesses.agent import Env
from skillsleep.harnesses.claude_code.cli import NAME
from skillsleep.harnesses.claude_code.home import config_dir
from skillsleep.harnesses.claude_code.record import TranscriptRecord
from skillsleep.harnesses.claude_code.skill_use import loaded_skill
from skillsleep.harnesses.claude_code.wire import block_text, blocks
from skillsleep.harnesses.claude_code.wire import usage as usage_of
from skillsleep.harnesses.skill_use import skills_read

__all__ = ["claude_session_files", "parse", "parse_claude", "sources", "watch_roots"]

# Understood records that hold no turn; prefixes cover families such as `api-request-blob`.
_METADATA = frozenset(
    {
        "summary", "file-history-snapshot", "queue-operation", "attachment", "last-prompt",
        "ai-title", "custom-title", "agent-name", "cost-state", "atis-latch", "tools-used",
        "permission-mode", "mode", "progress", "pr-link", "frame-link", "worktree-state",
        "relocated", "bridge-session",
    }
)  # fmt: skip
_METADATA_PREFIXES = ("api-request",)
_ERROR_SUBTYPES = frozenset({"api_error", "error", "api_refusal"})
_META_PREFIXES = (
    "Caveat:",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<user-prompt-submit-hook>",
    "This session is being continued from a previous conversation",
    "Base directory for this skill:",  # a skill's body injected by the Skill tool
)
_INTERRUPTED = "[Request interrupted by user"
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_TAG = "<{0}>(.*?)</{0}>"
_SYNTHETIC = "<synthetic>"


@dataclass
class _Hints:
    """What the file's path says: a subagent file, its agent id and its parent session."""

    sidechain: bool
    stem: str
    agent: str | None
    parent: str | None

    @classmethod
    def of(cls, source: str) -> _Hints:
        path = PurePath(source)
        in_subagents = path.parent.name == "subagents"
        named = re.fullmatch(r"agent-([0-9a-f]{6,})", path.stem)  # agent-<hex>: a subagent's file
        agent = path.stem.removeprefix("agent-") if in_subagents or named else None
        parent = path.parent.parent.name if in_subagents and path.parent.parent.name else None
        return cls("/subagents/" in source.replace("\\", "/"), path.stem, agent, parent)


@dataclass
class _Builder:
    """One session being assembled, plus the bookkeeping that does not belong in `Session`."""

    session: Session
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)  # message id → last usage object seen
    tools: dict[str, str] = field(default_factory=dict)  # tool_use id → tool name
    has_content: bool = False
    ts: datetime | None = None  # the time of the record being read
    # the session's times and end, kept here while reading (a model's attribute write is not
    # free, and these change on every line) and set on the session by finish()
    started: datetime | None = None
    ended: datetime | None = None
    byte_end: int = 0

    def add(self, turn: Turn) -> None:
        if turn.kind == "tool_call" and turn.call_id:
            if turn.call_id in self.tools:
                return  # the same block written twice (a resumed session copies history)
            self.tools[turn.call_id] = turn.tool or ""
        turn.ts = self.ts
        self.session.turns.append(turn)
        self.has_content = True

    def finish(self) -> Session:
        counts = [usage_of(raw) for raw in self.usage.values()]  # only the last of a split reply
        self.session.usage = Usage(
            input_tokens=sum(u.input_tokens for u in counts),
            output_tokens=sum(u.output_tokens for u in counts),
            cached_tokens=sum(u.cached_tokens for u in counts),
        )
        self.session.started, self.session.ended, self.session.byte_end = self.started, self.ended, self.byte_end
        skills_read(self.session)
        return self.session


def parse_claude(data: bytes, *, source: str, base_offset: int = 0, sidechain: bool | None = None) -> ParseResult:
    """Sessions in one Claude Code JSONL buffer that starts at `base_offset` of file `source`.

    `sidechain=True` marks every record as a subagent's; None detects it from a `/subagents/`
    path and `isSidechain`; False ignores the path but still honours `isSidechain`."""
    reader = Reader(data, base_offset=base_offset)
    skipped: Counter[str] = Counter()
    builders: dict[str, _Builder] = {}
    hints = _Hints.of(source)
    current: str | None = None
    for line in reader.records_as(TranscriptRecord):
        rec = line.value
        kind = rec.type
        if kind is None and isinstance(rec.message, dict):
            kind = rec.message.get("role")  # the oldest lines carry no type
        if not isinstance(kind, str):
            skipped["missing_type"] += 1
            continue
        handler = _HANDLERS.get(kind)
        if handler is None:
            if kind not in _METADATA and not kind.startswith(_METADATA_PREFIXES):
                skipped[f"unknown_type:{kind}"] += 1
            continue
        key, side, parent = _identity(rec, hints, sidechain, fallback=current or hints.stem)
        builder = builders.get(key)
        if builder is None:
            session = Session(harness=NAME, id=key, source=source, sidechain=side, parent_id=parent)
            builder = builders[key] = _Builder(session)
            session.byte_start = line.offset
        if not side:
            current = key  # a later record without a sessionId belongs to this session
        builder.ts = utc(_str(rec.timestamp))
        try:
            handler(builder, rec, line)
        except (AttributeError, TypeError, ValueError, KeyError):
            # A record of a known type whose fields have drifted: count it, keep the rest.
            skipped[f"bad_record:{kind}"] += 1
            continue
        _envelope(builder, rec, line)
    skipped.update(reader.skipped)
    sessions = [b.finish() for b in builders.values() if b.has_content]
    return ParseResult(sessions=sessions, skipped=skipped, bytes_read=reader.consumed - base_offset)


def parse(data: bytes, source: str, offset: int) -> ParseResult:
    """`parse_claude` as harvest calls a parser."""
    return parse_claude(data, source=source, base_offset=offset)


def sources(env: Env) -> Found:
    """Every Claude Code transcript on this machine (under the config dir of `env`)."""
    return claude_session_files(config_dir(env))


def watch_roots(env: Env) -> list[Path]:
    return [config_dir(env) / "projects"]


def claude_session_files(root: Path) -> Found:
    """Transcript files under a Claude config root: `projects/<project>/*.jsonl` (sessions, and
    the old flat `agent-*.jsonl`) and `projects/<project>/<session>/subagents/agent-*.jsonl`,
    with the folders that could not be read and the entries that are no transcript file."""
    return walk(root / "projects", wanted=_claude_wanted, enter=_claude_enter)


def _claude_wanted(parts: Parts) -> bool:
    if len(parts) == 2:
        return parts[1].endswith(".jsonl")
    return len(parts) == 4 and parts[2] == "subagents" and parts[3].startswith("agent-") and parts[3].endswith(".jsonl")


def _claude_enter(parts: Parts) -> bool:
    return len(parts) <= 2 or (len(parts) == 3 and parts[2] == "subagents")


# --- identity and envelope ----------------------------------------------------------------------


def _identity(
    rec: TranscriptRecord, hints: _Hints, forced: bool | None, *, fallback: str
) -> tuple[str, bool, str | None]:
    """(session id, sidechain?, parent id) of one record."""
    sid = _str(rec.sessionId) or _str(rec.session_id)
    side = forced is True or (forced is None and hints.sidechain) or rec.isSidechain is True
    if not side:
        return sid or fallback, False, None
    agent = _str(rec.agentId) or hints.agent
    own = f"agent-{agent}" if agent else (f"{sid}:sidechain" if sid else hints.stem)
    parent = sid if sid and sid != own else hints.parent
    return own, True, parent


def _envelope(b: _Builder, rec: TranscriptRecord, line: Span) -> None:
    """Widen the session's times, and take its project, version and end from one record; a field
    of the session is assigned only when it changes (a model's attribute write is not free, and
    this runs per line)."""
    ts, session = b.ts, b.session
    if ts is not None:
        if b.started is None or ts < b.started:
            b.started = ts
        if b.ended is None or ts > b.ended:
            b.ended = ts
    if not session.project:
        session.project = _str(rec.cwd)
    version = _str(rec.version)
    if version and version != session.agent_version:
        session.agent_version = version
    b.byte_end = line.end


# --- record handlers ----------------------------------------------------------------------------


def _user(b: _Builder, rec: TranscriptRecord, line: Span) -> None:
    message = rec.message
    if not isinstance(message, dict):
        raise TypeError("user message is not an object")
    parts = blocks(message.get("content"))
    if parts is None:
        raise TypeError("user content is neither text nor blocks")
    results = [x for x in parts if isinstance(x, dict) and x.get("type") == "tool_result"]
    texts = [x["text"] for x in parts if _is_text(x)]
    for result in results:
        call_id = _str(result.get("tool_use_id"))
        tool = b.tools.get(call_id) if call_id else None
        text = block_text(result.get("content"))
        failed = result.get("is_error") is True
        b.add(Turn(kind="tool_result", call_id=call_id, tool=tool, text=text, is_error=failed))
    text = "\n".join(texts)
    if _REMINDER.sub("", text).strip().startswith(_INTERRUPTED):
        b.add(Turn(kind="error", text=text.strip()))
    elif _is_meta_record(rec):
        b.session.use_skill(loaded_skill(text, b.session.turns))  # a skill's body, loaded
    elif not results:
        turn = _prompt_turn(text)
        if turn is not None:
            b.add(turn)


def _assistant(b: _Builder, rec: TranscriptRecord, line: Span) -> None:
    message = rec.message
    if not isinstance(message, dict):
        raise TypeError("assistant message is not an object")
    model = _str(message.get("model"))
    msg_id = _str(message.get("id")) or _str(rec.uuid) or f"@{line.offset}"
    usage = message.get("usage")
    if isinstance(usage, dict):
        b.usage[msg_id] = usage  # last line of a split reply wins: it has the final count
        b.has_content = True
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    if model == _SYNTHETIC or rec.isApiErrorMessage is True:
        text = "\n".join(x["text"] for x in parts if _is_text(x))
        if rec.isApiErrorMessage is True or rec.error or text.startswith("API Error"):
            b.add(Turn(kind="error", text=text or _str(rec.error) or "API error", model=model))
        return
    if model and model not in b.session.models:
        b.session.models.append(model)
    for block in parts:
        turn = _assistant_turn(block, model)
        if turn is not None:
            b.add(turn)


def _system(b: _Builder, rec: TranscriptRecord, line: Span) -> None:
    if rec.subtype in _ERROR_SUBTYPES:
        b.add(Turn(kind="error", text=_error_text(rec)))


def _tool_use(b: _Builder, rec: TranscriptRecord, line: Span) -> None:
    """A drifted shape: a tool call as its own top-level record."""
    args = rec.input
    call_id = _str(rec.id) or _str(rec.tool_use_id)
    args = args if isinstance(args, dict) else {}
    b.add(Turn(kind="tool_call", tool=_str(rec.name), call_id=call_id, arguments=args))


def _tool_result(b: _Builder, rec: TranscriptRecord, line: Span) -> None:
    """A drifted shape: a tool result as its own top-level record."""
    text = block_text(rec.content if rec.output is msgspec.UNSET else rec.output)
    call_id = _str(rec.tool_use_id) or _str(rec.id)
    failed = rec.is_error is True
    name = _str(rec.name)
    b.add(Turn(kind="tool_result", tool=name, call_id=call_id, text=text, is_error=failed))


_HANDLERS = {
    "user": _user,
    "assistant": _assistant,
    "system": _system,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
}


# --- helpers ------------------------------------------------------------------------------------


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def _is_meta_record(rec: TranscriptRecord) -> bool:
    origin = rec.origin
    return (
        rec.isMeta is True
        or rec.isCompactSummary is True
        or rec.isVisibleInTranscriptOnly is True
        or (isinstance(origin, dict) and origin.get("kind") == "task-notification")
    )


def _prompt_turn(text: str) -> Turn | None:
    """The turn a user's text makes: a prompt, a slash or bash command, or None for meta text."""
    stripped = _REMINDER.sub("", text).strip()
    if not stripped or stripped.startswith(_META_PREFIXES):
        return None
    name = _tag("command-name", stripped)
    if name is not None:
        name = name if name.startswith("/") else f"/{name}"
        args = _tag("command-args", stripped) or ""
        return Turn(kind="command", tool=name, arguments={"args": args}, text=f"{name} {args}".strip())
    bash = _tag("bash-input", stripped)
    if bash is not None:
        return Turn(kind="command", tool="!", arguments={"args": bash}, text=f"! {bash}")
    return Turn(kind="user", text=stripped)


def _assistant_turn(block: Any, model: str | None) -> Turn | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
        return Turn(kind="assistant", text=block["text"], model=model)
    if kind in ("tool_use", "server_tool_use"):
        args = block.get("input")
        return Turn(
            kind="tool_call",
            tool=_str(block.get("name")),
            call_id=_str(block.get("id")),
            arguments=args if isinstance(args, dict) else {},
            model=model,
        )
    return None  # thinking, redacted_thinking and unknown blocks carry nothing to mine


def _error_text(rec: TranscriptRecord) -> str:
    error = rec.error
    parts: list[str] = []
    if isinstance(error, dict):
        inner = error.get("error")
        nested = inner.get("error") if isinstance(inner, dict) else None
        for candidate in (error.get("message"), nested.get("message") if isinstance(nested, dict) else None):
            if isinstance(candidate, str) and candidate:
                parts.append(candidate)
                break
        if isinstance(error.get("status"), int) and error["status"]:
            parts.append(f"status {error['status']}")
    elif isinstance(error, str) and error:
        parts.append(error)
    for text in (rec.apiRefusalExplanation, rec.content):
        if not parts and isinstance(text, str) and text:
            parts.append(text)
    return "; ".join(parts) or str(rec.subtype)


def _tag(name: str, text: str) -> str | None:
    match = re.search(_TAG.format(name), text, re.DOTALL)
    return match.group(1).strip() if match else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
