"""Typed replies: the schemas the stages send, lenient items, item numbers, unusable replies."""

from __future__ import annotations

import json

import pytest

from skillsleep.core.mine.dream import DreamReply
from skillsleep.core.mine.grouping import ParaphraseReply
from skillsleep.core.mine.judge_writing import JudgeReply
from skillsleep.core.mine.relevance import RelevanceReply
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.replies import Reply, Unfit, item_numbers
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Message, UnusableReply
from skillsleep.core.train.aggregate import MergeReply
from skillsleep.core.train.judges import RubricReply
from skillsleep.core.train.meta_skill import NotesReply
from skillsleep.core.train.ranking import AutonomousRankReply, RankReply
from skillsleep.core.train.reflect import Finding, ReflectReply
from skillsleep.core.train.slow_update import GuidanceReply
from skillsleep.core.train.step_record import StepRecord

# What each stage sent before its reply became a model: the response cache's keys, the tokens of
# a backend that puts the schema in the prompt and a grammar's field order all depend on the bytes.
SENT: list[tuple[type[Reply], str]] = [
    (
        ReflectReply,
        '{"type": "object", "properties": {"findings": {"type": "array", "items": {"type": "object", "properties": {"diagnosis": {"type": "string"}, "kind": {"type": "string", "enum": ["skill_defect", "execution_lapse"]}, "op": {"type": "string", "enum": ["add", "delete", "replace"]}, "target": {"type": "string"}, "content": {"type": "string"}}, "required": ["diagnosis", "kind", "op", "target", "content"]}}}, "required": ["findings"]}',
    ),
    (
        MergeReply,
        '{"type": "object", "properties": {"groups": {"type": "array", "items": {"type": "object", "properties": {"members": {"type": "array", "items": {"type": "integer"}}, "op": {"type": "string", "enum": ["add", "delete", "replace"]}, "target": {"type": "string"}, "content": {"type": "string"}, "rationale": {"type": "string"}}, "required": ["members", "op", "target", "content", "rationale"]}}}, "required": ["groups"]}',
    ),
    (
        RankReply,
        '{"type": "object", "properties": {"order": {"type": "array", "items": {"type": "integer"}}}, "required": ["order"]}',
    ),
    (
        AutonomousRankReply,
        '{"type": "object", "properties": {"order": {"type": "array", "items": {"type": "integer"}}, "next_budget": {"type": "integer"}}, "required": ["order", "next_budget"]}',
    ),
    (
        GuidanceReply,
        '{"type": "object", "properties": {"guidance": {"type": "array", "items": {"type": "string"}}}, "required": ["guidance"]}',
    ),
    (
        NotesReply,
        '{"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}}, "required": ["notes"]}',
    ),
    (
        ParaphraseReply,
        '{"title": "mine_merge", "type": "object", "properties": {"groups": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}}, "required": ["groups"]}',
    ),
    (
        JudgeReply,
        '{"title": "mine_judge", "type": "object", "properties": {"checks": {"type": "array", "items": {"type": "object", "properties": {"type": {"type": "string", "enum": ["contains", "not_contains", "regex", "not_regex", "starts_with", "ends_with", "last_line_regex", "section_present", "max_chars", "min_chars", "max_lines", "max_words", "min_words", "max_sentences", "language", "json_valid", "tool_called"]}, "value": {"type": ["string", "integer", "null"]}, "case_sensitive": {"type": "boolean"}, "feedback": {"type": "string"}}, "required": ["type", "value", "feedback"]}, "maxItems": 6}, "rubric": {"type": "string", "maxLength": 800}}, "required": ["checks", "rubric"]}',
    ),
    (
        RelevanceReply,
        '{"title": "relevance", "type": "object", "properties": {"relevant": {"type": "array", "items": {"type": "integer"}}}, "required": ["relevant"]}',
    ),
    (
        DreamReply,
        '{"title": "dream", "type": "object", "properties": {"variants": {"type": "array", "items": {"type": "string"}}}, "required": ["variants"]}',
    ),
    (
        RubricReply,
        '{"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "rationale": {"type": "string"}}, "required": ["score", "rationale"], "additionalProperties": false}',
    ),
]


@pytest.mark.parametrize(("reply", "sent"), SENT, ids=[r.__name__ for r, _ in SENT])
def test_every_stage_sends_the_schema_it_always_sent(reply: type[Reply], sent: str) -> None:
    assert json.dumps(reply.json_schema()) == sent


