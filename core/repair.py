"""Landing a step's edits: apply them, repair what the bounded-edit rules refused, remember the rest.

    land()             apply the selected edits; when some are refused, ONE repair call (role
                       "repair") shows the optimizer each refused edit with the exact reason and
                       the skill's numbered lines; its rewrites pass the same safety screen and the
                       same bounded-edit rules (never looser), in the room the first pass left
    quoted()           an added line that is only a bare heading (`## Summary`) is rewritten without
                       a call into the rule the refusal asks for, the heading quoted in backticks
    answer_lines()     an added line that is one batch task's expected answer (`ANSWER: True` where other
                       tasks expect False) is refused before it is applied, so the repair asks for the rule
    literal_rules()    an added line that is only a literal output template (`ANSWER: <number>`, a JSON
                       shape) is rewritten without a call into the instruction quoting it, before ranking
    remember_refused() what is still refused goes into the rejected-edit memory (stage "apply")
    remember_gated()   the edits of a candidate the gate rejected go into it too (stage "gate"), and for a
                       repaired one the optimizer's original proposal, linked to its repair (stage "repair")
    drop_remembered()  a new proposal identical to a remembered refusal, or to an edit the gate rejected
                       on its own on the same skill text (or the proposal it was repaired from), or one
                       saying only what the user rejected (core/rejections.py), is dropped before ranking
    usable()           that, and a proposal resting on fewer distinct trajectories than
                       `[train] min_support` is held back before ranking

A malformed repair reply, or a rewrite that is not a usable edit, is recorded as an unusable
reply and the step goes on with what already applied. A budget reached during the repair raises
`BudgetExceeded` like every call, and the run stops cleanly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from skillsleep.core.answers import is_answer_line, states_answer
from skillsleep.core.edits import EditLimits, apply_edits
from skillsleep.core.errors import ParseError
from skillsleep.core.llm import LLM
from skillsleep.core.prompts import data_block, describe_edit, render
from skillsleep.core.records import Edit, EditOp, GateDecision, Message, RejectedEdit, Task, UnusableReply
from skillsleep.core.redact import Redactor
from skillsleep.core.reflect import Finding, as_edit
from skillsleep.core.rejections import drop_rejected_by_user
from skillsleep.core.replies import Lenient, Reply, Text, Unfit
from skillsleep.core.safety import Refusal, screen_all
from skillsleep.core.skill import Skill

REPLY_TOKENS = 1024  # a few one-line rewrites
_NUMBER = re.compile(r"^\s*\d+\| ")  # the line number the prompt shows before each skill line
_BARE_HEADING = re.compile(r"^#{1,6}\s+\S")  # a markdown heading line, as an edit's whole content
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
# a literal output line: a short label, a colon and only a placeholder (`ANSWER: <number>`, `Verdict: ...`)
_LABEL_LINE = re.compile(
    r"^(?P<label>[A-Za-z][\w()/-]*(?: [\w()/-]+){0,2}):\s*"  # up to three words, then a colon
    r"(?:<[^<>]+>|\[[^\[\]]+\]|\{[^{}]*\}|\.\.\.|…)$"  # and only a placeholder: <number>, [value], {x}, ...
)
_JSON_SHAPE = re.compile(r'^(?:\{\s*"[^"]+"\s*:.*\}|\[\s*\{\s*"[^"]+"\s*:.*\}\s*\])$')  # {"answer": <number>}
# a label's first word that makes the line an instruction, not a literal ("Write ANSWER: <n>")
_VERB = re.compile(
    r"(?:add|always|begin|end|finish|give|include|never|output|print|put|"
    r"reply|respond|return|say|show|start|state|use|write)\b",
    re.IGNORECASE,
)
_VERBATIM = frozenset({"contains", "starts_with", "ends_with"})
_AT_END = re.compile(r"\b(?:end|ends|ending|last|final|finish)\b", re.IGNORECASE)
_AT_START = re.compile(r"\b(?:start|starts|begin|begins|first|open|opens)\b", re.IGNORECASE)


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
    among them), one line per refusal, what is still refused (for the memory), the rewrites the
    safety screen refused, and what of the repair reply could not be used."""

    skill: Skill
    applied: list[Edit] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    moot: list[Edit] = field(default_factory=list)  # the selected edits the skill already holds, as written or repaired
    refused: list[tuple[Edit, str]] = field(default_factory=list)
    screened: list[Refusal] = field(default_factory=list)
    problems: list[UnusableReply] = field(default_factory=list)
    asked: list[tuple[Edit, str]] = field(default_factory=list)  # the refusals the repair call was shown
    rewrites: list[Edit] = field(default_factory=list)  # its usable rewrites, screened or not
    repaired: list[tuple[Edit, Edit]] = field(default_factory=list)  # (refused edit, its rewrite that applied)

    def record(self) -> dict[str, object]:
        """The repair round for the step's `repair.json`: what was asked, what came back, what landed."""
        return {
            "asked": [{"edit": e, "reason": why} for e, why in self.asked],
            "rewrites": self.rewrites,
            "screened": self.screened,
            "still_refused": [{"edit": e, "reason": why} for e, why in self.refused],
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
) -> Landed:
    """Apply `edits`; when some are refused, make one repair call (`on_repair(count)` first) and
    apply its rewrites within what is left of `limits`. `refuse` refuses an edit (or a rewrite)
    before the bounded-edit rules see it, with its reason (`answer_lines`)."""
    held = [(e, why) for e in edits if (why := refuse(e)) is not None]
    first = apply_edits(skill, [e for e in edits if not any(e is h for h, _ in held)], limits)
    first.skipped[:0] = held
    lines = [_skip_line(e, why) for e, why in first.skipped]
    refusals = first.refusals()
    if not refusals:
        return Landed(skill=first.skill, applied=first.applied, skipped=lines, moot=first.moot)
    quotes = {n: q for n, (e, _) in enumerate(refusals, 1) if (q := quoted(e)) is not None}
    ask = [(n, refusal) for n, refusal in enumerate(refusals, 1) if n not in quotes]
    rewrites, problems = await _ask_for(llm, first.skill, ask, limits, on_repair)
    rewrites = [(n, literal_rule(e) or e) for n, e in rewrites]
    rewrites += sorted(quotes.items())
    safe: list[tuple[int, Edit]] = []
    screened: list[Refusal] = []
    for n, rewrite in rewrites:
        if (why := refuse(rewrite)) is not None:  # an answer again: its edit stays refused
            lines.append(f"repair: {_skip_line(rewrite, why)}")
            continue
        ok, refused = screen_all([rewrite], redactor)
        safe += [(n, e) for e in ok]
        screened += refused
    room = limits.model_copy(update={"max_edits": max(0, limits.max_edits - len(first.applied))})
    second = apply_edits(first.skill, [e for _, e in safe], room)
    repaired = [(n, e) for n, e in safe if 0 < n <= len(refusals) and any(e is a for a in second.applied)]
    fixed = {n for n, _ in repaired}
    moot = {n for n, e in safe if any(e is m for m in second.moot)}
    still = [(e, why) for n, (e, why) in enumerate(refusals, 1) if n not in fixed]
    return Landed(
        skill=second.skill,
        applied=[*first.applied, *second.applied],
        skipped=lines + [f"repair: {_skip_line(e, why)}" for e, why in second.skipped],
        moot=[*first.moot, *(e for n, (e, _) in enumerate(refusals, 1) if n in moot)],
        refused=still + second.refusals(),
        screened=screened,
        problems=problems,
        asked=[refusal for _, refusal in ask],
        rewrites=[e for _, e in rewrites],
        repaired=[(refusals[n - 1][0], e) for n, e in repaired],
    )


