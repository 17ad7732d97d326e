"""A night's label through the engine: the scripted first night, accepted on held-out tasks none of
which it trained on, is "validated"; the same night with a dream of a held-out task among its
training tasks (its held-out ids overlap training) is accepted by the gate all the same and never
labelled validated. Report, night record and `status` say the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillsleep.core.night import stages
from skillsleep.core.report.evidence import SUGGESTION, VALIDATED
from skillsleep.core.shared.records import DREAM_MARK, Task
from tests.test_night_engine import managed, night, record_of, root, settings  # noqa: F401  (fixture)


def test_a_first_night_is_validated_and_its_evidence_reaches_the_record(root: Path) -> None:
    result = night(root, settings(root), managed(root))
    assert result.outcome == "accepted" and result.validation is not None and result.validation.validated
    assert result.validation.label == VALIDATED and result.paired is not None
    assert result.paired.n_tasks == len(result.validation.held_out) == 2
    end = record_of(root).end
    assert end.validated is True and end.paired.endswith("2 tasks × 1 sample")
    report = (root / "data" / "nights" / "0001" / "report.md").read_text()
    assert "| label | validated — " in report and "| held-out paired difference | +1.00 " in report


def test_a_night_whose_held_out_ids_overlap_training_is_never_validated(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tasks = stages.NightPlan.tasks

    def overlapping(plan: stages.NightPlan) -> dict[str, list[Task]]:
        out = tasks(plan)
        held = out["val"][0]
        leak = held.model_copy(update={"id": f"{held.id}{DREAM_MARK}9", "origin": "dream", "split": "train"})
        return {**out, "train": [*out["train"], Task.model_validate(leak.model_dump())]}

    monkeypatch.setattr(stages.NightPlan, "tasks", overlapping)
    result = night(root, settings(root), managed(root))
    assert result.outcome == "accepted" and result.gate is not None and result.gate.accepted
    v = result.validation
    assert v is not None and not v.validated and v.label == SUGGESTION and len(v.overlap) == 1
    report = (root / "data" / "nights" / "0001" / "report.md").read_text()
    assert "| label | suggestion — not validated: 1 of the 2 held-out task(s) were trained on too" in report
    assert "| label | validated" not in report
    end = record_of(root).end
    assert end.validated is False and end.validation.startswith(SUGGESTION)
