"""OpenClaw's JSON (pi-ai's shapes), as its transcripts and `agent exec --json` both write it."""

from __future__ import annotations

from typing import Any

from skillsleep.core.shared.records import Usage
from skillsleep.harnesses import wire

__all__ = ["usage"]


def usage(raw: Any) -> Usage:
    """pi-ai usage → Usage: input is the whole prompt (`input + cacheRead + cacheWrite`, since
    pi-ai's `input` excludes cached tokens), `cached_tokens = cacheRead`."""
    return wire.usage(raw, prompt=("input", "cacheRead", "cacheWrite"), output="output", cached="cacheRead")
