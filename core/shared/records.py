"""Typed records shared by every stage: model calls, tasks, rollouts, edits, gate decisions.

They are pydantic models written to disk as JSON; an unknown field is an error (`Record`).
`SCHEMA_VERSION` is written into the trainer's resumable state (`TrainState.version`), not read back yet.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

SCHEMA_VERSION = 1

_STEP_ROLES = Literal["reflect", "merge", "rank", "repair", "example"]  # the optimizer's calls in a training step
Role = Literal["target", "judge", _STEP_ROLES, "slow_update", "meta", "schedule", "mine", "relevance", "dream"]
ROLES: tuple[str, ...] = get_args(Role)


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# A record's time: written in UTC with its zone; one without (edited by hand) is read as UTC, so all compare.
UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]


class Record(BaseModel):
    """Base of every record: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


# --- model calls -------------------------------------------------------------------------------


class Message(Record):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


class CompletionRequest(Record):
    """Everything that determines a model's answer; its hash is the response-cache key."""

    model: str
    messages: list[Message]
    temperature: float = 0.0
    max_tokens: int = 1024
    json_schema: dict[str, Any] | None = None
    seed: int | None = None
    sample: int = 0
    thinking: bool = False
    cache_system: bool = False

    def cache_key(self, provider: str, endpoint: str = "") -> str:
        """Stable hash of the full request plus where it goes (provider and base URL)."""
        body = self.model_dump(mode="json")
        blob = json.dumps({"provider": provider, "endpoint": endpoint, "request": body}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()


class Usage(Record):
    """Token counts of one call."""

    input_tokens: int = 0  # the whole prompt, the cache's reads and writes included
    output_tokens: int = 0
    cached_tokens: int = 0  # part of the prompt read from the provider's cache
    cache_write_tokens: int = 0  # part of the prompt written to it (Anthropic bills them above input)

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class Completion(Record):
    """A backend's answer to one request."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    raw_id: str | None = None
    model: str = ""
    cached: bool = False
    cost_usd: float | None = None  # what the provider itself reported the call cost (None: not reported)

    @property
    def truncated(self) -> bool:
        return self.finish_reason in {"length", "max_tokens"}


class LedgerEntry(Record):
    """One model call as the ledger records it (a cache hit costs nothing and says so)."""

    ts: UtcDatetime = Field(default_factory=lambda: datetime.now(UTC))
    role: Role
    provider: str
    model: str
    usage: Usage
    cost_usd: float
    latency_s: float
    cache_hit: bool = False
    error: str | None = None
    unpriced: bool = False  # its model had no price: cost_usd 0 is unknown, not free (local:* is priced at 0)


# --- tasks and judges --------------------------------------------------------------------------


CheckType = Literal[
    "contains",
    "not_contains",
    "regex",
    "not_regex",
    "starts_with",
    "ends_with",
    "last_line_regex",
    "section_present",
    "max_chars",
    "min_chars",
    "max_lines",
    "max_words",
    "min_words",
    "max_sentences",
    "language",
    "json_valid",
    "tool_called",
]


class Check(Record):
    """One rule check on a response; `value` is text, a pattern or a number depending on type."""

    type: CheckType
    value: str | int | None = None  # what each type needs: `skillsleep.core.train.checks.check_problem`
    case_sensitive: bool = True
    feedback: str | None = None  # the task author's own wording of what was required

    @field_validator("value", mode="before")
    @classmethod
    def _text_or_whole_number(cls, value: object) -> object:
        # before pydantic's own coercion, which would turn true into 1 and 3.0 into 3
        if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise ValueError(f"must be text or a whole number, got {json.dumps(value, default=str)}")


class Judge(Record):
    """How one task is scored: rule checks, an expected answer, an LLM rubric, or a mix."""

    checks: list[Check] = Field(default_factory=list)
    answer: str | None = None
    answer_match: Literal["exact", "normalized", "number"] = "normalized"
    answer_pattern: str | None = None  # where the answer is read: a regex with one group (default: all of it)
    rubric: str | None = None
    rubric_pass: float = Field(default=0.7, ge=0.0, le=1.0)  # a rubric score at or above this is a hard pass
    grounding: Literal["evidence", "outcome-signals"] | None = None  # a mined judge's source; None: by hand


Split = Literal["train", "val", "test"]


DREAM_MARK = "~dream"  # a dreamed task's id: its real task's id, DREAM_MARK and a number


class Task(Record):
    """One unit of work the target runs; `split` is optional in task files (assigned by seed)."""

    id: str
    prompt: str
    context: str | None = None
    workdir: str | None = None  # where the task ran; a replay runs in a temporary copy of it
    judge: Judge = Field(default_factory=Judge)
    split: Split | None = None
    origin: Literal["real", "dream"] = "real"
    provenance: list[str] = Field(default_factory=list)
    # a dreamed task's real task; not written (the id carries it, so plan.json keeps its bytes)
    parent: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _parent_of_a_dream(self) -> Task:
        if self.origin == "dream" and self.parent is None:
            self.parent = self.id.split(DREAM_MARK)[0]
        return self

    @field_validator("id")
    @classmethod
    def _usable_id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError('the id is empty; give every task a short unique name such as "add-1"')
        if any(ch < " " or ch == "\x7f" for ch in value):
            raise ValueError(f"the id {value!r} has a control character; use a one-line name of printable characters")
        return value

    @field_validator("prompt")
    @classmethod
    def _usable_prompt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the prompt is empty; write what the agent is asked to do")
        return value


# --- rollouts and scores -----------------------------------------------------------------------


class ToolCall(Record):
    """A tool the agent called, with arguments and (when known) its result."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None


class Run(Record):
    """What a harness returns for one task: the agent's output, no score yet."""

    response: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: str | None = None
    exit_status: int | None = None


class Score(Record):
    """A judge's verdict; `feedback` is plain words a model can act on."""

    hard: float
    soft: float
    feedback: list[str] = Field(default_factory=list)
    rationale: str | None = None


class Rollout(Record):
    """One task run with one skill and one sample index, scored."""

    task_id: str
    skill_hash: str
    sample: int = 0
    run: Run
    score: Score


# --- edits and gate decisions ------------------------------------------------------------------

EditOp = Literal["add", "delete", "replace"]
EditKind = Literal["skill_defect", "execution_lapse"]
Strategy = Literal["optimizer", "quoted literals", "worked example"]  # where a step's candidate came from


def folded(text: str | None) -> str:
    """Whitespace and case folded, for comparing edits."""
    return " ".join((text or "").split()).lower()


class Edit(Record):
    """A bounded edit: ADD a line (after `target` when given, else at the end of the body),
    DELETE the line equal to `target`, or REPLACE the line equal to `target` by `content`."""

    op: EditOp
    target: str | None = None
    content: str | None = None
    rationale: str = ""
    kind: EditKind = "skill_defect"
    support: int = 1  # distinct trajectories behind it (`evidence`), copies of one reply counted once
    evidence: list[str] = Field(default_factory=list)  # "task:reply-fingerprint" of each (core/train/reflect.py)

    def key(self) -> str:
        """Identity for exact de-duplication (whitespace and case folded)."""
        return f"{self.op}|{folded(self.target)}|{folded(self.content)}"


class TaskDelta(Record):
    """A task's selection score before and after a candidate."""

    task_id: str
    before: float
    after: float


class GateDecision(Record):
    """The gate's verdict on one candidate, with the numbers it was based on."""

    baseline: float
    candidate: float
    accepted: bool
    reason: str
    deltas: list[TaskDelta] = Field(default_factory=list)
    baseline_hash: str
    candidate_hash: str


class UnusableReply(Record):
    """A model reply, or a part of one, that a stage could not use: its role, `where` (the stage
    and the part: "reflect minibatch 1/2", "judge for mine-…") and `error` (what was wrong and what
    was done instead). Shown as the line "<where>: <error>" (`line()`); in files it is these three
    fields. A file written before issue 25 holds the line, read back with its stage's role."""

    role: Role
    where: str
    error: str

    def line(self) -> str:
        return f"{self.where}: {self.error}"

    def at(self, context: str) -> UnusableReply:
        """The same problem placed in a run ("step 2", "end of the night")."""
        return self.model_copy(update={"where": f"{context}: {self.where}"})

    @model_validator(mode="before")
    @classmethod
    def _from_line(cls, data: object) -> object:
        """The line an earlier version wrote (a state.json, step.json or plan.json it left to resume)."""
        if not isinstance(data, str):
            return data
        where, _, error = data.partition(": ")
        first = where.split(" ", 1)[0]
        return {"role": _STAGE_ROLES.get(first, first), "where": where, "error": error}


# In a line an earlier version wrote, a stage's first word → its role where the two differ
# ("reflect minibatch 1/2" is role "reflect").
_STAGE_ROLES = {"slow": "slow_update", "meta": "meta", "paraphrase": "mine", "judge": "mine"}
