"""Slow update (momentum): at an epoch boundary, compare the epoch's start and end skills on the
same tasks and write high-level guidance that keeps what improved and stops what regressed.

The guidance goes into the protected "slow-update" region, but not here: the trainer applies
it (`Skill.with_region("slow-update", guidance)`) and gates it like any other change.
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from pydantic import Field, StrictStr

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import as_bullets, bullet_lines, data_block, echoed_instruction, or_none, render
from skillsleep.core.models.replies import Lenient, Reply
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.privacy.safety import screen_all
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Edit, Message, Record, Rollout, Score, Task, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit

Outcome = Literal["improved", "regressed", "persistent_fail", "stable_success"]
OUTCOMES: tuple[Outcome, ...] = ("improved", "regressed", "persistent_fail", "stable_success")
# How many examples of each outcome the prompt shows: the costly mistakes get the most room.
EXAMPLES: dict[Outcome, int] = {"regressed": 3, "persistent_fail": 3, "improved": 2, "stable_success": 1}
RESPONSE_CHARS = 800
# A guidance line that echoes the skill's structure rather than saying what to do: a region marker
# (with or without its comment, any case: `Skillsleep:appendix:begin`), a heading, a region's own
# title, a code fence or a frontmatter fence.
_STRUCTURE = re.compile(
    r"<!--|-->|skillsleep:\s*(?:slow-update|appendix)|^#{1,6}(?:\s|$)|^(?:`{3}|~{3}|-{3,}\s*$)"
    r"|^\W*(?:guidance from earlier epochs|reminders)\W*$"
    r"|^<<<|>>>$|^(?:-{3}|\+{3,})\s*(?:before|after)\s*$",  # the prompt's data fences, the diff's file lines
    re.IGNORECASE,
)
_STRUCTURE_WHY = (
    "a guidance line says what to do; it may not echo the skill's region markers, headings or fences, "
    "nor the prompt's data fences or diff headers"
)
_ECHO_WHY = "a guidance line says what the agent should do; it may not repeat the optimizer's own instructions"
# A line ending in one of these was cut off mid-sentence ("… It does not"): no rule ends that way.
_DANGLING = frozenset(
    {
        *("a", "an", "the", "and", "or", "but", "nor", "to", "of", "at", "for", "from", "with", "into", "than"),
        *("that", "which", "whose", "when", "where", "if", "is", "are", "was", "were", "not", "can", "could"),
        *("should", "would", "will", "must", "may", "might", "its", "their", "your", "every", "each"),
    }
)
_DANGLING_MARKS = frozenset(",;:(-–—/&")
_CUT_OFF_WHY = "the line stops mid-sentence; a guidance line must be a whole rule"


class GuidanceReply(Reply):
    """The optimizer's guidance lines (a reply without any keeps the old guidance)."""

    guidance: list[Lenient[StrictStr]] = Field(default_factory=list)


def classify(before: Score, after: Score) -> Outcome:
    """How a task fared from the old skill to the new one, by hard score (1 = pass)."""
    passed_before, passed_after = before.hard >= 1.0, after.hard >= 1.0
    if passed_before:
        return "stable_success" if passed_after else "regressed"
    return "improved" if passed_after else "persistent_fail"


class Comparison(Record):
    """One task run with the epoch's start skill (before) and its end skill (after)."""

    task: Task
    before: Rollout
    after: Rollout
    outcome: Outcome


class SlowUpdateResult(Record):
    """New guidance ("- " bullet lines), the outcome counts, the reply when it could not be used (the
    old guidance is kept then), and the guidance lines the safety screen refused (redacted)."""

    guidance: str
    counts: dict[str, int] = Field(default_factory=dict)
    problem: UnusableReply | None = None
    refused: list[RejectedEdit] = Field(default_factory=list)


