from __future__ import annotations

import json

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.records import Edit
from skillsleep.core.train.ranking import rank_and_clip

SKILL = Skill("# Answering\nAnswer in one word.\n")


def make_llm(responder) -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(BackendSettings(model="s"), responder)
    return LLM(backend, ledger=Ledger()), backend


def edits(*supports: int) -> list[Edit]:
    return [Edit(op="add", content=f"rule {i}", support=s) for i, s in enumerate(supports)]


def names(selected: list[Edit]) -> list[str]:
    return [e.content or "" for e in selected]


async def test_no_call_when_edits_fit_the_budget_and_ranked_by_support():
    llm, backend = make_llm(lambda r: "{}")
    selection = await rank_and_clip(llm, SKILL, edits(1, 3, 1, 2), budget=4)
    assert backend.requests == []
    assert names(selection.ranked) == ["rule 1", "rule 3", "rule 0", "rule 2"]  # stable on ties
    assert selection.selected == selection.ranked
    assert selection.next_budget is None and selection.problems == []


async def test_optimizer_order_is_clipped_to_the_budget():
    llm, backend = make_llm(lambda r: json.dumps({"order": [3, 1, 2, 4]}))
    selection = await rank_and_clip(llm, SKILL, edits(1, 1, 1, 1), budget=2)
    assert len(backend.requests) == 1
    assert names(selection.selected) == ["rule 2", "rule 0"]
    assert names(selection.ranked) == ["rule 2", "rule 0", "rule 1", "rule 3"]
    prompt = backend.requests[0].messages[-1].content
    assert "The first 2 of your order will be applied" in prompt and '"rule 3"' in prompt
    assert "next_budget" not in backend.requests[0].json_schema["properties"]


async def test_invalid_numbers_are_ignored_and_missing_edits_appended_by_support():
    llm, _ = make_llm(lambda r: json.dumps({"order": [2, 9, 2, 0, "x", True]}))
    selection = await rank_and_clip(llm, SKILL, edits(1, 1, 5, 2), budget=3)
    assert names(selection.ranked) == ["rule 1", "rule 2", "rule 3", "rule 0"]
    assert names(selection.selected) == ["rule 1", "rule 2", "rule 3"]
    assert selection.problems and "9" in selection.problems[0].line()


async def test_parse_error_falls_back_to_support_order():
    llm, _ = make_llm(lambda r: "[broken")
    selection = await rank_and_clip(llm, SKILL, edits(1, 4, 2), budget=2)
    assert names(selection.selected) == ["rule 1", "rule 2"]
    assert selection.problems and "malformed" in selection.problems[0].line()


async def test_autonomous_asks_even_under_budget_and_clamps_next_budget():
    llm, backend = make_llm(lambda r: json.dumps({"order": [2, 1], "next_budget": 50}))
    selection = await rank_and_clip(llm, SKILL, edits(1, 1), budget=4, autonomous=True, bounds=(2, 6))
    assert len(backend.requests) == 1
    assert "next_budget" in backend.requests[0].json_schema["required"]
    assert "from 2 to 6" in backend.requests[0].messages[-1].content
    assert selection.next_budget == 6
    assert names(selection.selected) == ["rule 1", "rule 0"]


async def test_autonomous_next_budget_clamped_up_and_missing_is_none():
    replies = iter([json.dumps({"order": [1], "next_budget": 0}), json.dumps({"order": [1]}), "oops"])
    llm, _ = make_llm(lambda r: next(replies))
    low = await rank_and_clip(llm, SKILL, edits(1), budget=1, autonomous=True, bounds=(2, 6))
    assert low.next_budget == 2
    missing = await rank_and_clip(llm, SKILL, edits(1), budget=1, autonomous=True, bounds=(2, 6))
    assert missing.next_budget is None and missing.problems
    broken = await rank_and_clip(llm, SKILL, edits(1), budget=1, autonomous=True, bounds=(2, 6))
    assert broken.next_budget is None and names(broken.selected) == ["rule 0"]


async def test_no_edits_no_call():
    llm, backend = make_llm(lambda r: "{}")
    selection = await rank_and_clip(llm, SKILL, [], budget=2, autonomous=True)
    assert backend.requests == [] and selection.selected == []
