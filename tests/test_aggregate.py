from __future__ import annotations

import itertools
import json
import re

import pytest

from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.records import CompletionRequest, Edit
from skillsleep.core.train.aggregate import aggregate, dedup

NO_GROUPS = json.dumps({"groups": []})


def make_llm(responder) -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(BackendSettings(model="s"), responder)
    return LLM(backend, ledger=Ledger()), backend


def add(content: str, support: int = 1) -> Edit:
    return Edit(op="add", content=content, support=support)


def group(members: list[int], **fields: object) -> dict[str, object]:
    return {"members": members, "op": "add", "target": "", "content": "Merged.", "rationale": "same", **fields}


def edit_count(request: CompletionRequest) -> int:
    return int(re.search(r"Proposed edits \((\d+)\)", request.messages[-1].content).group(1))


async def test_exact_duplicates_merge_without_a_call_and_support_adds_up():
    llm, backend = make_llm(lambda r: NO_GROUPS)
    result = await aggregate(llm, [add("Use  ANSWER:", 2), add("use answer:"), add("use answer:", 3)])
    assert backend.requests == []
    assert len(result.edits) == 1
    assert result.edits[0].support == 6 and result.edits[0].content == "Use  ANSWER:"


def test_dedup_keeps_first_occurrence_order():
    edits = dedup([add("b"), add("a"), add("b")])
    assert [(e.content, e.support) for e in edits] == [("b", 2), ("a", 1)]


async def test_llm_merge_sums_support_and_keeps_ungrouped_edits():
    reply = {"groups": [group([1, 3], content="End with ANSWER: and the answer.")]}
    llm, backend = make_llm(lambda r: json.dumps(reply))
    edits = [add("Finish with ANSWER.", 2), add("Be brief."), add("Put ANSWER: last.", 3)]
    result = await aggregate(llm, edits)
    assert len(backend.requests) == 1 and backend.requests[0].cache_system
    assert [(e.content, e.support) for e in result.edits] == [("End with ANSWER: and the answer.", 5), ("Be brief.", 1)]
    assert result.problems == []
    prompt = backend.requests[0].messages[-1].content
    assert '"Finish with ANSWER."' in prompt and "Edit 3" in prompt


async def test_bad_indices_are_ignored_and_recorded():
    reply = {"groups": [group([1, 9]), group([2, 2]), group([1]), group(["x", 2]), group([2, 3])]}
    llm, _ = make_llm(lambda r: json.dumps(reply))
    result = await aggregate(llm, [add("a"), add("b"), add("c")])
    assert [(e.content, e.support) for e in result.edits] == [("a", 1), ("Merged.", 2)]
    assert len(result.problems) == 4 and all("ignored" in p.line() for p in result.problems)


async def test_a_member_is_merged_at_most_once():
    reply = {"groups": [group([1, 2]), group([2, 3])]}
    llm, _ = make_llm(lambda r: json.dumps(reply))
    result = await aggregate(llm, [add("a"), add("b"), add("c")])
    assert [(e.content, e.support) for e in result.edits] == [("Merged.", 2), ("c", 1)]
    assert len(result.problems) == 1


async def test_merged_replace_keeps_a_members_target_and_never_invents_one():
    edits = [
        Edit(op="replace", target="Answer in one word.", content="Answer with ANSWER: x."),
        Edit(op="replace", target="Answer in one word.", content="End with ANSWER:."),
        Edit(op="delete", target="Be polite."),
        Edit(op="delete", target="Be nice."),
    ]
    reply = {
        "groups": [
            group([1, 2], op="replace", target="answer in one word.", content="End with a line ANSWER: x."),
            group([3, 4], op="delete", target="Be kind.", content=""),
        ]
    }
    llm, _ = make_llm(lambda r: json.dumps(reply))
    result = await aggregate(llm, edits)
    merged = result.edits[0]
    assert (merged.op, merged.target, merged.support) == ("replace", "Answer in one word.", 2)
    assert [e.target for e in result.edits[1:]] == ["Be polite.", "Be nice."]
    assert len(result.problems) == 1 and "not the target of any member" in result.problems[0].line()


async def test_parse_error_keeps_edits_unmerged():
    llm, _ = make_llm(lambda r: "not json at all")
    edits = [add("a"), add("b")]
    result = await aggregate(llm, edits)
    assert result.edits == edits
    assert len(result.problems) == 1 and "malformed" in result.problems[0].line()


async def test_hierarchical_merge_goes_level_by_level():
    counter = itertools.count()

    def responder(request: CompletionRequest) -> str:
        return json.dumps({"groups": [group([1, 2], content=f"merged {next(counter)}")]})

    llm, backend = make_llm(responder)
    result = await aggregate(llm, [add(f"rule {i}") for i in range(20)], group_size=8)
    # Each chunk merges one pair. 20 → chunks 8,8,4 → 17 → 8,8,1 → 15 → 8,7 → 13 → 8,5 → 11
    # → 8,3 → 9 → 8,1 → 8 → one chunk of 8 → 7, and a single chunk ends the hierarchy.
    assert [edit_count(r) for r in backend.requests] == [8, 8, 4, 8, 8, 8, 7, 8, 5, 8, 3, 8, 8]
    assert len(result.edits) == 7
    assert sum(e.support for e in result.edits) == 20
    assert result.problems == []


async def test_hierarchy_stops_when_a_level_reduces_nothing():
    llm, backend = make_llm(lambda r: NO_GROUPS)
    edits = [add(f"rule {i}") for i in range(20)]
    result = await aggregate(llm, edits, group_size=8)
    assert len(backend.requests) == 3
    assert result.edits == edits


async def test_single_edit_needs_no_call():
    llm, backend = make_llm(lambda r: NO_GROUPS)
    result = await aggregate(llm, [add("a")])
    assert backend.requests == [] and len(result.edits) == 1


async def test_group_size_below_two_is_an_error():
    llm, _ = make_llm(lambda r: NO_GROUPS)
    with pytest.raises(ValueError):
        await aggregate(llm, [add("a"), add("b")], group_size=1)


def backed(content: str, *evidence: str) -> Edit:
    return Edit(op="add", content=content, evidence=list(evidence), support=len(evidence))


def test_dedup_counts_the_distinct_trajectories_behind_copies_once():
    """Three findings drawn from copies of one reply are one piece of evidence, not three."""
    copies = [backed("Run the tests with pytest.", "t1:aaa") for _ in range(3)]
    [edit] = dedup(copies)
    assert edit.support == 1 and edit.evidence == ["t1:aaa"]
    [edit] = dedup([backed("x", "t1:aaa", "t2:bbb"), backed("x", "t2:bbb", "t3:ccc")])
    assert edit.support == 3 and edit.evidence == ["t1:aaa", "t2:bbb", "t3:ccc"]


async def test_llm_merge_joins_the_evidence_of_its_members():
    reply = {"groups": [group([1, 2, 3], content="Put ANSWER: last.")]}
    llm, _ = make_llm(lambda r: json.dumps(reply))
    edits = [
        backed("Finish with ANSWER.", "t1:aaa"),
        backed("End on ANSWER.", "t1:aaa"),
        backed("ANSWER last.", "t2:b"),
    ]
    [merged] = (await aggregate(llm, edits)).edits
    assert merged.evidence == ["t1:aaa", "t2:b"] and merged.support == 2
