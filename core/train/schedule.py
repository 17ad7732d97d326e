"""The textual learning rate: the most edits one step may apply, and how it decays over training.

- constant: always `max_edits`;
- linear / cosine: from `max_edits` at step 0 down to `min_edits` at the last step;
- autonomous: what the optimizer proposed at the previous rank call, clamped to the bounds
  (`max_edits` when it proposed nothing).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from skillsleep.core.shared.records import Record


class LRSchedule(Record):
    """How the edit budget per step evolves over `total_steps` steps."""

    schedule: Literal["constant", "linear", "cosine", "autonomous"] = "cosine"
    max_edits: int = Field(default=4, ge=1)
    min_edits: int = Field(default=2, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> LRSchedule:
        if self.min_edits > self.max_edits:
            raise ValueError(f"min_edits ({self.min_edits}) must not exceed max_edits ({self.max_edits})")
        return self


def budget_at(schedule: LRSchedule, step: int, total_steps: int, proposed: int | None = None) -> int:
    """The edit budget at global step `step` (0-based) of `total_steps`.

    With a single step, that step is the first one: it gets `max_edits`. Steps past the end
    get the final value.
    """
    if total_steps < 1:
        raise ValueError(f"total_steps must be at least 1, got {total_steps}")
    low, high = schedule.min_edits, schedule.max_edits
    if schedule.schedule == "constant":
        return high
    if schedule.schedule == "autonomous":
        return high if proposed is None else max(low, min(high, proposed))
    progress = min(1.0, max(0.0, step / (total_steps - 1))) if total_steps > 1 else 0.0
    if schedule.schedule == "linear":
        value = high - (high - low) * progress
    else:
        value = low + (high - low) * (1 + math.cos(math.pi * progress)) / 2
    # Round half up (round() would go to the even neighbour: 2.5 → 2).
    return max(low, min(high, math.floor(value + 0.5)))
