"""Ranking (the clip step of the loop): rank the merged edits and keep at most `budget` of them.

`budget` is the textual learning rate of this step (see `schedule.py`). When the edits fit in
the budget, no model is asked: they are ordered by support. Otherwise the optimizer (role
"rank") orders them by expected impact; its order is validated, never trusted blindly. In
autonomous mode the optimizer also proposes the next step's budget, clamped to `bounds`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictFloat, StrictInt, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import data_block, describe_edit, editable_text, render
from skillsleep.core.models.replies import Lenient, Reply, Unfit, item_numbers, raw
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Edit, Message, Record, UnusableReply

# A whole number is asked for; a number with a fraction is taken too, rounded.
WholeNumber = Annotated[StrictInt | StrictFloat, WithJsonSchema({"type": "integer"})]


class RankReply(Reply):
    """The optimizer's order of the edits (numbered from 1), most impact first."""

    order: list[Lenient[StrictInt]]


class AutonomousRankReply(RankReply):
    """The order, and how many edits the next step should apply."""

    next_budget: Lenient[WholeNumber | SkipJsonSchema[None]] = None


class Selection(Record):
    """The edits to apply (`selected`), the full ranking, and the proposed next budget."""

    selected: list[Edit]
    ranked: list[Edit]
    next_budget: int | None = None
    problems: list[UnusableReply] = Field(default_factory=list)


def by_support(edits: list[Edit]) -> list[Edit]:
    """Edits ordered by support, highest first; equal support keeps the given order."""
    return sorted(edits, key=lambda e: -e.support)


async def rank_and_clip(
    llm: LLM,
    skill: Skill,
    edits: list[Edit],
    *,
    budget: int,
    autonomous: bool = False,
    bounds: tuple[int, int] = (1, 8),
) -> Selection:
    """Rank `edits` (by the optimizer when they exceed `budget` or in autonomous mode) and clip."""
    budget = max(0, budget)
    if not edits or (len(edits) <= budget and not autonomous):
        ranked = by_support(edits)
        return Selection(selected=ranked[:budget], ranked=ranked)
    messages = _messages(skill, edits, budget=budget, autonomous=autonomous, bounds=bounds)
    try:
        reply = await llm.ask_model(
            "rank", messages, AutonomousRankReply if autonomous else RankReply, cache_system=True
        )
    except ParseError as exc:
        ranked = by_support(edits)
        problem = UnusableReply(role="rank", where="rank", error=f"malformed reply, ranked by support: {exc}")
        return Selection(selected=ranked[:budget], ranked=ranked, problems=[problem])
    ranked, note = _validated_order(reply.order, edits)
    notes = [note]
    next_budget = None
    if isinstance(reply, AutonomousRankReply):
        next_budget, budget_note = _next_budget(reply.next_budget, bounds)
        notes.append(budget_note)
    problems = [UnusableReply(role="rank", where="rank", error="; ".join(n for n in notes if n))] if any(notes) else []
    return Selection(selected=ranked[:budget], ranked=ranked, next_budget=next_budget, problems=problems)


def _validated_order(order: list[int | Unfit], edits: list[Edit]) -> tuple[list[Edit], str]:
    """The optimizer's order (numbers from 1); invalid numbers ignored, missing edits appended
    by support. Returns the ranking and a note on what was ignored ('' when nothing was)."""
    numbers = item_numbers(order, len(edits))
    rest = by_support([e for i, e in enumerate(edits) if i not in numbers.indexes])
    ignored = ", ".join(map(repr, numbers.ignored))
    note = f"ignored invalid or repeated edit numbers {ignored}" if ignored else ""
    return [edits[i] for i in numbers.indexes] + rest, note


def _next_budget(value: float | Unfit | None, bounds: tuple[int, int]) -> tuple[int | None, str]:
    low, high = min(bounds), max(bounds)
    if value is None or isinstance(value, Unfit):
        return None, f"no usable next_budget ({raw(value)!r}); the schedule falls back to its maximum"
    return max(low, min(high, round(value))), ""


def _messages(
    skill: Skill, edits: list[Edit], *, budget: int, autonomous: bool, bounds: tuple[int, int]
) -> list[Message]:
    task = f"Rank all {len(edits)} edits. The first {budget} of your order will be applied in this step."
    if autonomous:
        low, high = min(bounds), max(bounds)
        task += (
            f' Also give "next_budget": how many edits the next step should apply, a whole number from {low} to'
            f" {high}. Choose more when the skill still has clear gaps, fewer when it is close to right and"
            " further changes risk breaking what works."
        )
    user = render(
        "rank_user",
        skill=data_block("SKILL", editable_text(skill)),
        count=len(edits),
        edits="\n\n".join(describe_edit(edit, n) for n, edit in enumerate(edits, 1)),
        task=task,
    )
    return [Message(role="system", content=render("rank_system")), Message(role="user", content=user)]
