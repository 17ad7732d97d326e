"""What the agents' JSON has in common, read one way: token counts and lines of JSON objects.

The rule for a token count, the same for every agent's transcripts and replay output: a number
(a JSON integer or float, never a boolean) above 0 and below 2**53, truncated to a whole number;
anything else (absent, negative, a boolean, NaN, text) counts 0. A count is never negative, so a
sum of usages never shrinks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skillsleep.core.shared.records import Usage

__all__ = ["count", "json_objects", "usage"]

_MAX_COUNT = 2**53  # past this a JSON number is no longer a whole number a reader can trust


def count(value: Any) -> int:
    """A token count by the rule of the module docstring."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if 0 < value < _MAX_COUNT else 0  # NaN and infinities fail the comparison


def usage(raw: Any, *, prompt: Sequence[str], output: str, cached: str) -> Usage:
    """`Usage` from an agent's usage object: `input_tokens` is the sum of the `prompt` keys (the
    whole prompt, cached tokens included), `cached_tokens` the `cached` key, a part of it. Not an
    object → no usage."""
    if not isinstance(raw, Mapping):
        return Usage()
    return Usage(
        input_tokens=sum(count(raw.get(key)) for key in prompt),
        output_tokens=count(raw.get(output)),
        cached_tokens=count(raw.get(cached)),
    )


def json_objects(lines: Iterable[str]) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of `lines` (one per line) and how many non-empty lines were something else."""
    objects: list[dict[str, Any]] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if isinstance(value, dict):
            objects.append(value)
        else:
            skipped += 1
    return objects, skipped
