"""The events of training and scoring (the Trainer, `eval`, every rollout and retry) and the
record every event is; core/shared/events.py has the union and the sink."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from skillsleep.core.shared.records import Strategy

__all__ = [
    "CandidateChosen",
    "ClusterJoined",
    "ClusterLoad",
    "EpochEnd",
    "EvalStarted",
    "EventRecord",
    "FinalScoring",
    "GateDecided",
    "GateStarted",
    "NoEdit",
    "Notice",
    "Plan",
    "Reflecting",
    "Repairing",
    "Retry",
    "RolloutDone",
    "Saturated",
    "SeedScoring",
    "StepAt",
    "StepProblem",
    "StepStarted",
    "Stopped",
]


class EventRecord(BaseModel):
    """What every event is: a frozen record with a `kind` and a `describe()` line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shown: ClassVar[bool] = True  # whether it is a line of its own off a terminal


class StepAt(EventRecord):
    """Where in the training a step is; `epoch` and `step` count from 0. In a night of `skillsleep
    run` (one epoch of the skill's training, the night's number set by `in_night`) it is told in nights."""

    epoch: int
    epochs: int
    step: int
    steps: int
    night: int | None = None

    def label(self) -> str:
        if self.night is not None:
            return f"night {self.night}, step {self.step + 1}/{self.steps}"
        return f"epoch {self.epoch + 1}/{self.epochs} step {self.step + 1}/{self.steps}"


class _AtStep(EventRecord):
    """An event inside one training step."""

    at: StepAt


class Plan(EventRecord):
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


class SeedScoring(EventRecord):
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


class Repairing(_AtStep):
    """The bounded-edit rules refused some of the step's edits; the optimizer is asked to rewrite them."""

    kind: Literal["repairing"] = "repairing"
    refused: int

    def describe(self) -> str:
        return (
            f"{self.at.label()}: {self.refused} edit(s) refused by the edit rules; asking the optimizer to repair them"
        )


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
    strategy: Strategy | None = None  # the kept candidate's: "optimizer", "quoted literals", "worked example"

    def describe(self) -> str:
        kept = f"kept candidate {self.chosen}" if self.chosen else "none passed the gate" if self.gated else "none"
        kept += f" ({self.strategy})" if self.chosen and self.strategy else ""
        return f"{self.at.label()}: {self.built} candidates, {self.gated} distinct new skill(s) gated; {kept}"


class EpochEnd(EventRecord):
    """The last step of an epoch is done; the boundary work (slow update, meta skill) starts."""

    kind: Literal["epoch_end"] = "epoch_end"
    epoch: int  # from 0
    night: int | None = None  # set by `in_night`: the epoch is this night's

    def describe(self) -> str:
        if self.night is not None:
            return f"night {self.night}: end of the night (slow update, meta skill)"
        return f"epoch {self.epoch + 1}: boundary (slow update, meta skill)"


class Saturated(EventRecord):
    """Every held-out task already has the top score: no candidate could score higher, so the run's
    remaining steps are skipped (core/train/gate.py, `saturated`)."""

    kind: Literal["saturated"] = "saturated"
    score: float
    tasks: int
    skipped: int  # the steps not run

    def describe(self) -> str:
        return (
            f"every held-out task already has the top score ({self.score:.3f} on {self.tasks}): no candidate "
            f"could score higher, so the remaining {self.skipped} step(s) are skipped"
        )


class Stopped(EventRecord):
    """The run stopped before its end (the budget was reached)."""

    kind: Literal["stopped"] = "stopped"
    reason: str

    def describe(self) -> str:
        return f"stopped: {self.reason}"


class Notice(EventRecord):
    """Anything else worth a line: a warning, a resumed run, a finished run shown again."""

    kind: Literal["notice"] = "notice"
    text: str

    def describe(self) -> str:
        return self.text


class FinalScoring(EventRecord):
    """The test split is scored (`subject`: which skills) once the training is over."""

    kind: Literal["final_scoring"] = "final_scoring"
    subject: str
    tasks: int

    def describe(self) -> str:
        return f"scoring {self.subject} on {self.tasks} test tasks"


class EvalStarted(EventRecord):
    """`eval` starts scoring a skill on its tasks."""

    kind: Literal["eval_started"] = "eval_started"
    skill: str
    tasks: int
    rollouts_k: int
    harness: str  # the label of the target (backend:model, or an agent CLI with its version)

    def describe(self) -> str:
        return f"scoring {self.skill} on {self.tasks} tasks × {self.rollouts_k} with {self.harness}"


class RolloutDone(EventRecord):
    """One task × sample was run and scored (a failed episode too: it scores 0)."""

    shown: ClassVar[bool] = False
    kind: Literal["rollout_done"] = "rollout_done"
    task: str
    sample: int
    skill_hash: str
    hard: float
    soft: float
    error: str | None = None  # why the episode failed (it scores 0)

    def describe(self) -> str:
        scores = f"rollout {self.task} #{self.sample}: hard {self.hard:.2f}, soft {self.soft:.2f}"
        return scores + (f" ({self.error})" if self.error else "")


class ClusterJoined(EventRecord):
    """Rollouts will run on a cluster: where it is, its nodes and their CPUs."""

    kind: Literal["cluster_joined"] = "cluster_joined"
    executor: str  # "ray"
    address: str
    nodes: list[str]
    cpus: float

    def describe(self) -> str:
        nodes = ", ".join(self.nodes) or "none yet"
        return f"rollouts run on the {self.executor} cluster at {self.address}: {len(self.nodes)} node(s) ({nodes}), {self.cpus:g} CPUs"


class ClusterLoad(EventRecord):
    """Where a cluster's rollouts are: in flight, done in all, and done on each node."""

    shown: ClassVar[bool] = False
    kind: Literal["cluster_load"] = "cluster_load"
    in_flight: int
    done: int
    by_node: dict[str, int]

    def describe(self) -> str:
        nodes = ", ".join(f"{node}: {n}" for node, n in sorted(self.by_node.items()))
        return f"on the cluster: {self.in_flight} in flight, {self.done} done" + (f" ({nodes})" if nodes else "")


class Retry(EventRecord):
    """A model call failed and will be tried again after `delay_s`; `role` is set by whoever knows it."""

    kind: Literal["retry"] = "retry"
    backend: str  # provider:model
    attempt: int  # the attempt that failed, from 1
    attempts: int  # how many there are in all
    error: str
    delay_s: float  # the wait before the next attempt
    role: str = ""  # target, optimizer, judge

    def describe(self) -> str:
        return (
            f"{self.role + ' ' if self.role else ''}{self.backend} attempt {self.attempt} of {self.attempts} "
            f"failed: {self.error}; retrying in {round(self.delay_s, 1):g} s"
        )
