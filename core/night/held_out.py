"""A night's held-out evidence beside its gate (core/report/evidence.py says what it is): the paired
difference of the candidate against the live skill on the val tasks, from the sample scores the
evaluator already holds (no rollout and no model call is made for it), and the proposal's label by
stable task id."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from skillsleep.core.report.evidence import held_out_comparison, train_ids, validate
from skillsleep.core.shared.records import GateDecision, Task
from skillsleep.core.train.evaluate import Evaluator


def held_out_evidence(
    decision: GateDecision, *, gate_on: bool, val: list[Task], train: list[Task], evaluator: Evaluator
) -> dict[str, object]:
    """`paired` and `validation` of the night's result for the gate's `decision` on `val`; `train`
    holds the training tasks, dreamed ones included (a dream counts as its parent)."""
    ids = [t.id for t in val]
    base = evaluator.held(decision.baseline_hash, ids)
    cand = evaluator.held(decision.candidate_hash, ids)
    trained = train_ids((t.id for t in train), (t.parent for t in train))
    return {
        "paired": held_out_comparison(decision, base, cand),
        "validation": validate(decision, gate_on=gate_on, held_out=ids, trained=trained),
    }


def evidence_for(
    gate_on: bool, tasks: dict[str, list[Task]], evaluator: Evaluator
) -> Callable[[GateDecision], dict[str, object]]:
    """`held_out_evidence` for a night's tasks by split (`NightPlan.tasks()`): give it a gate decision."""
    return partial(held_out_evidence, gate_on=gate_on, val=tasks["val"], train=tasks["train"], evaluator=evaluator)
