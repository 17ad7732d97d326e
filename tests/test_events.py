"""The engine's events: each kind's line, and a JSON round trip through the union."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from skillsleep.core.shared.events import (
    Adopted,
    AdoptRefused,
    AskingRelevance,
    CandidateChosen,
    Dreaming,
    EpochEnd,
    EvalStarted,
    Event,
    FinalScoring,
    GateDecided,
    GateStarted,
    HarvestDone,
    HarvestStarted,
    Mining,
    NightPlanned,
    NightResumed,
    NoEdit,
    NotEnoughEvidence,
    Notice,
    Plan,
    ProposalPending,
    ProposalStaged,
    Reflecting,
    Repairing,
    ReportWritten,
    Retry,
    RolloutDone,
    Saturated,
    SeedScoring,
    StepAt,
    StepProblem,
    StepStarted,
    Stopped,
    WritingJudges,
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
    (
        Repairing(at=AT, refused=2),
        "epoch 1/2 step 3/4: 2 edit(s) refused by the edit rules; asking the optimizer to repair them",
    ),
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
    (
        Saturated(score=1.0, tasks=6, skipped=2),
        "every held-out task already has the top score (1.000 on 6): no candidate could score higher, so the "
        "remaining 2 step(s) are skipped",
    ),
    (Stopped(reason="budget of 100 tokens spent"), "stopped: budget of 100 tokens spent"),
    (Notice(text="watching claude-code /h (Ctrl-C to stop)"), "watching claude-code /h (Ctrl-C to stop)"),
    (FinalScoring(subject="seed, best and final skill", tasks=3), "scoring seed, best and final skill on 3 test tasks"),
    (
        EvalStarted(skill="S.md", tasks=5, rollouts_k=1, harness="scripted:t"),
        "scoring S.md on 5 tasks × 1 with scripted:t",
    ),
    (
        RolloutDone(task="q1", sample=0, skill_hash="ab", hard=1.0, soft=0.5, error="timeout"),
        "rollout q1 #0: hard 1.00, soft 0.50 (timeout)",
    ),
    (
        Retry(backend="openai:m", attempt=1, attempts=2, error="HTTP 429", delay_s=0.04, role="optimizer"),
        "optimizer openai:m attempt 1 of 2 failed: HTTP 429; retrying in 0 s",
    ),
    (HarvestStarted(), "harvesting new sessions"),
    (HarvestDone(sessions={"chat": 3, "codex": 1}, errors=0), "harvested 4 new session(s), 0 error(s)"),
    (NightResumed(night=2, skill="release", stopped=""), "resuming night 2 of release (stopped: the process died)"),
    (Mining(sessions=18), "mining 18 sessions for recurring tasks"),
    (AskingRelevance(tasks=6, skill="release"), "asking which of 6 recurring tasks release is about"),
    (WritingJudges(tasks=6), "writing judges for 6 tasks"),
    (Dreaming(variants=1, tasks=3), "dreaming 1 variant(s) of 3 training tasks"),
    (
        NightPlanned(night=1, train=3, dreamed=1, val=2, test=1, harness="scripted:t"),
        "night 1: 3 train (1 dreamed), 2 val, 1 test tasks; replaying with scripted:t",
    ),
    (
        NotEnoughEvidence(held_out=1, needed=2),
        "not enough evidence: 1 held-out task(s), the gate needs a higher score on at least 2; nothing is trained "
        "tonight",
    ),
    (ReportWritten(folder="/d/nights/0001", outcome="accepted"), "night report (accepted) written in /d/nights/0001"),
    (ProposalStaged(proposal="p1", accepted=False, reason="no gain"), "staged proposal p1 (not accepted: no gain)"),
    (ProposalPending(proposal="p1"), "the same proposal is already pending: p1 (`skillsleep adopt p1`)"),
    (
        Adopted(proposal="p1", path="/s/SKILL.md"),
        "adopted p1 into /s/SKILL.md (--auto-adopt; `skillsleep rollback` undoes it)",
    ),
    (
        AdoptRefused(proposal="p1", error="the live file changed"),
        "--auto-adopt did not adopt p1: the live file changed",
    ),
]

# what has no line of its own off a terminal (a rollout advances the live count; the rest is for JSON)
UNSHOWN = {RolloutDone, HarvestDone, ReportWritten}


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


@pytest.mark.parametrize(("event", "line"), CASES)
def test_only_rollouts_harvest_counts_and_the_report_have_no_line_of_their_own(event: Event, line: str) -> None:
    assert event.shown is (type(event) not in UNSHOWN)
