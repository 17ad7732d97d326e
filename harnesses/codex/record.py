"""One line of a Codex rollout, as the parser reads it (`rollout.py`)."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["CodexItem", "CodexRecord"]


class CodexItem(msgspec.Struct):
    """The fields of a record's `payload` that `rollout.py` reads, of every record type at once
    (a field another type carries is simply absent); every one takes any JSON value (a drifted
    shape is a handler's to judge), and an absent one reads as None, or UNSET where presence
    matters. Unread payload (`base_instructions`, a command's `aggregated_output`, encrypted
    reasoning…) is skipped while parsing. Names are the rollout's own keys."""

    type: Any = None
    id: Any = msgspec.UNSET
    timestamp: Any = msgspec.UNSET
    # session_meta, turn_context
    cwd: Any = None
    cli_version: Any = None
    source: Any = None
    parent_thread_id: Any = None
    model: Any = None
    # response_item
    role: Any = None
    content: Any = None
    call_id: Any = None
    name: Any = None
    function: Any = None
    arguments: Any = None
    input: Any = None
    action: Any = None
    output: Any = None
    # event_msg
    kind: Any = None
    message: Any = None
    item: Any = None
    last_agent_message: Any = None
    error: Any = None
    info: Any = None
    exit_code: Any = None
    success: Any = None
    result: Any = None
    reason: Any = None


class CodexRecord(CodexItem):
    """One rollout line: `{type, timestamp, payload}`, or a pre-envelope one whose fields are the
    payload's own (a bare item, or the first line's session meta with `instructions` or `git`)."""

    payload: CodexItem | str | int | float | bool | list[Any] | None = None
    instructions: Any = msgspec.UNSET
    git: Any = msgspec.UNSET
