"""The engine's events: each kind's line, and a JSON round trip through the union."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from skillsleep.core.events import (
    CandidateChosen,
    EpochEnd,
    Event,
    GateDecided,
    GateStarted,
    NoEdit,
    Notice,
    Plan,
    Reflecting,
    SeedScoring,
    StepAt,
    StepProblem,
    StepStarted,
    Stopped,
)

AT = StepAt(epoch=0, epochs=2, step=2, steps=4)

CASES: list[tuple[object, str]] = [
    (
        Plan(epochs=2, steps_per_epoch=4, calls_per_step=17, max_calls=190),
        "plan: 2 epoch(s) × 4 step(s); ≤ 17 model calls a step, ≤ 190 in all "
        "(judge calls for rubric tasks come on top)",
    ),
    (SeedScoring(tasks=6), "scoring the seed skill on 6 selection tasks"),
    (StepStarted(at=AT, tasks=4, rollouts_k=2), "epoch 1/2 step 3/4: rollout 4 tasks × 2"),
    (
        Reflecting(at=AT, train_score=0.5, learning_rate=3),
        "epoch 1/2 step 3/4: reflect (train score 0.500, learning rate 3)",
    ),
    (StepProblem(at=AT, problem="reflect: no JSON"), "epoch 1/2 step 3/4: reflect: no JSON"),
    (NoEdit(at=AT), "epoch 1/2 step 3/4: no applicable edit"),
    (GateStarted(at=AT, tasks=6), "epoch 1/2 step 3/4: gate on 6 selection tasks"),
    (GateDecided(at=AT, accepted=True, reason="0.5 → 0.7"), "epoch 1/2 step 3/4: accepted: 0.5 → 0.7"),
    (GateDecided(at=AT, accepted=False, reason="no gain"), "epoch 1/2 step 3/4: rejected: no gain"),
    (
        GateStarted(at=AT, tasks=6, candidate=2, candidates=3),
        "epoch 1/2 step 3/4: gate candidate 2/3 on 6 selection tasks",
    ),
    (
        GateDecided(at=AT, accepted=False, reason="no gain", candidate=3, candidates=3),
        "epoch 1/2 step 3/4: candidate 3/3 rejected: no gain",
    ),
    (
        CandidateChosen(at=AT, built=3, gated=2, chosen=2),
        "epoch 1/2 step 3/4: 3 candidates, 2 distinct new skill(s) gated; kept candidate 2",
    ),
    (
        CandidateChosen(at=AT, built=2, gated=0, chosen=None),
        "epoch 1/2 step 3/4: 2 candidates, 0 distinct new skill(s) gated; none",
    ),
    (EpochEnd(epoch=0), "epoch 1: boundary (slow update, meta skill)"),
    (Stopped(reason="budget of 100 tokens spent"), "stopped: budget of 100 tokens spent"),
    (Notice(text="staged proposal p1"), "staged proposal p1"),
]


@pytest.mark.parametrize(("event", "line"), CASES)
def test_each_event_describes_itself_as_the_line_printed_today(event: Event, line: str) -> None:
    assert event.describe() == line


@pytest.mark.parametrize(("event", "line"), CASES)
def test_an_event_survives_a_json_round_trip_through_the_union(event: Event, line: str) -> None:
    adapter: TypeAdapter[Event] = TypeAdapter(Event)
    back = adapter.validate_json(adapter.dump_json(event))
    assert back == event
    assert type(back) is type(event)


def test_the_kinds_are_distinct() -> None:
    kinds = [type(e).model_fields["kind"].default for e, _ in CASES]
    assert len(set(kinds)) == len({type(e) for e, _ in CASES})