async def slow_update(
    llm: LLM,
    previous: Skill,
    current: Skill,
    comparisons: list[Comparison],
    *,
    max_lines: int = 8,
    redactor: Redactor | None = None,
) -> SlowUpdateResult:
    """Ask the optimizer (role "slow_update") for updated guidance; the old one on failure. Each
    guidance line goes into the skill, so each is screened like an edit (`screen_all`)."""
    old = current.region("slow-update")
    counts: dict[str, int] = {outcome: sum(1 for c in comparisons if c.outcome == outcome) for outcome in OUTCOMES}
    if not comparisons:
        return SlowUpdateResult(guidance=old, counts=counts)
    user = render(
        "slow_update_user",
        diff=_diff(previous, current),
        total=len(comparisons),
        counts="\n".join(f"- {outcome}: {n}" for outcome, n in counts.items()),
        examples=_examples(comparisons),
        guidance=or_none(old),
        max_lines=max_lines,
    )
    messages = [Message(role="system", content=render("slow_update_system")), Message(role="user", content=user)]
    try:
        reply = await llm.ask_model("slow_update", messages, GuidanceReply, cache_system=True)
    except ParseError as exc:
        return SlowUpdateResult(
            guidance=old, counts=counts, problem=_kept(f"malformed reply, old guidance kept: {exc}")
        )
    lines = bullet_lines(reply.guidance, max_lines=max_lines)
    if not lines:
        problem = _kept("the reply held no guidance lines, old guidance kept")
        return SlowUpdateResult(guidance=old, counts=counts, problem=problem)
    edits = [Edit(op="add", content=line, rationale="slow update guidance") for line in lines]
    verdicts = [(e, unfit_guidance(e)) for e in edits]
    safe, refused = screen_all([e for e, unfit in verdicts if unfit is None], redactor)
    refused = [unfit for _, unfit in verdicts if unfit is not None] + refused
    if not safe:
        problem = _kept("every guidance line was refused (see the refusals), old guidance kept")
        return SlowUpdateResult(guidance=old, counts=counts, problem=problem, refused=refused)
    return SlowUpdateResult(guidance=as_bullets([e.content or "" for e in safe]), counts=counts, refused=refused)


def unfit_guidance(edit: Edit) -> RejectedEdit | None:
    """Why a guidance line may not go into the region: it echoes the skill's structure (a region
    marker, a heading, a region's title, a code fence) or the prompt's (a data fence, the diff's
    file lines), repeats the slow update's own instructions (five words or more of them in a row),
    or is cut off mid-sentence; None when fit."""
    line = edit.content or ""
    echo = _STRUCTURE.search(line)
    if echo is not None:
        return RejectedEdit(
            edit=edit, stage="safety", rule="structure", reason=_STRUCTURE_WHY, matched=echo.group(0) or line
        )
    if echoed_instruction(line, "slow_update_system", "slow_update_user"):
        return RejectedEdit(edit=edit, stage="safety", rule="prompt-echo", reason=_ECHO_WHY, matched=line[:80])
    words = re.findall(r"[\w']+|[^\w\s]", line)
    if words and (words[-1].casefold() in _DANGLING or words[-1] in _DANGLING_MARKS):
        return RejectedEdit(edit=edit, stage="safety", rule="cut-off", reason=_CUT_OFF_WHY, matched=line[-40:])
    return None


def _kept(error: str) -> UnusableReply:
    return UnusableReply(role="slow_update", where="slow update", error=error)


def _diff(previous: Skill, current: Skill) -> str:
    diff = difflib.unified_diff(previous.text.splitlines(), current.text.splitlines(), "before", "after", lineterm="")
    text = "\n".join(diff)
    return data_block("DIFF", text) if text else "(the skill did not change)"


def _examples(comparisons: list[Comparison]) -> str:
    blocks: list[str] = []
    for outcome, limit in EXAMPLES.items():
        chosen = [c for c in comparisons if c.outcome == outcome][:limit]
        blocks += [_describe(c) for c in chosen]
    return "\n\n".join(blocks) or "(none)"


def _describe(c: Comparison) -> str:
    task = data_block("TASK", c.task.prompt, limit=RESPONSE_CHARS)
    parts = [f"### {c.outcome} (task {c.task.id})", "Task prompt:", task]
    for label, rollout in (("before", c.before), ("after", c.after)):
        score = rollout.score
        parts += [
            f"Response {label} (hard score {score.hard:g}, soft score {score.soft:.2f}):",
            data_block(f"RESPONSE_{label.upper()}", _run_text(rollout), limit=RESPONSE_CHARS),
            f"Judge feedback {label}:",
            "\n".join(f"- {line}" for line in score.feedback) or "- (no feedback lines)",
        ]
    return "\n".join(parts)


def _run_text(rollout: Rollout) -> str:
    run = rollout.run
    return f"{run.response}\n[agent error] {run.error}" if run.error else run.response
