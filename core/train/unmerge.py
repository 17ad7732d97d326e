"""A merge never makes a step worse: a merged edit the edit rules would refuse gives way to the
edits it merged, when each of them would land.

The optimizer's merge (core/train/aggregate.py) may join edits that each apply into one the
bounded-edit rules refuse: two literal lines joined into a two-line add with a heading, a
replace whose content grew past the limits. Before ranking, each merged edit is tried alone on
the current skill after the rewrites that need no call (`rewrite`); when it would be refused
(by `refuse`, or by the rules, even once a bare heading is quoted) and each of its members
would apply (or be quoted, or is already in the skill, with at least one that applies), the
step goes on with the members instead, and the merged edit is recorded as refused (stage
"apply", its reason saying so). Nothing here calls a model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.aggregate import AggregateResult
from skillsleep.core.train.edits import EditLimits, apply_edits
from skillsleep.core.train.literals import quoted

Fate = Literal["lands", "moot", "refused"]


def unmerged(
    edits: list[Edit],
    merged: AggregateResult,
    skill: Skill,
    limits: EditLimits,
    *,
    rewrite: Callable[[Edit], Edit],
    refuse: Callable[[Edit], str | None],
) -> tuple[list[Edit], list[RejectedEdit]]:
    """`edits` with each merged edit that would be refused replaced by its members (see the module's
    docstring), and each merged edit so replaced, refused with the reason why."""
    one = limits.model_copy(update={"max_edits": 1})
    out: list[Edit] = []
    split: list[RejectedEdit] = []
    for edit in edits:
        members = merged.members(edit)
        fate, why = _fate(edit, skill, one, rewrite, refuse) if members else ("lands", "")
        fates = [_fate(m, skill, one, rewrite, refuse)[0] for m in members] if fate == "refused" else []
        if fates and "refused" not in fates and "lands" in fates:
            out += [m for m in members if m not in out]
            reason = f"{why}; the {len(members)} edits it merged would each land, and go on instead"
            split.append(RejectedEdit(edit=edit, stage="apply", reason=reason))
        else:
            out.append(edit)
    return out, split


def _fate(
    edit: Edit,
    skill: Skill,
    limits: EditLimits,
    rewrite: Callable[[Edit], Edit],
    refuse: Callable[[Edit], str | None],
) -> tuple[Fate, str]:
    """Whether `edit`, alone on `skill` after `rewrite`, applies, is moot or is refused (and why)."""
    edit = rewrite(edit)
    if (why := refuse(edit)) is not None:
        return "refused", why
    result = apply_edits(skill, [edit], limits)
    if result.applied:
        return "lands", ""
    if result.moot:
        return "moot", ""
    rule = quoted(edit)  # a bare heading: quoted with no call when it is refused
    if rule is not None and apply_edits(skill, [rule], limits).applied:
        return "lands", ""
    return "refused", result.skipped[0].reason