def test_items_that_do_not_fit_are_kept_apart_with_the_reason_and_the_rest_is_used() -> None:
    reply = ReflectReply.model_validate(
        {
            "findings": [
                {"diagnosis": None, "kind": "skill_defect", "op": "add", "target": None, "content": "Say why."},
                "not an object",
                {"kind": "style", "op": "add"},
                {"op": "add"},
            ],
            "extra": "ignored",
        }
    )
    first, *rest = reply.findings
    assert first == Finding(diagnosis="", kind="skill_defect", op="add", target="", content="Say why.")
    assert [(u.value, u.error) for u in rest if isinstance(u, Unfit)] == [
        ("not an object", "not an object"),
        ({"kind": "style", "op": "add"}, "unknown kind 'style'"),
        ({"op": "add"}, "no 'kind'"),
    ]


def test_item_numbers_keep_the_order_given_and_say_what_was_ignored() -> None:
    numbers = item_numbers([3, 9, 3, 0, 1, *RankReply.model_validate({"order": ["x", True]}).order], 4)
    assert numbers.indexes == [2, 0]
    assert numbers.ignored == [9, 3, 0, "x", True]
    assert (numbers.not_numbers, numbers.out_of_range, numbers.repeated) == (["x", True], [9, 0], [3])


@pytest.mark.parametrize(
    ("line", "role"),
    [
        ("reflect minibatch 1/2: malformed reply, nothing used: the reply is not valid JSON", "reflect"),
        ("merge level 1 chunk 1/1: group 2 ignored: duplicate members: [2, 2]", "merge"),
        ("rank: ignored invalid or repeated edit numbers 9", "rank"),
        ("slow update: the reply held no guidance lines, old guidance kept", "slow_update"),
        ("meta skill: malformed reply, old notes kept: x: y", "meta"),
        ("paraphrase merge: group 1 names requests that do not exist ([99]); those ignored", "mine"),
        ("judge for mine-0123456789ab: the rubric was refused by the safety screen (x)", "mine"),
        ("relevance: the reply names tasks that do not exist ([7]); those ignored", "relevance"),
        ("dream for mine-0123456789ab: a variant was dropped because it is close to a held-out task", "dream"),
    ],
)
def test_an_unusable_reply_is_an_object_on_disk_and_a_line_written_before_reads_back_with_its_role(
    line: str, role: str
) -> None:
    problem = UnusableReply.model_validate(line)  # as a file written before issue 25 holds it
    assert problem.role == role and problem.line() == line
    where, _, error = line.partition(": ")
    assert json.loads(problem.model_dump_json()) == {"role": role, "where": where, "error": error}
    step = {
        "epoch": 0,
        "step": 0,
        "learning_rate": 1,
        "batch": [],
        "train_score": 0.0,
        "proposed": 0,
        "merged": 0,
        "selected": [],
        "applied": [],
        "failures": [line],
    }
    old = StepRecord.model_validate_json(json.dumps(step))
    assert old.failures == [problem]
    again = StepRecord.model_validate_json(old.model_dump_json())
    assert again == old and json.loads(old.model_dump_json())["failures"] == [
        {"role": role, "where": where, "error": error}
    ]
    assert problem.at("step 2").line() == f"step 2: {line}"


def test_an_unusable_reply_keeps_its_role_whatever_its_where_says() -> None:
    """Read back from a file, the role is the one written, not one guessed from the words of `where`."""
    problem = UnusableReply(role="repair", where="judge for mine-1: repair", error="x")
    assert UnusableReply.model_validate_json(problem.model_dump_json()).role == "repair"
    assert problem.at("step 1").role == "repair"


async def test_a_reply_of_another_shape_is_a_parse_error_saying_what_is_wrong() -> None:
    replies = iter([json.dumps({"order": "all"}), json.dumps({"notes": ["a"]}), json.dumps({"order": [2, 1]})])
    backend = ScriptedBackend(BackendSettings(model="m"), lambda _: next(replies))
    llm = LLM(backend, ledger=Ledger())
    messages = [Message(role="user", content="rank")]
    with pytest.raises(ParseError, match="the reply has no list under 'order'"):
        await llm.ask_model("rank", messages, RankReply)
    with pytest.raises(ParseError, match="the reply has no 'order'"):
        await llm.ask_model("rank", messages, AutonomousRankReply)
    assert (await llm.ask_model("rank", messages, RankReply)).order == [2, 1]
    assert backend.requests[0].json_schema == RankReply.json_schema()
