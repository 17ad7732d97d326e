"""What a harvester reads out of an agent's transcripts: sessions made of turns.

Every timestamp is an aware UTC datetime (`utc()` converts); "since" filters compare instants.
A parser never raises for bad input: it skips the record and counts the reason in `skipped`.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from skillsleep.core.shared.records import Record, Usage

TurnKind = Literal["user", "command", "assistant", "tool_call", "tool_result", "error"]


def utc(value: object) -> datetime | None:
    """An aware UTC datetime from ISO text (with or without zone: naive means UTC), epoch seconds
    or milliseconds, or a datetime; None when missing or unreadable."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, datetime):
            dt = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            dt = datetime.fromtimestamp(value / 1000 if value > 1e11 else value, tz=UTC)
        elif isinstance(value, str):
            try:
                dt = datetime.fromisoformat(value)  # the common case, "…Z" included: one call
            except ValueError:
                dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    if dt.tzinfo is UTC:
        return dt
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def source_key(path: Path) -> str:
    """A transcript's path as `Session.source` and harvest cursors hold it: its bytes as UTF-8, any
    byte that is not UTF-8 (a folder named in Latin-1) written as `\\xNN`, so the state database
    (UTF-8 only) can store every path; the same path always gives the same key."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


class Turn(Record):
    """One step of a session: a user prompt, a slash command, assistant text, a tool call or
    result, or an error."""

    kind: TurnKind
    text: str = ""
    tool: str | None = None  # tool name (tool_call / tool_result) or command name (command)
    call_id: str | None = None  # pairs a tool_call with its tool_result
    arguments: dict[str, Any] | None = None  # tool_call arguments, or {"args": "..."} for a command
    is_error: bool = False
    ts: datetime | None = None
    model: str | None = None


class Session(Record):
    """One agent session as harvested (already redacted before it is stored)."""

    harness: str  # the harness (agent) that wrote it: a name in harnesses/registry.py
    id: str
    project: str | None = None  # cwd / project directory
    started: datetime | None = None
    ended: datetime | None = None
    turns: list[Turn] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    source: str = ""  # source_key() of the transcript's (or SQLite file's) path
    byte_start: int = 0
    byte_end: int = 0
    sidechain: bool = False  # a subagent / sidechain session: kept, never mined as user intent
    parent_id: str | None = None
    agent_version: str | None = None
    # the skills the agent loaded or the user invoked, by the name the agent gives them, in order of
    # first use (each agent's parser: docs/harvest.md#which-skill-a-session-used); [] for none
    skills: list[str] = Field(default_factory=list)

    def use_skill(self, name: object) -> None:
        """Note that the session used the skill `name` (ignored when empty, or noted already)."""
        if isinstance(name, str) and (name := name.strip()) and name not in self.skills:
            self.skills.append(name)

    def prompts(self) -> list[str]:
        """The user's own prompts, in order."""
        return [t.text for t in self.turns if t.kind == "user"]


class ParseResult(Record):
    """Sessions read from one source plus per-reason counts of what was skipped."""

    sessions: list[Session] = Field(default_factory=list)
    skipped: Counter[str] = Field(default_factory=Counter)
    bytes_read: int = 0  # bytes of the given data consumed (complete lines): resume at base_offset + bytes_read
