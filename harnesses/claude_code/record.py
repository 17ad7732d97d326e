"""One line of a Claude Code transcript, as the parser reads it (`transcripts.py`)."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["TranscriptRecord"]


class TranscriptRecord(msgspec.Struct):
    """The fields of a transcript record that this module reads; every one takes any JSON value
    (a drifted shape is a handler's to judge), and a field that is absent reads as None. Names
    are the transcript's own keys."""

    type: Any = None
    message: Any = None
    sessionId: Any = None
    session_id: Any = None
    isSidechain: Any = None
    agentId: Any = None
    timestamp: Any = None
    cwd: Any = None
    version: Any = None
    uuid: Any = None
    subtype: Any = None
    error: Any = None
    isApiErrorMessage: Any = None
    isMeta: Any = None
    isCompactSummary: Any = None
    isVisibleInTranscriptOnly: Any = None
    origin: Any = None
    apiRefusalExplanation: Any = None
    # a drifted shape: a tool call or result as its own top-level record
    id: Any = None
    name: Any = None
    input: Any = None
    tool_use_id: Any = None
    output: Any = msgspec.UNSET  # UNSET when absent: then `content` is the result's text
    content: Any = None
    is_error: Any = None
