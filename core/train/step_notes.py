"""What later reflections read of earlier steps (`TrainState.earlier_steps`): one line a step
for edits the safety screen refused and for the gate's verdict on a candidate."""

from __future__ import annotations

from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import RejectedEdit

__all__ = ["gate_note", "refused_note"]


def refused_note(step: int, refused: list[RejectedEdit]) -> str:
    """The edits the safety screen refused in step `step` (from 0), never to be proposed again."""
    return f"step {step + 1}: refused by the safety screen, never propose again: " + "; ".join(
        f"{(r.edit.content or '')[:80]!r} ({r.rule})" for r in refused
    )


def gate_note(step: int, edits: list[Edit], before: float, after: float, verdict: str) -> str:
    """The gate's `verdict` on the edits of step `step` (from 0), with the scores before → after."""
    what = "; ".join(f"{e.op} {(e.content or e.target or '')[:80]!r}" for e in edits)
    return f"step {step + 1}: {verdict} ({before:.3f} → {after:.3f}): {what}"
