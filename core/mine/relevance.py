"""Relevance (sleep, before the judges): which recurring tasks the chosen skill is about.

One optimizer call (role "relevance") per RELEVANCE_BATCH tasks sees the skill and the tasks (as
data) and names the relevant ones by number. A reply that cannot be read keeps its whole batch
(the gate still guards the result); numbers of tasks that do not exist are ignored. Either is
recorded as an `UnusableReply`.
"""

from __future__ import annotations

import asyncio

from pydantic import ConfigDict, Field, StrictInt

from skillsleep.core.document.skill import Skill
from skillsleep.core.mine.mining import MinedTask
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import data_block, render
from skillsleep.core.models.replies import Lenient, Reply, Unfit, item_numbers, raw
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Message, Record, UnusableReply

RELEVANCE_BATCH = 40  # tasks shown per relevance call
RELEVANCE_CHARS = 300
SKILL_CHARS = 6000


class RelevanceReply(Reply):
    """The numbers (from 1) of the tasks the skill is about."""

    model_config = ConfigDict(title="relevance")

    relevant: list[Lenient[StrictInt]]


class Relevance(Record):
    """The tasks the skill is about, in their order, and what of the replies could not be used."""

    tasks: list[MinedTask] = Field(default_factory=list)
    problems: list[UnusableReply] = Field(default_factory=list)


def relevance_messages(skill: Skill, name: str, prompts: list[str]) -> list[Message]:
    tasks = "\n".join(
        f"Task {n}:\n" + data_block(f"TASK {n}", p, limit=RELEVANCE_CHARS) for n, p in enumerate(prompts, 1)
    )
    user = render("relevance_user", name=name, skill=data_block("SKILL", skill.text, limit=SKILL_CHARS), tasks=tasks)
    return [Message(role="system", content=render("relevance_system")), Message(role="user", content=user)]


async def relevant_tasks(llm: LLM, skill: Skill, name: str, tasks: list[MinedTask]) -> Relevance:
    """The tasks the skill is about, in their order (one call per RELEVANCE_BATCH tasks)."""
    batches = [tasks[i : i + RELEVANCE_BATCH] for i in range(0, len(tasks), RELEVANCE_BATCH)]
    results = await asyncio.gather(*(_relevant(llm, skill, name, batch) for batch in batches))
    return Relevance(tasks=[m for r in results for m in r.tasks], problems=[p for r in results for p in r.problems])


async def _relevant(llm: LLM, skill: Skill, name: str, batch: list[MinedTask]) -> Relevance:
    messages = relevance_messages(skill, name, [m.task.prompt for m in batch])
    try:
        reply = await llm.ask_model("relevance", messages, RelevanceReply, max_tokens=512, cache_system=True)
    except ParseError as exc:
        return Relevance(
            tasks=batch,
            problems=[_problem(f"the optimizer's reply could not be read ({exc}); kept all {len(batch)} tasks")],
        )
    if any(isinstance(x, Unfit) for x in reply.relevant):
        written = [raw(x) for x in reply.relevant]
        problem = f"'relevant' is not a list of task numbers ({written!r}); kept all {len(batch)} tasks"
        return Relevance(tasks=batch, problems=[_problem(problem)])
    numbers = item_numbers(reply.relevant, len(batch))
    problems = []
    if numbers.out_of_range:
        bad = sorted(set(numbers.out_of_range))
        problems.append(_problem(f"the reply names tasks that do not exist ({bad}); those ignored"))
    return Relevance(tasks=[m for i, m in enumerate(batch) if i in numbers.indexes], problems=problems)


def _problem(error: str) -> UnusableReply:
    return UnusableReply(role="relevance", where="relevance", error=error)
