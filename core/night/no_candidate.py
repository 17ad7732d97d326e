"""Why a night gated no candidate, in words for its report: the live skill already at the top score,
no edit proposed (or none readable), every edit refused by the safety screen, too little support,
or every proposal dropped by the memory (the target ignored it before, or you rejected it)."""

from __future__ import annotations

from skillsleep.core.shared.rejected import NOT_FOLLOWED
from skillsleep.core.train.step_record import StepRecord

__all__ = ["no_candidate_reason"]


def no_candidate_reason(steps: list[StepRecord], at_top: int = 0) -> str:
    """Why a night gated no candidate; `at_top`: the held-out tasks, when the steps left were skipped
    because every one of them already had the top score."""
    if at_top and not steps:
        return (
            f"the live skill already has the top score on every held-out task ({at_top}): no candidate could "
            "score higher, so nothing was trained"
        )
    proposed = sum(s.proposed for s in steps)
    refused = sum(len(s.refused) for s in steps)
    unread = sum(1 for s in steps for f in s.failures if f.role == "reflect" and "nothing used" in f.error)
    if not proposed and unread:
        return f"the optimizer proposed no edit: {unread} of its reflect replies could not be read (see Problems)"
    if not proposed:
        return "the optimizer proposed no edit (the skill already does well on these tasks, or its replies could not be read)"
    if refused and refused >= proposed:
        return f"all {refused} proposed edit(s) were refused by the safety screen"
    if any(r.stage == "support" for s in steps for r in s.skipped):
        return (
            f"not enough evidence: the {proposed} proposed edit(s) rest on fewer distinct trajectories than "
            "--min-support asks (copies of one reply count once), so none reached the gate"
        )
    if any(r.stage == "memory" and NOT_FOLLOWED in r.reason for s in steps for r in s.skipped):
        return (
            f"none of the {proposed} proposed edit(s) reached the gate: the target did not follow some of them "
            "before, in the same words, so they were dropped; each step's record says why for each edit"
        )
    if any(r.stage == "user" for s in steps for r in s.skipped):
        return (
            f"none of the {proposed} proposed edit(s) reached the gate: some say only what you rejected before "
            "(`skillsleep reject`), so they were dropped; each step's record says why for each edit"
        )
    return f"none of the {proposed} proposed edit(s) could be applied to the skill"
