"""Superseded proposals: an adopt puts one proposal of a skill live, so that skill's pending
proposals staged before it (against the file as it was before the adopt) can no longer apply. They
are marked "superseded" (`Proposal.superseded_by` names the adopted one) with a history line each;
another skill's proposals are never touched. `adopt`, `reject` and `diff` of a superseded id refuse
it, naming the newer one (`Proposal.refuse_superseded`); `status` no longer lists it as pending.
core/report/proposals.py calls `supersede` after each adopt (a single one, `--all`, auto-adopt)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from skillsleep.core.report.proposal_record import Action, Proposal
from skillsleep.core.report.proposal_skills import Found

__all__ = ["older_of_skill", "supersede"]


def older_of_skill(adopted: Proposal, found: Found) -> list[Proposal]:
    """The pending proposals of `adopted`'s skill (same file, same section) staged before it."""
    key = next((s.key for p, s in found if p.id == adopted.id), None)
    return [
        p
        for p, s in found
        if p.status == "staged" and s.key == key and (p.created, p.id) < (adopted.created, adopted.id)
    ]


def supersede(
    adopted: Proposal, found: Found, save: Callable[[Proposal], None], record: Callable[[Action], None]
) -> list[str]:
    """Mark `older_of_skill` superseded by `adopted` (`save` writes each, `record` its history line);
    their ids."""
    out = []
    for q in older_of_skill(adopted, found):
        save(q.model_copy(update={"status": "superseded", "superseded_by": adopted.id}))
        why = f"superseded by {adopted.id}, adopted into its skill's file, which this one was staged before"
        record(Action(time=datetime.now(UTC), kind="supersede", proposal_id=q.id, skill_path=q.skill_path, detail=why))
        out.append(q.id)
    return out
