"""The memory of refused and rejected edits, and what it keeps out of a step.

remember_refused()        what the bounded-edit rules still refuse after the repair goes into the
                          rejected-edit memory (stage "apply")
remember_gated()          the edits of a candidate the gate rejected go into it too (stage "gate"), and
                          for a repaired one the optimizer's original proposal, linked to its repair
                          (stage "repair")
drop_remembered()         a new proposal identical to a remembered refusal, or to an edit the gate
                          rejected on its own on the same skill text (or the proposal it was repaired
                          from), is dropped before ranking
drop_rejected_by_user()   so is one that says only what the user rejected (stage "user", written by
                          core/night/rejections.py): every line it would add, or every line it would
                          delete, is in such a change, compared after the rewrites that need no call
                          and with whitespace, case and a list marker folded
usable()                  that, and a proposal resting on fewer distinct trajectories than
                          `[train] min_support` is held back before ranking
"""

from __future__ import annotations

import re
from collections.abc import Callable

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Edit, GateDecision, RejectedEdit, folded
from skillsleep.core.train.literals import rewritten

_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
USER_REJECTED = "the user rejected proposal"  # how a user entry's reason begins (and a night's reason finds it)


def skip_line(edit: Edit, why: str) -> str:
    """The step record's line for a refused edit: what it tried, then why."""
    return f"{edit.op} {edit.target or edit.content!r}: {why}"


def remember_refused(rejected: list[RejectedEdit], refused: list[tuple[Edit, str]], *, epoch: int, step: int) -> None:
    """Add each still-refused edit to the rejected-edit memory with its reason, once."""
    known = {r.edit.key() for r in rejected if r.stage == "apply"}
    for edit, why in refused:
        if edit.key() not in known:
            known.add(edit.key())
            rejected.append(RejectedEdit(edit=edit, stage="apply", reason=why, epoch=epoch, step=step))


def remember_gated(
    rejected: list[RejectedEdit],
    edits: list[Edit],
    decision: GateDecision,
    *,
    on: Skill,
    alone: list[Edit],
    repaired: list[tuple[Edit, Edit]],
    epoch: int,
    step: int,
) -> None:
    """Add `edits`, of a candidate the gate rejected on skill `on`, to the rejected-edit memory (with
    `on`'s hash when rejected `alone`: not tried again on it). For each that repaired a refused edit,
    the optimizer's original proposal goes in too, linked to its repair: proposed again, it is
    dropped before ranking instead of paying the repair and the gate once more."""
    for edit in edits:
        skill = on.hash if edit in alone else None
        gate = RejectedEdit(
            edit=edit, before=decision.baseline, after=decision.candidate, skill=skill, epoch=epoch, step=step
        )
        rejected.append(gate)
        for original, rewrite in repaired:
            if rewrite.key() == edit.key() and _normal(original) != _normal(edit):  # not the same edit twice
                why = f"its repair was rejected by the gate: {decision.reason}"
                rejected.append(
                    gate.model_copy(update={"edit": original, "stage": "repair", "repair": edit, "reason": why})
                )


def drop_remembered(edits: list[Edit], rejected: list[RejectedEdit], skill: Skill) -> tuple[list[Edit], list[str]]:
    """`edits` without those identical to a remembered refusal or to an edit the gate rejected on
    its own on this same `skill` text, and a line for each one dropped. Identical is after the rewrites that
    need no call (`quoted`) and with whitespace and case folded."""
    known = {_normal(r.edit): r for r in rejected if r.stage == "apply" or r.skill == skill.hash}
    kept = [e for e in edits if _normal(e) not in known]
    dropped = [f"{skip_line(e, '')}dropped before ranking, {_before(r)}" for e in edits if (r := known.get(_normal(e)))]
    kept, by_user = drop_rejected_by_user(kept, rejected, rewritten)
    return kept, dropped + by_user


def _normal(edit: Edit) -> str:
    return rewritten(edit).key()


def _before(r: RejectedEdit) -> str:
    at = f"(epoch {r.epoch + 1}, step {r.step + 1})"
    if r.stage == "apply":
        return f"refused before {at}: {r.reason}"
    score = f"selection {r.before or 0:.3f} → {r.after or 0:.3f}"
    if r.stage == "repair":
        return f"the gate rejected its repair alone on this same skill before {at}: {score}"
    return f"the gate rejected it alone on this same skill before {at}: {score}"


HELD_BACK = "held back before ranking"  # the step record's words for an edit on too few trajectories


def usable(
    edits: list[Edit], rejected: list[RejectedEdit], min_support: int, skill: Skill
) -> tuple[list[Edit], list[str]]:
    """`edits` without those refused or rejected before (`drop_remembered`) and those resting on
    fewer distinct trajectories than `min_support`, with a line for each one held back."""
    kept, dropped = drop_remembered(edits, rejected, skill)
    dropped += [
        f"{skip_line(e, '')}{HELD_BACK}: it rests on {e.support} distinct trajectory(ies), "
        f"min_support is {min_support} (copies of one reply count once)"
        for e in kept
        if e.support < min_support
    ]
    return [e for e in kept if e.support >= min_support], dropped


def _said(edit: Edit) -> set[str]:
    """What an edit says: the lines it adds, or, for a deletion, the lines it removes (marked)."""
    if edit.op == "delete":
        return {"-" + _fold(line) for line in (edit.target or "").splitlines() if line.strip()}
    return {_fold(line) for line in (edit.content or "").splitlines() if line.strip()}


def _fold(line: str) -> str:
    return folded(_LIST_MARKER.sub("", line.strip(), count=1))


def drop_rejected_by_user(
    edits: list[Edit], rejected: list[RejectedEdit], normal: Callable[[Edit], Edit]
) -> tuple[list[Edit], list[str]]:
    """`edits` without those that say only what the user rejected (`normal`: the rewrite an edit
    gets before it is applied), and a line for each one dropped."""
    said: dict[str, RejectedEdit] = {}
    for r in rejected:
        if r.stage == "user":
            for line in _said(r.edit):
                said.setdefault(line, r)
    kept: list[Edit] = []
    dropped: list[str] = []
    for edit in edits:
        lines = _said(normal(edit))
        if lines and lines <= said.keys():
            dropped.append(
                f"{edit.op} {edit.target or edit.content!r}: dropped before ranking, {said[min(lines)].reason}"
            )
        else:
            kept.append(edit)
    return kept, dropped
