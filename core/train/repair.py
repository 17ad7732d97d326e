"""Landing a step's edits: apply them, and repair what the bounded-edit rules refused.

    land()             apply the selected edits; when some are refused, ONE repair call (role
                       "repair") shows the optimizer each refused edit with the exact reason and
                       the skill's numbered lines; its rewrites pass the same safety screen and the
                       same bounded-edit rules (never looser), in the room the first pass left.
                       A refused edit whose rewrites are all refused again gets the concrete
                       rewrite a refusal names (`named_fix`: the rewrite's refusal first, else the
                       edit's own), through the same screens and rules, before it is remembered;
                       a rewrite or fix in the words of an edit the memory holds (refused, or
                       applied and not followed by the target) is held back like a proposal

The rewrites that need no call (a bare heading quoted, a literal output line made a rule, a
whole-skill replace reduced to the lines it adds or changes) are in core/train/literals.py,
core/train/quoting.py and core/train/reduce.py: a refused edit they rewrite is not shown to the
repair call; what is still refused goes into the rejected-edit memory, core/train/memory.py.
A malformed repair reply, or a rewrite that is not a usable edit, is recorded as an unusable
reply and the step goes on with what already applied. A budget reached during the repair raises
`BudgetExceeded` like every call, and the run stops cleanly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from skillsleep.core.document.folder import SkillFolder
from skillsleep.core.document.skill import Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import data_block, describe_edit, render
from skillsleep.core.models.replies import Lenient, Reply, Text, Unfit
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.privacy.safety import screen_all
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Edit, EditOp, Message, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.edits import EditLimits, EditResult, apply_edits, named_fix
from skillsleep.core.train.folder_context import folder_section
from skillsleep.core.train.literals import quoted
from skillsleep.core.train.quoting import Demands, quote_one
from skillsleep.core.train.reduce import reduced
from skillsleep.core.train.reflect import Finding, as_edit

REPLY_TOKENS = 1024  # a few one-line rewrites
_NUMBER = re.compile(r"^\s*\d+\| ")  # the line number the prompt shows before each skill line


class Rewrite(Reply):
    """One refused edit (by its number) rewritten so that the rules accept it."""

    edit: int
    op: EditOp
    target: Text = ""
    content: Text = ""


class RepairReply(Reply):
    """The optimizer's rewrites; a refused edit it cannot save is left out."""

    rewrites: list[Lenient[Rewrite]]


@dataclass(frozen=True)
class Landed:
    """Where a step's selected edits ended: the edited skill, the edits applied (the repaired ones
    and the named fixes among them), every refusal of the bounded-edit rules (the repair's rewrites
    and the named fixes marked `rewrite`),
    what is still refused (for the memory), the rewrites the safety screen refused, and what of the
    repair reply could not be used."""

    skill: Skill
    applied: list[Edit] = field(default_factory=list)
    skipped: list[RejectedEdit] = field(default_factory=list)
    moot: list[Edit] = field(default_factory=list)  # the selected edits the skill already holds, as written or repaired
    refused: list[RejectedEdit] = field(default_factory=list)
    screened: list[RejectedEdit] = field(default_factory=list)
    problems: list[UnusableReply] = field(default_factory=list)
    asked: list[RejectedEdit] = field(default_factory=list)  # the refusals the repair call was shown
    rewrites: list[Edit] = field(default_factory=list)  # its usable rewrites, screened or not
    fixes: list[Edit] = field(default_factory=list)  # the fixes refusals named, tried once the rewrites failed
    repaired: list[tuple[Edit, Edit]] = field(default_factory=list)  # (refused edit, its rewrite that applied)

    def record(self) -> dict[str, object]:
        """The repair round for the step's `repair.json`: what was asked, what came back, what landed."""
        return {
            "asked": self.asked,
            "rewrites": self.rewrites,
            "named_fixes": self.fixes,
            "screened": self.screened,
            "still_refused": self.refused,
        }


