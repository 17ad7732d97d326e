"""What the engine reports while it works, as typed events; the command line renders them.

Each event is a pydantic record with a `kind` literal (the union `Event` is discriminated on it)
and a `describe()` that gives the line the command line prints for it (`shown` False: no line
off a terminal, e.g. each finished rollout, which only advances the live count). The engine never
renders: it calls an `EventSink` with events, and the command line decides how to show them
(slash_commands/progress.py: a live display on a terminal, `· line` text otherwise, JSON lines
with `--json` and in a detached night's log).

    training    Plan, SeedScoring, StepStarted, Reflecting, StepProblem, Repairing, NoEdit, GateStarted,
                GateDecided, CandidateChosen, EpochEnd, Saturated, Stopped (the Trainer), FinalScoring, EvalStarted
    a night     HarvestStarted, HarvestDone, NightResumed, Mining, AskingRelevance, WritingJudges,
                NotEnoughEvidence, Dreaming, NightPlanned, FinalScoring, ReportWritten, ProposalStaged,
                ProposalPending, Adopted, AdoptRefused
    anywhere    RolloutDone (core/train/evaluate.py), Retry (core/models/backends/base.py), Notice,
                ClusterJoined and ClusterLoad (an executor that runs rollouts on a cluster)

The records live in core/shared/run_events.py (training, scoring, rollouts, retries; `EventRecord`) and
core/shared/night_events.py (a night's own stages); import them from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from skillsleep.core.shared.night_events import (
    Adopted,
    AdoptRefused,
    AskingRelevance,
    Dreaming,
    HarvestDone,
    HarvestStarted,
    Mining,
    NightPlanned,
    NightResumed,
    NotEnoughEvidence,
    ProposalPending,
    ProposalStaged,
    ReportWritten,
    WritingJudges,
)
from skillsleep.core.shared.run_events import (
    CandidateChosen,
    ClusterJoined,
    ClusterLoad,
    EpochEnd,
    EvalStarted,
    EventRecord,
    FinalScoring,
    GateDecided,
    GateStarted,
    NoEdit,
    Notice,
    Plan,
    Reflecting,
    Repairing,
    Retry,
    RolloutDone,
    Saturated,
    SeedScoring,
    StepAt,
    StepProblem,
    StepStarted,
    Stopped,
)

__all__ = [
    "AdoptRefused",
    "Adopted",
    "AskingRelevance",
    "CandidateChosen",
    "ClusterJoined",
    "ClusterLoad",
    "Dreaming",
    "EpochEnd",
    "EvalStarted",
    "Event",
    "EventRecord",
    "EventSink",
    "FinalScoring",
    "GateDecided",
    "GateStarted",
    "HarvestDone",
    "HarvestStarted",
    "Mining",
    "NightPlanned",
    "NightResumed",
    "NoEdit",
    "NotEnoughEvidence",
    "Notice",
    "Plan",
    "ProposalPending",
    "ProposalStaged",
    "Reflecting",
    "Repairing",
    "ReportWritten",
    "Retry",
    "RolloutDone",
    "Saturated",
    "SeedScoring",
    "StepAt",
    "StepProblem",
    "StepStarted",
    "Stopped",
    "WritingJudges",
    "in_night",
    "quiet",
]


Event = Annotated[
    Plan
    | SeedScoring
    | StepStarted
    | Reflecting
    | StepProblem
    | Repairing
    | NoEdit
    | GateStarted
    | GateDecided
    | CandidateChosen
    | EpochEnd
    | Saturated
    | Stopped
    | Notice
    | FinalScoring
    | EvalStarted
    | RolloutDone
    | Retry
    | ClusterJoined
    | ClusterLoad
    | HarvestStarted
    | HarvestDone
    | NightResumed
    | Mining
    | AskingRelevance
    | WritingJudges
    | Dreaming
    | NightPlanned
    | NotEnoughEvidence
    | ReportWritten
    | ProposalStaged
    | ProposalPending
    | Adopted
    | AdoptRefused,
    Field(discriminator="kind"),
]


EventSink = Callable[[Event], None]
"""Hears each event as it happens; must not raise (a rendering failure is not the run's)."""


def quiet(_event: Event, /) -> None:
    """The sink that drops every event (the default where nobody listens)."""
    return None


def in_night(on_event: EventSink, night: int) -> EventSink:
    """`on_event` for the training of night `night`: its steps and its end are told in nights
    ("night 2, step 1/2"), not as the epochs of the skill's training the nights add up to."""

    def sink(event: Event) -> None:
        if isinstance(event, EpochEnd):
            event = event.model_copy(update={"night": night})
        elif isinstance(at := getattr(event, "at", None), StepAt):
            event = event.model_copy(update={"at": at.model_copy(update={"night": night})})
        on_event(event)

    return sink
