"""What one training step did (`StepRecord`): kept in the trainer's state and written as the step's
`step.json`; a night's verdict and report are read from its epoch's steps."""

from __future__ import annotations

from pydantic import Field

from skillsleep.core.shared.records import Edit, GateDecision, Record, Strategy, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit


class StepRecord(Record):
    """Everything one training step did, for the run directory and the summary."""

    epoch: int
    step: int
    learning_rate: int
    batch: list[str]
    train_score: float
    proposed: int
    merged: int
    selected: list[Edit]
    applied: list[Edit]
    skipped: list[RejectedEdit] = Field(
        default_factory=list
    )  # dropped or held back before ranking, or refused by the rules
    moot: list[Edit] = Field(default_factory=list)  # selected edits the skill already holds (as written or repaired)
    failures: list[UnusableReply] = Field(default_factory=list)  # optimizer replies it could not use
    refused: list[RejectedEdit] = Field(default_factory=list)  # by the safety screen, before ranking
    gate: GateDecision | None = None  # the kept candidate's decision, else the best rejected one's
    candidates: int = 1  # candidate skills built ([train] candidates; identical ones gated once)
    chosen: int | None = None  # the number (from 1) of the candidate the gate kept
    candidate_gates: dict[int, GateDecision] = Field(default_factory=dict)  # by number, with several
    strategies: dict[int, Strategy] = Field(default_factory=dict)  # where each candidate came from, with several
    strategy: Strategy | None = None  # the kept candidate's strategy, with several
