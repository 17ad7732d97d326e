"""One record of a refused or rejected edit (`RejectedEdit`): its layout on disk by stage, and the
files earlier versions wrote still read back (tests/fixtures/legacy_rejections/, written by
skillsleep before this record replaced `Refusal`, `GateRejection`, `SafetyRefusal` and the step's
lines: a resumed run's state.json, a skill's memory in the night store, a night's report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from skillsleep.core.models.prompts import describe_memory
from skillsleep.core.night.nights import SkillMemory
from skillsleep.core.report.files import read_json, render_json, report_files
from skillsleep.core.report.result import NightResult
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import RejectedEdit, distinct
from skillsleep.core.train.state import TrainState
from skillsleep.core.train.step_record import StepRecord
from tests.test_report import full_report

LEGACY = Path(__file__).parent / "fixtures" / "legacy_rejections"
EDIT = Edit(op="add", content="Be brief.")


def test_a_report_of_earlier_versions_reads_back_and_renders_its_three_files_byte_for_byte() -> None:
    old = (LEGACY / "report.json").read_text()
    r = read_json(old)
    assert [(e.stage, e.reason) for e in r.rejected_edits] == [("gate", "worse: 0.250 < current 0.500")]
    assert [(e.stage, e.rule, e.matched) for e in r.refused_edits] == [
        ("safety", "exfiltration", "upload the report to https://")
    ]
    assert render_json(r) == old
    for name, text in report_files(r).items():
        assert text == (LEGACY / name).read_text(), name


def test_a_report_built_now_has_the_bytes_earlier_versions_wrote() -> None:
    # the fixture's three files are what `full_report()` rendered before the one record
    for name, text in report_files(full_report()).items():
        assert text == (LEGACY / name).read_text(), name


def test_a_resumed_runs_state_of_earlier_versions_loads_with_each_step_line_as_a_record() -> None:
    st = TrainState.model_validate_json((LEGACY / "state.json").read_bytes())
    first, second = st.steps
    assert [(r.stage, r.rewrite, r.edit.op, r.edit.target, r.edit.content) for r in first.skipped] == [
        ("apply", False, "add", None, "ANSWER: 7"),
        ("apply", True, "add", None, "ANSWER: 9"),
        ("apply", False, "delete", "- Cite the source.", None),
    ]
    assert first.skipped[2].reason.startswith("the line to delete was not found in the skill: '- Cite the source.'")
    assert [r.stage for r in second.skipped] == ["memory", "support", "user"]
    assert second.skipped[0].reason.startswith("dropped before ranking, refused before (epoch 1, step 1): it is")
    assert (
        second.skipped[2].reason == "dropped before ranking, the user rejected proposal 20261205-044225-0cf6 (night 1)"
    )
    (refused,) = first.refused
    assert (refused.stage, refused.rule, refused.matched) == ("safety", "credential", "[REDACTED:aws_access_key]")
    assert refused.why().startswith("refused before the gate (credential): puts a credential into the skill")
    assert [r.stage for r in st.rejected] == ["apply", "gate", "repair", "user"]
    slow = st.epochs[0].slow_update
    assert slow is not None
    (guidance,) = slow.refused
    assert guidance.stage == "safety" and guidance.edit.content == "Bill with [REDACTED:stripe_key]."
    written = json.loads((LEGACY / "state.json").read_bytes())["epochs"][0]["slow_update"]["refused"]
    assert [r.model_dump(mode="json") for r in slow.refused] == written  # the slow update's refusals keep their layout
    again = TrainState.model_validate_json(st.model_dump_json())
    assert again == st  # written in today's layout, it reads back the same


def test_a_skills_memory_of_earlier_versions_loads_and_shows_the_reflection_the_same_text() -> None:
    memory = SkillMemory.model_validate_json((LEGACY / "memory.json").read_bytes())
    assert [(r.stage, r.epoch, r.step) for r in memory.rejected] == [
        ("apply", 0, 0),
        ("gate", 0, 0),
        ("repair", 0, 0),
        ("user", 0, 0),
    ]
    repair = memory.rejected[2]
    assert repair.repair == memory.rejected[1].edit and (repair.before, repair.after) == (0.0, 0.0)
    assert memory.rejected[3].proposal == "20261205-044225-0cf6"
    # what the reflection is shown of it is what earlier versions showed
    assert describe_memory(memory.rejected) + "\n" == (LEGACY / "memory_prompt.txt").read_text()
    assert SkillMemory.model_validate_json(memory.model_dump_json()) == memory


def test_each_stage_is_written_in_its_layout_and_reads_back_the_same() -> None:
    refusal = RejectedEdit(edit=EDIT, stage="safety", rule="exfiltration", reason="sends data out", matched="upload")
    gate = RejectedEdit(edit=EDIT, stage="gate", reason="worse", before=0.5, after=0.25, epoch=0, step=1)
    apply = RejectedEdit(edit=EDIT, stage="apply", reason="not found", rewrite=True, epoch=0, step=0)
    edit = EDIT.model_dump(mode="json")
    assert refusal.model_dump(mode="json") == {
        "edit": edit,
        "rule": "exfiltration",
        "why": "sends data out",
        "matched": "upload",
    }  # the layout of the safety screen's refusals since the first version (report.json's `refused_edits`)
    assert gate.model_dump(mode="json") == {
        "edit": edit,
        "reason": "worse",
        "before": 0.5,
        "after": 0.25,
        "epoch": 0,
        "step": 1,
    }  # no stage: report.json's `rejected_edits` never had one
    assert apply.model_dump(mode="json") == {
        "edit": edit,
        "stage": "apply",
        "reason": "not found",
        "rewrite": True,
        "epoch": 0,
        "step": 0,
    }
    for r in (refusal, gate, apply):
        assert RejectedEdit.model_validate_json(r.model_dump_json()) == r


def test_only_a_safety_refusal_names_a_rule_and_the_words_that_matched() -> None:
    with pytest.raises(ValidationError, match="a safety refusal names its `rule`"):
        RejectedEdit(edit=EDIT, stage="safety", reason="sends data out")
    with pytest.raises(ValidationError, match="a safety refusal names its `rule`"):
        RejectedEdit(edit=EDIT, stage="gate", rule="exfiltration", matched="upload")


def test_why_says_it_for_people_and_where_names_the_step() -> None:
    refusal = RejectedEdit(edit=EDIT, stage="safety", rule="exfiltration", reason="sends data out", matched="upload")
    assert refusal.why() == "refused before the gate (exfiltration): sends data out — “upload”"
    gate = RejectedEdit(edit=EDIT, stage="gate", reason="worse", epoch=1, step=0)
    assert gate.why() == "worse" and gate.where() == "epoch 2, step 1"
    assert RejectedEdit(edit=EDIT, stage="gate").where() == "an earlier step"


def test_a_step_line_that_is_not_one_earlier_versions_wrote_is_an_error_that_shows_the_form() -> None:
    with pytest.raises(ValidationError, match="not a skipped edit's line"):
        RejectedEdit.model_validate("something else entirely")


def test_a_report_holds_the_gates_rejections_and_the_screens_refusals_only() -> None:
    apply = RejectedEdit(edit=EDIT, stage="apply", reason="not found")
    with pytest.raises(ValidationError, match="`rejected_edits` are the gate's rejections"):
        NightResult.model_validate({**full_report().model_dump(), "rejected_edits": [apply]})


def test_distinct_keeps_the_first_of_equal_entries_in_order() -> None:
    a = RejectedEdit(edit=EDIT, stage="apply", reason="x")
    b = RejectedEdit(edit=EDIT, stage="apply", reason="y")
    assert distinct([a, b, a.model_copy(), b]) == [a, b]


def test_a_step_record_keeps_its_entries_as_records() -> None:
    step = StepRecord(
        epoch=0,
        step=0,
        learning_rate=1,
        batch=["t1"],
        train_score=0.0,
        proposed=1,
        merged=1,
        selected=[EDIT],
        applied=[],
        skipped=[RejectedEdit(edit=EDIT, stage="support", reason="held back before ranking: too few")],
    )
    assert json.loads(step.model_dump_json())["skipped"] == [
        {"edit": EDIT.model_dump(mode="json"), "stage": "support", "reason": "held back before ranking: too few"}
    ]
    assert StepRecord.model_validate_json(step.model_dump_json()) == step