async def land(
    llm: LLM,
    skill: Skill,
    edits: list[Edit],
    limits: EditLimits,
    *,
    redactor: Redactor,
    on_repair: Callable[[int], None] = lambda _: None,
    refuse: Callable[[Edit], str | None] = lambda _: None,
    demands: Demands | None = None,
    folder: SkillFolder | None = None,
    known: Callable[[Edit], RejectedEdit | None] = lambda _: None,
) -> Landed:
    """Apply `edits`; when some are refused, make one repair call (`on_repair(count)` first) and
    apply its rewrites within what is left of `limits`; a refused edit whose rewrites were all
    refused again gets the fix its refusal names (`named_fix`), in what is left after them.
    `refuse` refuses an edit (or a rewrite) before the bounded-edit rules see it, with its reason
    (`answer_lines`); the literal lines `demands` names are quoted in a rewrite (`quote_one`). A
    rewrite or a fix `known` holds (the rejected-edit memory: `memory.recall`) is held back with
    that entry, as its proposal would have been before ranking. The repair call is shown the skill
    folder's other files (`folder`, redacted) as the reflection was."""
    held = [RejectedEdit(edit=e, stage="apply", reason=why) for e in edits if (why := refuse(e)) is not None]
    first = apply_edits(skill, [e for e in edits if not any(e is h.edit for h in held)], limits)
    refusals = [*held, *first.refusals()]
    if not refusals:
        return Landed(skill=first.skill, applied=first.applied, skipped=[*held, *first.skipped], moot=first.moot)
    quotes = {n: q for n, r in enumerate(refusals, 1) if (q := quoted(r.edit)) is not None}
    parts = {n: p for n, r in enumerate(refusals, 1) if n not in quotes and (p := reduced(first.skill, r.edit))}
    ask = [(n, r) for n, r in enumerate(refusals, 1) if n not in quotes and n not in parts]
    rewrites, problems = await _ask_for(llm, first.skill, ask, limits, on_repair, folder)
    rewrites += [(n, e) for n, edits in sorted(parts.items()) for e in edits]
    rewrites = [(n, quote_one(e, demands or Demands())) for n, e in rewrites] + sorted(quotes.items())
    second = _round(first.skill, rewrites, _room(limits, first.applied), refuse, known, redactor)
    fixes = _named_fixes(refusals, second, limits)
    room = _room(limits, first.applied, second.result.applied)
    third = _round(second.result.skill, fixes, room, refuse, known, redactor)
    later = (second, third)
    repaired = [(n, e) for r in later for n, e in r.safe if 0 < n <= len(refusals) and _has(r.result.applied, e)]
    fixed = {n for n, _ in repaired}
    moot = {n for r in later for n, e in r.safe if _has(r.result.moot, e)}
    return Landed(
        skill=third.result.skill,
        applied=[*first.applied, *second.result.applied, *third.result.applied],
        skipped=[*held, *first.skipped, *(s for r in later for s in r.skipped())],
        moot=[*first.moot, *(r.edit for n, r in enumerate(refusals, 1) if n in moot)],
        refused=[r for n, r in enumerate(refusals, 1) if n not in fixed]
        + [x.model_copy(update={"rewrite": True}) for r in later for x in r.result.refusals()],
        screened=[r for _, r in (*second.screened, *third.screened)],
        problems=problems,
        asked=[r for _, r in ask],
        rewrites=[e for _, e in rewrites],
        fixes=[e for _, e in fixes],
        repaired=[(refusals[n - 1].edit, e) for n, e in repaired],
    )


@dataclass(frozen=True)
class _Round:
    """One round of rewrites (numbered by the refused edit they rewrite): those that passed the
    screens, what the rules made of them, the ones `refuse` refused or the memory held back
    (`held`), and the ones the safety screen refused."""

    safe: list[tuple[int, Edit]]
    result: EditResult
    held: list[tuple[int, RejectedEdit]]
    screened: list[tuple[int, RejectedEdit]]

    def skipped(self) -> list[RejectedEdit]:
        return [r for _, r in self.held] + [r.model_copy(update={"rewrite": True}) for r in self.result.skipped]


def _round(
    skill: Skill,
    rewrites: list[tuple[int, Edit]],
    room: EditLimits,
    refuse: Callable[[Edit], str | None],
    known: Callable[[Edit], RejectedEdit | None],
    redactor: Redactor,
) -> _Round:
    """`rewrites` screened (`refuse`: an answer again stays refused; `known`: the memory holds it;
    the safety screen) and applied."""
    safe: list[tuple[int, Edit]] = []
    held: list[tuple[int, RejectedEdit]] = []
    screened: list[tuple[int, RejectedEdit]] = []
    for n, rewrite in rewrites:
        if (why := refuse(rewrite)) is not None:
            held.append((n, RejectedEdit(edit=rewrite, stage="apply", reason=why, rewrite=True)))
            continue
        if (entry := known(rewrite)) is not None:
            held.append((n, entry.model_copy(update={"rewrite": True})))
            continue
        ok, refused = screen_all([rewrite], redactor)
        safe += [(n, e) for e in ok]
        screened += [(n, r) for r in refused]
    return _Round(safe, apply_edits(skill, [e for _, e in safe], room), held, screened)