def quoted(edit: Edit) -> Edit | None:
    """An added line that is nothing but a bare heading, rewritten as the rule the refusal asks for:
    the heading quoted in backticks as text every reply must include. A small optimizer often
    writes the literal the reply must contain instead of the rule (even when told how to rewrite
    it); this rewrite costs no call, stays one plain line, and still has to pass the gate. None for
    any other edit."""
    content = (edit.content or "").strip()
    if edit.op != "add" or "\n" in content or "`" in content or not _BARE_HEADING.match(content):
        return None
    return edit.model_copy(update={"content": f"Every reply must include the heading `{content}`."})


def required_lines(tasks: Iterable[Task]) -> frozenset[str]:
    """The texts every one of `tasks` requires verbatim (a `contains`, `starts_with` or `ends_with`
    check of each judge): a line the reply must hold, whatever the task."""
    sets = [
        {c.value for c in t.judge.checks if c.type in _VERBATIM and isinstance(c.value, str) and "\n" not in c.value}
        for t in tasks
    ]
    return frozenset(set.intersection(*sets)) if sets else frozenset()


def answer_lines(tasks: Iterable[Task]) -> Callable[[Edit], str | None]:
    """Why an added (or replacing) line is refused before it is applied: it is, all of it, the
    expected answer of some of `tasks` and not of the others (`ANSWER: True` where half the batch
    expects False), or states one in the answer's form outside backticks (`Answer at once.
    ANSWER: True`). A small optimizer copies the failures' expected answer into the skill, which
    can only trade some tasks for others; the repair call is asked for the rule instead. None for
    any other edit, and when fewer than two tasks have an expected answer."""
    judged = [t.judge for t in tasks if t.judge.answer is not None]

    def refuse(edit: Edit) -> str | None:
        content = _LIST_MARKER.sub("", (edit.content or "").strip(), count=1)
        if edit.op == "delete" or "\n" in content or len(judged) < 2:
            return None
        hits = sum(is_answer_line(judge, content) or states_answer(judge, content) for judge in judged)
        if not 0 < hits < len(judged):
            return None
        return (
            f"it is the expected answer of {hits} of this batch's {len(judged)} tasks, and the others expect "
            "another: a skill line must hold for every task. Write instead the rule or reasoning step that "
            "gets each task's own answer right"
        )

    return refuse


