"""The memory of refused and rejected edits, and what it keeps out of a step.

remember_refused()        what the bounded-edit rules still refuse after the repair goes into the
                          rejected-edit memory (stage "apply")
remember_gated()          the edits of a candidate the gate rejected go into it too (stage "gate"), and
                          for a repaired one the optimizer's original proposal, linked to its repair
                          (stage "repair"); an edit the target did not follow (`unfollowed`: gated
                          alone, it moved no held-out task) is stage "ignored" instead, and so is
                          the proposal it was repaired from
drop_remembered()         a new proposal identical to a remembered refusal, to an edit the target
                          ignored (on any skill text: the same words would not move it), or to an
                          edit the gate rejected on its own on the same skill text (or the proposal it
                          was repaired from), is dropped before ranking (stage "memory" in `skipped`)
drop_rejected_by_user()   so is one that says only what the user rejected (stage "user", written by
                          core/night/rejections.py): every line it would add, or every line it would
                          delete, is in such a change, compared after the rewrites that need no call
                          and with whitespace, case and a list marker folded (stage "user" in `skipped`)
recall()                  the same screen for one edit, for the repair's rewrites and the fixes
                          refusals name (core/train/repair.py): one the memory would drop as a
                          proposal is held back as a rewrite, with the same entry
usable()                  that, and a proposal resting on fewer distinct trajectories than
                          `[train] min_support` is held back before ranking (stage "support")

Every entry is a `RejectedEdit` (core/shared/rejected.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Edit, GateDecision, folded
from skillsleep.core.shared.rejected import DROPPED, HELD_BACK, IGNORED, NOT_FOLLOWED, REPAIR_HELD, RejectedEdit
from skillsleep.core.train.gate import untouched
from skillsleep.core.train.literals import rewritten

_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_CLOSING = re.compile(r"[.!;]+[ \t]*$", re.MULTILINE)  # a line's closing stop: not a word of it


def remember_refused(rejected: list[RejectedEdit], refused: list[RejectedEdit], *, epoch: int, step: int) -> None:
    """Add each still-refused edit (stage "apply") to the rejected-edit memory, placed at `epoch` and
    `step`, once."""
    known = {r.edit.key() for r in rejected if r.stage == "apply"}
    for r in refused:
        if r.edit.key() not in known:
            known.add(r.edit.key())
            rejected.append(r.model_copy(update={"epoch": epoch, "step": step}))


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
    ignored: Sequence[tuple[Edit, GateDecision]] = (),
) -> None:
    """Add `edits`, of a candidate the gate rejected on skill `on`, to the rejected-edit memory (with
    `on`'s hash when rejected `alone`: not tried again on it). For each that repaired a refused edit,
    the optimizer's original proposal goes in too, linked to its repair: proposed again, it is
    dropped before ranking instead of paying the repair and the gate once more. Those of `edits`
    the target did not follow (`ignored`, from `unfollowed`) go in as stage "ignored" with the
    decision on them alone (`remember_ignored`)."""
    for edit in edits:
        if tie := next((d for e, d in ignored if e == edit), None):
            remember_ignored(rejected, edit, tie, repaired=repaired, epoch=epoch, step=step)
            continue
        skill = on.hash if edit in alone else None
        gate = RejectedEdit(
            edit=edit,
            stage="gate",
            before=decision.baseline,
            after=decision.candidate,
            skill=skill,
            epoch=epoch,
            step=step,
        )
        rejected.append(gate)
        for original, rewrite in repaired:
            if rewrite.key() == edit.key() and _normal(original) != _normal(edit):  # not the same edit twice
                why = f"its repair was rejected by the gate: {decision.reason}"
                rejected.append(
                    gate.model_copy(update={"edit": original, "stage": "repair", "repair": edit, "reason": why})
                )


def unfollowed(gated: Sequence[tuple[list[Edit], GateDecision]]) -> list[tuple[Edit, GateDecision]]:
    """The edits of the gated candidates (`gated`: each one's applied edits and the gate's decision)
    that the target did not follow, each with that decision: an add or a replace gated alone, in a
    candidate the gate rejected without moving a held-out task (`core/train/gate.untouched`). In
    company a tie proves nothing of each edit (one can mask another: "Reply in French only." beside
    a format rule), and a deletion that changed nothing is no instruction ignored."""
    return [
        (edits[0], decision)
        for edits, decision in gated
        if len(edits) == 1 and edits[0].op != "delete" and untouched(decision)
    ]


def remember_ignored(
    rejected: list[RejectedEdit],
    edit: Edit,
    decision: GateDecision,
    *,
    repaired: Sequence[tuple[Edit, Edit]],
    epoch: int,
    step: int,
) -> None:
    """Add `edit`, applied in a candidate that moved no held-out task (`decision`), to the memory as
    stage "ignored", and the proposal it was repaired from (if any) linked to it: neither is tried
    again in the same words, on any skill text."""
    why = f"{IGNORED}: none of the {len(decision.deltas)} held-out task(s) scored differently"
    entry = RejectedEdit(
        edit=edit,
        stage="ignored",
        reason=why,
        before=decision.baseline,
        after=decision.candidate,
        epoch=epoch,
        step=step,
    )
    rejected.append(entry)
    for original, rewrite in repaired:
        if rewrite.key() == edit.key() and _normal(original) != _normal(edit):  # not the same edit twice
            rejected.append(
                entry.model_copy(update={"edit": original, "repair": edit, "reason": f"its repair was {why}"})
            )


def drop_remembered(
    edits: list[Edit], rejected: list[RejectedEdit], skill: Skill
) -> tuple[list[Edit], list[RejectedEdit]]:
    """`edits` without those identical to a remembered refusal, to an edit the target ignored, or to
    an edit the gate rejected on its own on this same `skill` text, and each one dropped (stage
    "memory", or "user"). Identical is after the rewrites that need no call (`quoted`) and with
    whitespace, case and each line's closing stop folded; an add is its words, wherever it would go."""
    known = {_normal(r.edit): r for r in rejected if r.stage in ("apply", "ignored") or r.skill == skill.hash}
    kept = [e for e in edits if _normal(e) not in known]
    dropped = [
        RejectedEdit(edit=e, stage="memory", reason=f"{DROPPED}, {_before(r)}")
        for e in edits
        if (r := known.get(_normal(e)))
    ]
    kept, by_user = drop_rejected_by_user(kept, rejected, rewritten)
    return kept, dropped + by_user


def recall(rejected: list[RejectedEdit], skill: Skill) -> Callable[[Edit], RejectedEdit | None]:
    """A screen for one edit on `skill`: the entry `drop_remembered` would drop it with as a proposal
    (said of a rewrite: "held back from the repair, …"), or None. The repair's rewrites and named
    fixes pass it (core/train/repair.py), so words the memory holds never reach the gate that way."""

    def held(edit: Edit) -> RejectedEdit | None:
        _, dropped = drop_remembered([edit], rejected, skill)
        return (
            dropped[0].model_copy(update={"reason": dropped[0].reason.replace(DROPPED, REPAIR_HELD, 1)})
            if dropped
            else None
        )

    return held


def _normal(edit: Edit) -> str:
    """An edit's identity in the memory: an add is its words wherever it goes (its anchor only places
    it, and an unknown anchor puts it at the end), so an ignored line proposed again after another
    line, or as a reminder note, is the same words; a replace or a delete is also the line it changes.
    A line's closing full stop (or `!`, `;`) is no word: the 1.5B optimizer proposed an ignored rule
    again without its full stop, and it was gated a second time."""
    edit = rewritten(edit)
    words = _CLOSING.sub("", edit.content or "")
    return edit.model_copy(update={"content": words, "target": None if edit.op == "add" else edit.target}).key()


def _before(r: RejectedEdit) -> str:
    at = f"({r.where()})"
    if r.stage == "apply":
        return f"refused before {at}: {r.reason}"
    if r.stage == "ignored":
        which = "its repair was applied" if r.repair else "applied"
        return f"{which} before {at} and {NOT_FOLLOWED}: the same words would not move it either"
    score = f"selection {r.before or 0:.3f} → {r.after or 0:.3f}"
    if r.stage == "repair":
        return f"the gate rejected its repair alone on this same skill before {at}: {score}"
    return f"the gate rejected it alone on this same skill before {at}: {score}"


def usable(
    edits: list[Edit], rejected: list[RejectedEdit], min_support: int, skill: Skill
) -> tuple[list[Edit], list[RejectedEdit]]:
    """`edits` without those refused or rejected before (`drop_remembered`) and those resting on
    fewer distinct trajectories than `min_support` (stage "support"), with each one held back."""
    kept, dropped = drop_remembered(edits, rejected, skill)
    dropped += [
        RejectedEdit(
            edit=e,
            stage="support",
            reason=f"{HELD_BACK}: it rests on {e.support} distinct trajectory(ies), "
            f"min_support is {min_support} (copies of one reply count once)",
        )
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
) -> tuple[list[Edit], list[RejectedEdit]]:
    """`edits` without those that say only what the user rejected (`normal`: the rewrite an edit
    gets before it is applied), and each one dropped (stage "user", with the proposal it repeats)."""
    said: dict[str, RejectedEdit] = {}
    for r in rejected:
        if r.stage == "user":
            for line in _said(r.edit):
                said.setdefault(line, r)
    kept: list[Edit] = []
    dropped: list[RejectedEdit] = []
    for edit in edits:
        lines = _said(normal(edit))
        if lines and lines <= said.keys():
            user = said[min(lines)]
            why = f"{DROPPED}, {user.reason}"
            dropped.append(RejectedEdit(edit=edit, stage="user", proposal=user.proposal, reason=why))
        else:
            kept.append(edit)
    return kept, dropped
