"""What the engine reports while it works, as typed events; the command line renders them.

Each event is a pydantic record with a `kind` literal (the union `Event` is discriminated on it)
and a `describe()` that gives the line the command line prints for it today. The engine never
renders: it calls an `EventSink` with events, and the command line decides how to show them.
Today the Trainer (and the epoch boundary) emit them and `train` and the night print their
`describe()` lines; the night's own stages, rollouts and retries still report plain lines.
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CandidateChosen",
    "EpochEnd",
    "Event",
    "EventSink",
    "GateDecided",
    "GateStarted",
    "NoEdit",
    "Notice",
    "Plan",
    "Reflecting",
    "SeedScoring",
    "StepAt",
    "StepProblem",
    "StepStarted",
    "Stopped",
]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepAt(_Event):
    """Where in the training a step is; `epoch` and `step` count from 0."""

    epoch: int
    epochs: int
    step: int
    steps: int

    def label(self) -> str:
        return f"epoch {self.epoch + 1}/{self.epochs} step {self.step + 1}/{self.steps}"


class _AtStep(_Event):
    """An event inside one training step."""

    at: StepAt


class Plan(_Event):
    """The projected size of a training run, before it starts."""

    kind: Literal["plan"] = "plan"
    epochs: int
    steps_per_epoch: int
    calls_per_step: int
    max_calls: int

    def describe(self) -> str:
        return (
            f"plan: {self.epochs} epoch(s) × {self.steps_per_epoch} step(s); ≤ {self.calls_per_step} "
            f"model calls a step, ≤ {self.max_calls} in all (judge calls for rubric tasks come on top)"
        )


class SeedScoring(_Event):
    """The seed skill is being scored on the selection split."""

    kind: Literal["seed_scoring"] = "seed_scoring"
    tasks: int

    def describe(self) -> str:
        return f"scoring the seed skill on {self.tasks} selection tasks"


class StepStarted(_AtStep):
    """A step starts: its batch is rolled out."""

    kind: Literal["step_started"] = "step_started"
    tasks: int
    rollouts_k: int

    def describe(self) -> str:
        return f"{self.at.label()}: rollout {self.tasks} tasks × {self.rollouts_k}"


class Reflecting(_AtStep):
    """The step's rollouts are scored; the optimizer reads them."""

    kind: Literal["reflecting"] = "reflecting"
    train_score: float
    learning_rate: int

    def describe(self) -> str:
        return f"{self.at.label()}: reflect (train score {self.train_score:.3f}, learning rate {self.learning_rate})"


class StepProblem(_AtStep):
    """Something in a step went wrong or was refused (a failed reply, an unsafe edit)."""

    kind: Literal["step_problem"] = "step_problem"
    problem: str

    def describe(self) -> str:
        return f"{self.at.label()}: {self.problem}"


class NoEdit(_AtStep):
    """No proposed edit applied to the skill; the step has no candidate."""

    kind: Literal["no_edit"] = "no_edit"

    def describe(self) -> str:
        return f"{self.at.label()}: no applicable edit"


class _AtCandidate(_AtStep):
    """An event about one of the step's candidates (numbered from 1; most steps build one)."""

    candidate: int = 1
    candidates: int = 1

    def which(self) -> str:
        return f"candidate {self.candidate}/{self.candidates} " if self.candidates > 1 else ""


class GateStarted(_AtCandidate):
    """A candidate of the step goes to the gate."""

    kind: Literal["gate_started"] = "gate_started"
    tasks: int

    def describe(self) -> str:
        return f"{self.at.label()}: gate {self.which()}on {self.tasks} selection tasks"


class GateDecided(_AtCandidate):
    """The gate accepted or rejected a candidate of the step."""

    kind: Literal["gate_decided"] = "gate_decided"
    accepted: bool
    reason: str

    def describe(self) -> str:
        return f"{self.at.label()}: {self.which()}{'accepted' if self.accepted else 'rejected'}: {self.reason}"


class CandidateChosen(_AtStep):
    """A step that built several candidates: how many, how many the gate scored, which one it kept."""

    kind: Literal["candidate_chosen"] = "candidate_chosen"
    built: int
    gated: int
    chosen: int | None

    def describe(self) -> str:
        kept = f"kept candidate {self.chosen}" if self.chosen else "none passed the gate" if self.gated else "none"
        return f"{self.at.label()}: {self.built} candidates, {self.gated} distinct new skill(s) gated; {kept}"


class EpochEnd(_Event):
    """The last step of an epoch is done; the boundary work (slow update, meta skill) starts."""

    kind: Literal["epoch_end"] = "epoch_end"
    epoch: int  # from 0

    def describe(self) -> str:
        return f"epoch {self.epoch + 1}: boundary (slow update, meta skill)"


class Stopped(_Event):
    """The run stopped before its end (the budget was reached)."""

    kind: Literal["stopped"] = "stopped"
    reason: str

    def describe(self) -> str:
        return f"stopped: {self.reason}"


class Notice(_Event):
    """Anything else worth a line: a warning, a resumed run, a staged proposal."""

    kind: Literal["notice"] = "notice"
    text: str

    def describe(self) -> str:
        return self.text


Event = Annotated[
    Plan
    | SeedScoring
    | StepStarted
    | Reflecting
    | StepProblem
    | NoEdit
    | GateStarted
    | GateDecided
    | CandidateChosen
    | EpochEnd
    | Stopped
    | Notice,
    Field(discriminator="kind"),
]


class EventSink(Protocol):
    """Hears each event as it happens; must not raise (a rendering failure is not the run's)."""

    def __call__(self, event: Event, /) -> None: ...
