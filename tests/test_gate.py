from __future__ import annotations

import pytest
from pydantic import ValidationError

from skillsleep.core.train.gate import GateConfig, decide


def _d(cfg: GateConfig, before: dict[str, float], after: dict[str, float], **kw: bool):
    return decide(cfg, before, after, baseline_hash="a", candidate_hash="b", **kw)


def test_gate_accepts_strict_improvement() -> None:
    d = _d(GateConfig(), {"t1": 0, "t2": 1}, {"t1": 1, "t2": 1})
    assert d.accepted and d.baseline == 0.5 and d.candidate == 1.0
    assert "0.500 → 1.000" in d.reason


def test_gate_rejects_equal_score() -> None:
    d = _d(GateConfig(), {"t1": 1, "t2": 0}, {"t1": 0, "t2": 1})
    assert not d.accepted and "ties are rejected" in d.reason


def test_gate_rejects_worse_score() -> None:
    d = _d(GateConfig(), {"t1": 1, "t2": 1}, {"t1": 1, "t2": 0})
    assert not d.accepted and d.reason.startswith("worse")


def test_gate_margin_requires_more_than_the_margin() -> None:
    cfg = GateConfig(min_margin=0.25)
    assert not _d(cfg, {"a": 0, "b": 0, "c": 0, "d": 0}, {"a": 1, "b": 0, "c": 0, "d": 0}).accepted
    assert _d(cfg, {"a": 0, "b": 0, "c": 0, "d": 0}, {"a": 1, "b": 1, "c": 0, "d": 0}).accepted


def test_gate_no_regress_rejects_a_better_mean_that_breaks_one_task() -> None:
    before, after = {"a": 1, "b": 0, "c": 0}, {"a": 0, "b": 1, "c": 1}
    assert _d(GateConfig(), before, after).accepted
    d = _d(GateConfig(no_regress=True), before, after)
    assert not d.accepted and "tasks regressed: a" in d.reason


def test_gate_off_accepts_anything_and_says_so() -> None:
    d = _d(GateConfig(enabled=False), {"a": 1}, {"a": 0})
    assert d.accepted and "gate off" in d.reason


def test_allow_ties_accepts_equal_but_not_worse() -> None:
    assert _d(GateConfig(), {"a": 1}, {"a": 1}, allow_ties=True).accepted
    assert not _d(GateConfig(), {"a": 1}, {"a": 0}, allow_ties=True).accepted


def test_deltas_record_each_task_before_and_after() -> None:
    d = _d(GateConfig(), {"a": 0.0, "b": 0.5}, {"a": 1.0, "b": 0.5})
    assert [(x.task_id, x.before, x.after) for x in d.deltas] == [("a", 0.0, 1.0), ("b", 0.5, 0.5)]


@pytest.mark.parametrize("before,after,accepted", [(0.3, 0.3 + 1e-12, False), (0.3, 0.31, True)])
def test_float_noise_is_a_tie(before: float, after: float, accepted: bool) -> None:
    assert _d(GateConfig(), {"a": before}, {"a": after}).accepted is accepted


def test_min_wins_rejects_a_rise_that_one_task_carries() -> None:
    """The issue's night: 0.125 → 0.188 on two held-out tasks is one task's half step, not evidence."""
    d = _d(GateConfig(min_wins=2, no_regress=True), {"a": 0.25, "b": 0.0}, {"a": 0.375, "b": 0.0})
    assert not d.accepted and (d.baseline, d.candidate) == (0.125, 0.1875)
    assert (
        d.reason == "not enough evidence: higher on 1 of 2 held-out task(s), the gate needs at least 2 (0.125 → 0.188)"
    )


def test_min_wins_with_fewer_tasks_than_wins_says_there_is_too_little_to_judge() -> None:
    d = _d(GateConfig(min_wins=3), {"a": 0.0, "b": 0.0}, {"a": 1.0, "b": 1.0})
    assert not d.accepted
    assert d.reason == "not enough evidence: only 2 held-out task(s), and the gate needs a higher score on at least 3"


def test_min_wins_accepts_enough_winning_tasks_and_counts_them() -> None:
    d = _d(GateConfig(min_wins=2), {"a": 0.0, "b": 0.5, "c": 1.0}, {"a": 1.0, "b": 0.75, "c": 1.0})
    assert d.accepted and d.reason == "improved 0.500 → 0.917: higher on 2 of 3 held-out tasks, 0 lower"


def test_min_wins_and_no_regress_reject_a_loss_however_many_win() -> None:
    d = _d(GateConfig(min_wins=2, no_regress=True), {"a": 0, "b": 0, "c": 1}, {"a": 1, "b": 1, "c": 0.5})
    assert not d.accepted and d.reason == "tasks regressed: c"


def test_min_wins_leaves_the_tie_rule_of_guidance_alone() -> None:
    assert _d(GateConfig(min_wins=3), {"a": 1}, {"a": 1}, allow_ties=True).accepted


def test_min_wins_must_be_positive() -> None:
    with pytest.raises(ValidationError):
        GateConfig(min_wins=0)


def test_the_gate_says_what_it_requires() -> None:
    assert GateConfig().describe() == (
        "a strictly higher mean hard score on the held-out tasks (each task counts once, its score the mean of its samples)"
    )
    night = GateConfig(metric="mixed", min_wins=2, no_regress=True)
    assert night.describe().startswith(
        "a strictly higher mean mixed score on the held-out tasks, higher on at least 2 of them, lower on none"
    )
    assert GateConfig(enabled=False).describe() == "gate off: every candidate is accepted unchecked"