def _named_fixes(refusals: list[RejectedEdit], second: _Round, limits: EditLimits) -> list[tuple[int, Edit]]:
    """For each refused edit whose rewrites were all refused again (by `refuse`, the memory, the
    safety screen or the rules): the rewrite a refusal names, its rewrite's refusal first, else its own
    (`named_fix`), not tried yet: the first that applies alone, else the first."""
    again = [*second.held, *second.screened] + [
        (n, r) for n, e in second.safe for r in second.result.refusals() if r.edit is e
    ]
    landed = {n for n, e in second.safe if _has(second.result.applied, e) or _has(second.result.moot, e)}
    tried = {(n, e.key()) for n, e in second.safe} | {(n, r.edit.key()) for n, r in again}
    fixes: list[tuple[int, Edit]] = []
    for n, rewrite in again:
        if n in landed or not 0 < n <= len(refusals) or any(k == n for k, _ in fixes):
            continue
        named = [(r.edit, fix) for r in (rewrite, refusals[n - 1]) if (fix := named_fix(r.reason)) is not None]
        edits = [e for edit, fix in named if (n, (e := edit.model_copy(update={"content": fix})).key()) not in tried]
        one = limits.model_copy(update={"max_edits": 1})
        fits = [e for e in edits if apply_edits(second.result.skill, [e], one).applied]  # the first that applies
        fixes += [(n, (fits or edits)[0])] if edits else []
    return fixes


def _room(limits: EditLimits, *applied: list[Edit]) -> EditLimits:
    """`limits` with the count of edits already applied taken off."""
    return limits.model_copy(update={"max_edits": max(0, limits.max_edits - sum(map(len, applied)))})


def _has(edits: list[Edit], edit: Edit) -> bool:
    return any(edit is e for e in edits)


async def _ask_for(
    llm: LLM,
    skill: Skill,
    ask: list[tuple[int, RejectedEdit]],
    limits: EditLimits,
    on_repair: Callable[[int], None],
    folder: SkillFolder | None = None,
) -> tuple[list[tuple[int, Edit]], list[UnusableReply]]:
    """The repair call for the refusals in `ask` (numbered as in the step's refusals), when any."""
    if not ask:
        return [], []
    on_repair(len(ask))
    rewrites, problems = await _ask(llm, skill, [refusal for _, refusal in ask], limits, folder)
    return [(ask[i - 1][0] if 0 < i <= len(ask) else 0, e) for i, e in rewrites], problems


async def _ask(
    llm: LLM, skill: Skill, skipped: list[RejectedEdit], limits: EditLimits, folder: SkillFolder | None = None
) -> tuple[list[tuple[int, Edit]], list[UnusableReply]]:
    """The repair call: (number of the refused edit, its rewrite) for each usable rewrite."""
    messages = [Message(role="system", content=render("repair_system")), _user(skill, skipped, limits, folder)]
    try:
        reply = await llm.ask_model("repair", messages, RepairReply, max_tokens=REPLY_TOKENS, cache_system=True)
    except ParseError as exc:
        return [], [UnusableReply(role="repair", where="repair", error=f"malformed reply, nothing repaired: {exc}")]
    out: list[tuple[int, Edit]] = []
    notes: list[str] = []
    for i, item in enumerate(reply.rewrites, 1):
        edit, why = _as_rewrite(item, skipped)
        if edit is None:
            notes.append(f"rewrite {i} dropped: {why}")
        else:
            out.append((item.edit if isinstance(item, Rewrite) else 0, edit))
    return out, [UnusableReply(role="repair", where="repair", error=note) for note in notes]


def _as_rewrite(item: Rewrite | Unfit, skipped: list[RejectedEdit]) -> tuple[Edit | None, str]:
    """A rewrite → an edit that keeps the refused edit's kind, rationale and support."""
    if isinstance(item, Unfit):
        return None, item.error
    if not 1 <= item.edit <= len(skipped):
        return None, f"it names edit {item.edit}, but the refused edits are numbered 1 to {len(skipped)}"
    original = skipped[item.edit - 1].edit
    target, content = (_NUMBER.sub("", text, count=1) for text in (item.target, item.content))  # copied numbers
    finding = Finding(diagnosis=original.rationale, kind=original.kind, op=item.op, target=target, content=content)
    edit, why = as_edit(finding)
    kept = {"support": original.support, "evidence": original.evidence}
    return (edit.model_copy(update=kept) if edit else None), why


def _user(skill: Skill, skipped: list[RejectedEdit], limits: EditLimits, folder: SkillFolder | None) -> Message:
    numbered = "\n".join(f"{n:>3}| {line}" for n, line in enumerate(skill.editable_lines(), 1))
    refused = "\n\n".join(
        f"{describe_edit(r.edit, n)}\n  refused because: {r.reason}" for n, r in enumerate(skipped, 1)
    )
    content = render(
        "repair_user",
        folder=folder_section(folder),
        skill=data_block("SKILL", numbered),
        count=len(skipped),
        edits=refused,
        max_chars=limits.max_content_chars,
        max_lines=limits.max_content_lines,
    )
    return Message(role="user", content=content)
