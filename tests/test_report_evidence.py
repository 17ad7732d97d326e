"""The night's gate in the language of `compare` (issue 29, item 2): the held-out paired difference
with its interval, p-value and tasks × samples beside the gate in report.md/html/json and `status`,
and the label "validated" only for a candidate the gate accepted on held-out tasks disjoint from
training by stable task id (a dream counts as its training task)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_report import _assert_self_contained, full_report

from skillsleep.core.document.skill import Skill
from skillsleep.core.night.held_out import evidence_for
from skillsleep.core.night.record import NightEnd
from skillsleep.core.report.evidence import (
    PER_TASK_NOTE,
    SUGGESTION,
    VALIDATED,
    held_out_comparison,
    label_text,
    short_text,
    train_ids,
    validate,
)
from skillsleep.core.report.files import read_json, render_json
from skillsleep.core.report.html import render_html
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.shared.records import GateDecision, Judge, Run, Task, TaskDelta
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import GateConfig

OLD_REPORT = Path(__file__).parent / "fixtures" / "report_v1_before_evidence.json"


def gate(accepted: bool = True, deltas: list[tuple[str, float, float]] | None = None) -> GateDecision:
    rows = deltas or [(f"v{i}", 0.0, 1.0) for i in range(6)]
    return GateDecision(
        baseline=sum(b for _, b, _ in rows) / len(rows),
        candidate=sum(a for _, _, a in rows) / len(rows),
        accepted=accepted,
        reason="improved" if accepted else "worse: 0.100 < current 0.500",
        deltas=[TaskDelta(task_id=t, before=b, after=a) for t, b, a in rows],
        baseline_hash="base",
        candidate_hash="cand",
    )


# --- the label -----------------------------------------------------------------------------------


def test_a_candidate_accepted_on_held_out_tasks_disjoint_from_training_is_validated() -> None:
    v = validate(gate(), gate_on=True, held_out=["v1", "v2"], trained={"t1", "t2"})
    assert v.validated and v.label == VALIDATED and not v.overlap
    assert v.text().startswith("validated — the gate accepted it on 2 held-out task(s)")


def test_held_out_ids_that_overlap_training_are_never_validated() -> None:
    v = validate(gate(), gate_on=True, held_out=["v1", "v2"], trained={"t1", "v2"})
    assert not v.validated and v.label == SUGGESTION and v.overlap == ["v2"]
    assert "1 of the 2 held-out task(s) were trained on too (v2)" in v.text()


def test_a_dream_of_a_held_out_task_counts_as_training_on_it() -> None:
    dream = Task(id="v1~dream1", prompt="the same, reworded", origin="dream")
    trained = train_ids(["t1", dream.id], [None, dream.parent])
    assert "v1" in trained
    assert not validate(gate(), gate_on=True, held_out=["v1"], trained=trained).validated


@pytest.mark.parametrize(
    ("decision", "gate_on", "held_out", "why"),
    [
        (gate(accepted=False), True, ["v1"], "the gate did not accept it (worse"),
        (gate(), False, ["v1"], "the gate was off"),
        (None, True, ["v1"], "no candidate reached the gate"),
        (gate(), True, [], "no held-out tasks"),
    ],
)
def test_anything_but_an_accepting_gate_on_held_out_tasks_is_a_suggestion(
    decision: GateDecision | None, gate_on: bool, held_out: list[str], why: str
) -> None:
    v = validate(decision, gate_on=gate_on, held_out=held_out, trained=set())
    assert not v.validated and v.text().startswith(f"{SUGGESTION}: ") and why in v.reason


def test_status_shows_the_label_in_brief() -> None:
    assert label_text(None, "no-candidate", "") == ""
    assert label_text(True, "accepted", "validated — …") == VALIDATED
    assert label_text(False, "rejected", "suggestion — not validated: the gate did not accept it") == SUGGESTION
    overlap = "suggestion — not validated: 1 of the 2 held-out task(s) were trained on too (v2), …"
    assert label_text(False, "accepted", overlap) == overlap  # accepted all the same: say why not


# --- the paired difference -------------------------------------------------------------------------


def test_the_comparison_uses_the_samples_when_every_task_has_them() -> None:
    g = gate(deltas=[("a", 0.0, 1.0), ("b", 0.5, 0.5)])
    c = held_out_comparison(g, {"a": [0.0, 0.0], "b": [0.0, 1.0]}, {"a": [1.0, 1.0], "b": [1.0, 0.0]})
    assert c is not None and [p.id for p in c.tasks] == ["a", "b"]
    assert c.repeatability.samples_min == 2 and c.repeatability.note != PER_TASK_NOTE
    assert short_text(c).endswith("2 tasks × 2 samples")


def test_without_the_samples_each_tasks_mean_is_one_sample_and_the_note_says_so() -> None:
    g = gate(deltas=[("a", 0.0, 1.0), ("b", 0.5, 0.5)])
    c = held_out_comparison(g, {"a": [0.0]}, None)
    assert c is not None and c.repeatability.note == PER_TASK_NOTE
    assert [(p.a, p.b) for p in c.tasks] == [([0.0], [1.0]), ([0.5], [0.5])]
    assert held_out_comparison(g.model_copy(update={"deltas": []})) is None


def test_six_tasks_all_won_read_as_the_short_form() -> None:
    c = held_out_comparison(gate())
    assert c is not None and c.better == "B"
    assert short_text(c) == "+1.00 [1.00, 1.00], p = 0.031, 6 tasks × 1 sample"


class _Harness:
    name = "scripted"

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run:
        ok = "ANSWER" in skill.text and sample == 0
        return Run(response="1" if ok else "no")


def test_the_evidence_reads_the_samples_the_evaluator_holds_and_runs_nothing() -> None:
    tasks = [Task(id=f"v{i}", prompt=f"task {i}", judge=Judge(answer="1"), split="val") for i in range(3)]
    train = [Task(id="t1", prompt="train", split="train"), Task(id="v0~dream1", prompt="d", origin="dream")]
    ev = Evaluator(_Harness(), judge_llm=None, gate=GateConfig(), rollouts_k=2)
    seed, cand = Skill("- be brief\n"), Skill("- end with ANSWER\n")
    assert ev.held(seed.hash, ["v0"]) is None
    base = asyncio.run(ev.task_scores(seed, tasks))
    after = asyncio.run(ev.task_scores(cand, tasks))
    held = ev.computed
    decision = gate(deltas=[(t, base[t], after[t]) for t in sorted(base)]).model_copy(
        update={"baseline_hash": seed.hash, "candidate_hash": cand.hash}
    )
    out = evidence_for(True, {"val": tasks, "train": train}, ev)(decision)
    assert ev.computed == held  # no rollout was run for the statistics
    paired, validation = out["paired"], out["validation"]
    assert short_text(paired).endswith("3 tasks × 2 samples")  # type: ignore[arg-type]
    assert validation.overlap == ["v0"] and not validation.validated  # type: ignore[attr-defined]


# --- the report files and the night record ---------------------------------------------------------


def _with_evidence(overlap: bool = False) -> object:
    r = full_report()
    assert r.gate is not None
    trained = {"t9", "t1"} if overlap else {"t9"}
    return r.model_copy(
        update={
            "paired": held_out_comparison(r.gate),
            "validation": validate(r.gate, gate_on=True, held_out=["t1", "t2", "t3", "t4"], trained=trained),
        }
    )


def test_report_md_shows_the_interval_the_p_value_and_the_label() -> None:
    md = render_markdown(_with_evidence())  # type: ignore[arg-type]
    assert (
        "| held-out paired difference | +0.25 \\[-0.25, 0.75\\], p = 1.000, " in md
        and "4 tasks × 1 sample (candidate − live skill) |" in md
    )
    assert "| label | validated — the gate accepted it on 4 held-out task(s)" in md
    assert "## Held-out evidence" in md and "Wins / ties / losses: 2 / 1 / 1" in md
    assert "The gate's rule decides" in md


def test_a_report_whose_held_out_tasks_overlap_training_says_suggestion() -> None:
    md = render_markdown(_with_evidence(overlap=True))  # type: ignore[arg-type]
    assert "| label | suggestion — not validated: 1 of the 4 held-out task(s) were trained on too (t1)" in md
    assert "| label | validated" not in md


def test_report_html_has_the_paired_dot_plot_and_stays_self_contained() -> None:
    page = render_html(_with_evidence())  # type: ignore[arg-type]
    _assert_self_contained(page)
    assert "<h2>Held-out evidence</h2>" in page and 'aria-label="paired scores of 4 task(s)"' in page
    assert "svg line.up{" in page  # the plot's styles travel with it


def test_report_json_keeps_the_comparison_and_the_label() -> None:
    r = _with_evidence()
    again = read_json(render_json(r))  # type: ignore[arg-type]
    assert again == r and again.paired is not None and again.validation is not None
    end = NightEnd.of(again)
    assert end.paired == short_text(again.paired) and end.validated is True
    assert end.validation.startswith("validated — ")


def test_an_old_report_json_still_loads_and_renders_without_the_evidence() -> None:
    old = OLD_REPORT.read_text(encoding="utf-8")
    r = read_json(old)
    assert render_json(r) == old  # written back byte for byte: the new keys are absent while unset
    assert r.outcome == "accepted" and r.gate is not None and r.paired is None and r.validation is None
    assert "Held-out evidence" not in render_markdown(r) and "Held-out evidence" not in render_html(r)
    end = NightEnd.of(r)
    assert (end.paired, end.validated, end.validation) == ("", None, "")
    assert not {"paired", "validated", "validation"} & set(end.model_dump(exclude_defaults=True))
