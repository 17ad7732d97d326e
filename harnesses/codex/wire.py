"""Codex's JSON, as its rollouts and `codex exec --json` both write it."""

from __future__ import annotations

from typing import Any

from skillsleep.core.shared.records import Usage
from skillsleep.harnesses import wire

__all__ = ["usage"]


def usage(raw: Any) -> Usage:
    """Codex usage → Usage. Codex follows the OpenAI convention: `input_tokens` includes
    `cached_input_tokens`, `output_tokens` includes the reasoning tokens (not added again)."""
    return wire.usage(raw, prompt=("input_tokens",), output="output_tokens", cached="cached_input_tokens")
