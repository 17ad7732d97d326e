from __future__ import annotations

import pytest
from pydantic import ValidationError

from skillsleep.core.train.schedule import LRSchedule, budget_at


def series(kind: str, total: int, high: int = 8, low: int = 2) -> list[int]:
    schedule = LRSchedule(schedule=kind, max_edits=high, min_edits=low)
    return [budget_at(schedule, step, total) for step in range(total)]


def test_constant_is_always_max():
    assert series("constant", 5) == [8, 8, 8, 8, 8]


def test_linear_decays_from_max_to_min():
    assert series("linear", 7) == [8, 7, 6, 5, 4, 3, 2]


def test_cosine_decays_from_max_to_min_slowly_at_both_ends():
    values = series("cosine", 5)
    assert values[0] == 8 and values[-1] == 2
    assert values == [8, 7, 5, 3, 2]  # 8, 7.12, 5, 2.88, 2 rounded half up
    assert values == sorted(values, reverse=True)


def test_cosine_default_is_cosine_from_four_to_two():
    schedule = LRSchedule()
    assert schedule.schedule == "cosine"
    assert [budget_at(schedule, s, 3) for s in range(3)] == [4, 3, 2]


def test_single_step_gets_max():
    for kind in ("constant", "linear", "cosine"):
        assert series(kind, 1) == [8]


def test_steps_past_the_end_stay_at_min():
    assert budget_at(LRSchedule(schedule="linear", max_edits=8, min_edits=2), 10, 4) == 2


def test_autonomous_uses_proposal_clamped_or_max():
    schedule = LRSchedule(schedule="autonomous", max_edits=6, min_edits=2)
    assert budget_at(schedule, 3, 10, None) == 6
    assert budget_at(schedule, 3, 10, 4) == 4
    assert budget_at(schedule, 3, 10, 1) == 2
    assert budget_at(schedule, 3, 10, 99) == 6


def test_zero_total_steps_is_an_error():
    with pytest.raises(ValueError):
        budget_at(LRSchedule(), 0, 0)


def test_min_above_max_is_rejected():
    with pytest.raises(ValidationError):
        LRSchedule(max_edits=2, min_edits=3)
