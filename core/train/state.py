"""What a training run saves after every step (state.json) so that it can go on where it stopped:
`TrainState`, with a `StepRecord` per step and an `EpochRecord` per epoch's end (also written as
epochs/e<N>.json), and `config_hash()`, the settings a resume must share."""

from __future__ import annotations

import hashlib

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import SCHEMA_VERSION, GateDecision, Record, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.step_record import StepRecord


class SlowUpdateRecord(Record):
    """What the slow update did at an epoch's end: the outcome counts of the tasks it compared, its
    reply when it could not be used, the guidance it wrote and the lines the safety screen refused."""

    counts: dict[str, int]
    failure: UnusableReply | None = None
    guidance: str
    refused: list[RejectedEdit] = Field(default_factory=list)  # stage "safety"


class EpochRecord(Record):
    """One epoch's end (core/train/epoch.py): the scores at its start and end, the slow update and
    the gate on its guidance, and the meta skill's reply when it could not be used. A stage that did
    not run has no key in the file: `slow_update` and `slow_update_gate` are None then, and
    `meta_ran` is False (`meta_failure` is None both when the meta skill did not run and when it ran
    well)."""

    epoch: int
    start_score: float
    slow_update: SlowUpdateRecord | None = None
    slow_update_gate: GateDecision | None = None
    meta_failure: UnusableReply | None = None
    end_score: float

    @property
    def meta_ran(self) -> bool:
        """Whether the meta skill was updated at this epoch's end."""
        return "meta_failure" in self.model_fields_set

    def problems(self) -> list[UnusableReply]:
        """The replies of this epoch's end that could not be used: the slow update's, the meta skill's."""
        slow = self.slow_update.failure if self.slow_update else None
        return [p for p in (slow, self.meta_failure) if p is not None]

    @model_serializer(mode="wrap")
    def _what_ran(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """Only the fields that were set: a stage that did not run leaves no key."""
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}


class TrainState(Record):
    """Everything needed to continue a run where it stopped."""

    version: int = SCHEMA_VERSION
    config_hash: str
    epoch: int = 0
    step: int = 0
    seed_skill: str
    current: str
    best: str
    seed_score: float
    current_score: float
    best_score: float
    epoch_start: str
    epoch_start_score: float
    rejected: list[RejectedEdit] = Field(default_factory=list)
    earlier_steps: list[str] = Field(default_factory=list)
    meta_skill: str = ""
    next_budget: int | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    epochs: list[EpochRecord] = Field(default_factory=list)
    skipped: int = 0  # steps not run because every held-out task already had the top score (`saturated`)
    spent_tokens: int = 0
    spent_usd: float = 0.0
    stopped: str | None = None
    done: bool = False

    def accept(self, skill: Skill, score: float, *, tie_ok: bool = False) -> bool:
        """Make `skill` current; it becomes best on a strict improvement, or on a tie with `tie_ok`
        (slow-update guidance the gate found not to lower the score). True when it became best (the
        caller writes best_skill.md)."""
        self.current, self.current_score = skill.text, score
        if score > self.best_score + 1e-9 or (tie_ok and score >= self.best_score - 1e-9):
            self.best, self.best_score = skill.text, score
            return True
        return False

    def problems(self, epoch: int | None = None) -> list[UnusableReply]:
        """What the optimizer wrote that could not be used (unreadable replies, invalid findings,
        merge groups, rankings), each with the role, where and the error: "epoch 1 step 2: reflect
        minibatch 1/2: malformed reply, nothing used: …", "end of epoch 1: slow update: …". With
        `epoch` (a night is one epoch), only that epoch's, as "step 2: …" / "end of the night: …"."""
        out = [
            failure.at(f"{'' if epoch is not None else f'epoch {s.epoch + 1} '}step {s.step + 1}")
            for s in self.steps
            if epoch is None or s.epoch == epoch
            for failure in s.failures
        ]
        for record in self.epochs:
            if epoch is None or record.epoch == epoch:
                end = "end of the night" if epoch is not None else f"end of epoch {record.epoch + 1}"
                out += [problem.at(end) for problem in record.problems()]
        return out


# how long and how often a model call is waited for, the caps and prices shape no answer: a run goes on with other values
_NOT_SHAPING: dict[str, bool | set[str]] = {
    **{section: True for section in ("budget", "prices")},
    **{role: {"retry", "timeout_s"} for role in ("target", "optimizer", "judge")},
}


# settings added after runs were written, left out of the hash while they have their default
_ADDED_LATER: tuple[tuple[str, str], ...] = (
    ("train", "candidates"),
    ("train", "context_chars"),
    ("edits", "edit_frontmatter"),
)


def config_hash(cfg: TrainConfig) -> str:
    """Hash of the settings that shape the run (a resume with other settings is refused). A setting
    added later hashes as before it existed while it has its default (one candidate a step, the
    folder's context budget, frontmatter protected), so earlier runs still resume."""
    exclude: dict[str, bool | set[str]] = dict(_NOT_SHAPING)
    for name, key in _ADDED_LATER:
        section = getattr(cfg, name)
        if getattr(section, key) == type(section).model_fields[key].default:
            exclude[name] = {key} | set(exclude.get(name) or ())  # type: ignore[arg-type]
    return hashlib.sha256(cfg.model_dump_json(exclude=exclude).encode()).hexdigest()[:16]
