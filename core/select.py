"""Select (gradient clipping): rank the merged edits and keep at most `budget` of them.

`budget` is the textual learning rate of this step (see `schedule.py`). When the edits fit in
the budget, no model is asked: they are ordered by support. Otherwise the optimizer (role
"rank") orders them by expected impact; its order is validated, never trusted blindly. In
autonomous mode the optimizer also proposes the next step's budget, clamped to `bounds`.
"""

from __future__ import annotations

from typing import Any

from skillsleep.core.errors import ParseError
from skillsleep.core.llm import LLM
from skillsleep.core.prompts import data_block, describe_edit, editable_text, render
from skillsleep.core.records import Edit, Message, Record
from skillsleep.core.skill import Skill


class Selection(Record):
    """The edits to apply (`selected`), the full ranking, and the proposed next budget."""

    selected: list[Edit]
    ranked: list[Edit]
    next_budget: int | None = None
    failure: str | None = None


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
        reply = await llm.ask_json("rank", messages, _schema(autonomous), cache_system=True)
    except ParseError as exc:
        ranked = by_support(edits)
        failure = f"rank: malformed reply, ranked by support: {exc}"
        return Selection(selected=ranked[:budget], ranked=ranked, failure=failure)
    ranked, problem = _validated_order(reply.get("order"), edits)
    next_budget = None
    if autonomous:
        next_budget, budget_problem = _next_budget(reply.get("next_budget"), bounds)
        problem = "; ".join(p for p in (problem, budget_problem) if p)
    failure = f"rank: {problem}" if problem else None
    return Selection(selected=ranked[:budget], ranked=ranked, next_budget=next_budget, failure=failure)


def _validated_order(order: object, edits: list[Edit]) -> tuple[list[Edit], str]:
    """The optimizer's order (numbers from 1); invalid numbers ignored, missing edits appended
    by support. Returns the ranking and a note on what was ignored ('' when nothing was)."""
    if not isinstance(order, list):
        return by_support(edits), "the reply has no list under 'order'; ranked by support"
    seen: list[int] = []
    ignored: list[str] = []
    for item in order:
        valid = isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= len(edits)
        if valid and item - 1 not in seen:
            seen.append(item - 1)
        else:
            ignored.append(repr(item))
    rest = by_support([e for i, e in enumerate(edits) if i not in seen])
    note = f"ignored invalid or repeated edit numbers {', '.join(ignored)}" if ignored else ""
    return [edits[i] for i in seen] + rest, note


def _next_budget(value: object, bounds: tuple[int, int]) -> tuple[int | None, str]:
    low, high = min(bounds), max(bounds)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"no usable next_budget ({value!r}); the schedule falls back to its maximum"
    return max(low, min(high, round(value))), ""


def _schema(autonomous: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {"order": {"type": "array", "items": {"type": "integer"}}}
    if autonomous:
        properties["next_budget"] = {"type": "integer"}
    return {"type": "object", "properties": properties, "required": list(properties)}


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