def literal_rule(edit: Edit, required: frozenset[str] = frozenset()) -> Edit | None:
    """An added line that is only a literal output template (a short label with a placeholder value
    such as `ANSWER: <number>` or `Verdict: ...`, or a JSON shape such as `{"answer": <number>}`),
    rewritten without a call into the instruction that quotes it: "End every reply with the line
    `ANSWER: <number>`." (the end or start when the edit's rationale says so, else "Every reply must
    include …"). A small optimizer writes the line the reply must contain instead of the rule, and
    the target model does not read a bare template as one. A label with a concrete value (one
    task's answer) or a line that reads as an instruction is not a template: None, as for any
    other edit — unless the line is one every task requires verbatim (`required`, from
    `required_lines`: "Signed-off-by: Sam <sam@example.com>" that every judge checks for)."""
    content = _LIST_MARKER.sub("", (edit.content or "").strip(), count=1)
    if edit.op != "add" or "\n" in content or "`" in content:
        return None
    label = _LABEL_LINE.match(content)
    if content in required or (label is not None and not _VERB.match(label.group("label"))):
        what = "the line"
    elif _JSON_SHAPE.match(content):
        what = "JSON shaped like"
    else:
        return None
    if _AT_END.search(edit.rationale):
        rule = f"End every reply with {what} `{content}`."
    elif _AT_START.search(edit.rationale):
        rule = f"Start every reply with {what} `{content}`."
    else:
        rule = f"Every reply must include {what} `{content}`."
    return edit.model_copy(update={"content": rule})


def literal_rules(edits: list[Edit], required: frozenset[str] = frozenset()) -> list[Edit]:
    """`edits` with each literal output line rewritten as the instruction quoting it (`literal_rule`)."""
    return [literal_rule(e, required) or e for e in edits]


async def _ask_for(
    llm: LLM,
    skill: Skill,
    ask: list[tuple[int, tuple[Edit, str]]],
    limits: EditLimits,
    on_repair: Callable[[int], None],
) -> tuple[list[tuple[int, Edit]], list[UnusableReply]]:
    """The repair call for the refusals in `ask` (numbered as in the step's refusals), when any."""
    if not ask:
        return [], []
    on_repair(len(ask))
    rewrites, problems = await _ask(llm, skill, [refusal for _, refusal in ask], limits)
    return [(ask[i - 1][0] if 0 < i <= len(ask) else 0, e) for i, e in rewrites], problems


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
    dropped = [
        f"{_skip_line(e, '')}dropped before ranking, {_before(r)}" for e in edits if (r := known.get(_normal(e)))
    ]
    kept, by_user = drop_rejected_by_user(kept, rejected, _rewritten)
    return kept, dropped + by_user


def _rewritten(edit: Edit) -> Edit:
    return quoted(edit) or literal_rule(edit) or edit


def _normal(edit: Edit) -> str:
    return _rewritten(edit).key()


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
        f"{_skip_line(e, '')}{HELD_BACK}: it rests on {e.support} distinct trajectory(ies), "
        f"min_support is {min_support} (copies of one reply count once)"
        for e in kept
        if e.support < min_support
    ]
    return [e for e in kept if e.support >= min_support], dropped


async def _ask(
    llm: LLM, skill: Skill, skipped: list[tuple[Edit, str]], limits: EditLimits
) -> tuple[list[tuple[int, Edit]], list[UnusableReply]]:
    """The repair call: (number of the refused edit, its rewrite) for each usable rewrite."""
    messages = [Message(role="system", content=render("repair_system")), _user(skill, skipped, limits)]
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


def _as_rewrite(item: Rewrite | Unfit, skipped: list[tuple[Edit, str]]) -> tuple[Edit | None, str]:
    """A rewrite → an edit that keeps the refused edit's kind, rationale and support."""
    if isinstance(item, Unfit):
        return None, item.error
    if not 1 <= item.edit <= len(skipped):
        return None, f"it names edit {item.edit}, but the refused edits are numbered 1 to {len(skipped)}"
    original = skipped[item.edit - 1][0]
    target, content = (_NUMBER.sub("", text, count=1) for text in (item.target, item.content))  # copied numbers
    finding = Finding(diagnosis=original.rationale, kind=original.kind, op=item.op, target=target, content=content)
    edit, why = as_edit(finding)
    kept = {"support": original.support, "evidence": original.evidence}
    return (edit.model_copy(update=kept) if edit else None), why


def _user(skill: Skill, skipped: list[tuple[Edit, str]], limits: EditLimits) -> Message:
    numbered = "\n".join(f"{n:>3}| {line}" for n, line in enumerate(skill.editable_lines(), 1))
    refused = "\n\n".join(f"{describe_edit(e, n)}\n  refused because: {why}" for n, (e, why) in enumerate(skipped, 1))
    content = render(
        "repair_user",
        skill=data_block("SKILL", numbered),
        count=len(skipped),
        edits=refused,
        max_chars=limits.max_content_chars,
        max_lines=limits.max_content_lines,
    )
    return Message(role="user", content=content)


def _skip_line(edit: Edit, why: str) -> str:
    """The step record's line for a refused edit: what it tried, then why."""
    return f"{edit.op} {edit.target or edit.content!r}: {why}"
