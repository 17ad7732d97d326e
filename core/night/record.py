"""The record of one night (`<data>/nights/<NNNN>/night.json`, kept by `Nights` in core/night/nights.py).

A `NightRecord` holds what only it knows (which process runs the night, its status, its log, the
steps it planned) and three parts, each made in one place:

    end     NightEnd      how the night ended: `NightEnd.of(result)`, a view of its `NightResult`
                          (report.json holds the whole result), or the error that stopped it
    plan    PlanCounts    what its plan held: `NightPlan.counts()`
    spend   NightSpend    what its model calls cost: `NightSpend.of(ledger)`, from its ledger

night.json is flat, as every version wrote it: the parts' keys sit beside the record's own, in
the order of `NIGHT_JSON` (`_flat`); a flat record, old or new, is read back into its parts (`_nest`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from skillsleep.core.models.ledger import Ledger
from skillsleep.core.report.evidence import short_text
from skillsleep.core.report.result import HistoryPoint, NightResult, Outcome, StopReason
from skillsleep.core.shared.records import Record, UtcDatetime

NightStatus = Literal["running", "finished", "stopped"]


class NightEnd(Record):
    """How a night ended, in brief: a view of its `NightResult` (`of()`), what `status` and the
    chart of later nights show. All unset while a new night runs; a resumed night keeps what its
    earlier run ended with (without its stop) until it ends again."""

    finished: UtcDatetime | None = None
    outcome: Outcome | None = None
    reason: str = ""
    stop: StopReason | None = None
    baseline: float | None = None  # held-out (val) score of the live skill
    candidate: float | None = None  # held-out score of the candidate
    accepted: bool = False  # the gate accepted it and it was not a dry run
    test_before: float | None = None
    test_after: float | None = None
    proposal_id: str | None = None
    adopted: bool = False  # put live by --auto-adopt
    # beside the gate (core/report/evidence.py); unset in a record written before them
    paired: str = ""  # the held-out paired difference, short: "+0.31 [0.12, 0.50], p = 0.008, 6 tasks × 1 sample"
    validated: bool | None = None  # the proposal's label: validated or not (None: no gate decision)
    validation: str = ""  # the label with its reason

    @classmethod
    def of(cls, result: NightResult) -> NightEnd:
        """The end of the night whose result is `result`."""
        point, scores = result.point(), result.scores()
        return cls(
            finished=result.finished,
            outcome=result.outcome,
            reason=result.reason,
            stop=result.stop,
            baseline=point.baseline,
            candidate=point.candidate,
            accepted=point.accepted,
            test_before=scores["test_before"],
            test_after=scores["test_after"],
            proposal_id=result.proposal,
            adopted=result.adopted,
            paired=short_text(result.paired),
            validated=result.validation.validated if result.validation else None,
            validation=result.validation.text() if result.validation else "",
        )


class PlanCounts(Record):
    """What a night's plan held, counted (`NightPlan.counts()`); all 0 before it was made."""

    sessions: int = 0  # sessions mined
    mined: int = 0  # recurring tasks mined
    tasks: dict[str, int] = Field(default_factory=dict)  # split → how many tasks (dreamed ones in "dream")


class NightSpend(Record):
    """What a night's model calls cost, from its ledger (`of()`)."""

    calls: int = 0  # calls that reached a backend
    cache_hits: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    @classmethod
    def of(cls, ledger: Ledger) -> NightSpend:
        return cls(
            calls=ledger.calls_made,
            cache_hits=ledger.cache_hits,
            tokens=ledger.spent_tokens,
            cost_usd=round(ledger.spent_usd, 6),
        )


_PARTS: dict[str, type[Record]] = {"end": NightEnd, "plan": PlanCounts, "spend": NightSpend}

# night.json's keys in the order every version wrote them: the record's own, and its parts' flat
NIGHT_JSON = (
    *("night", "started", "finished", "status", "pid", "harness", "skill_path", "skill_name", "managed", "dry_run"),
    *("outcome", "reason", "stop", "sessions", "mined", "tasks", "baseline", "candidate", "accepted"),
    *("test_before", "test_after", "proposal_id", "adopted", "steps", "log", "calls", "cache_hits", "tokens"),
    "cost_usd",
)
# keys added since, after those: written only when set, so a record without them is written back as it was
NIGHT_JSON_ADDED = ("paired", "validated", "validation")
_POSITION = {key: n for n, key in enumerate(NIGHT_JSON + NIGHT_JSON_ADDED)}  # a field not listed fails every save


class NightRecord(Record):
    """One night: which process runs it, the skill it trains, and its parts (see the module)."""

    night: int = Field(ge=1)
    started: UtcDatetime
    status: NightStatus = "running"
    pid: int | None = None  # the process running it (a "running" night whose process is gone died)
    harness: str
    skill_path: str  # the skill's key: its file, with "#Heading" for an AGENTS.md section
    skill_name: str = ""
    managed: bool = False  # the skill is skillsleep's managed learned skill
    dry_run: bool = False
    steps: int | None = None  # training steps planned tonight
    log: str | None = None  # where a detached night (`run --detach`) writes its output
    end: NightEnd = Field(default_factory=NightEnd)
    plan: PlanCounts = Field(default_factory=PlanCounts)
    spend: NightSpend = Field(default_factory=NightSpend)

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        """A flat record (night.json) with each part's keys put into that part."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for part, model in _PARTS.items():
            keys = [k for k in model.model_fields if k in out]
            if keys and part not in out:
                out[part] = {k: out.pop(k) for k in keys}
        return out

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The record as night.json holds it: flat, its keys in the order of `NIGHT_JSON`."""
        nested = handler(self)
        flat = {k: v for k, v in nested.items() if k not in _PARTS}
        for part in _PARTS:
            flat.update(nested[part])
        flat = {k: v for k, v in flat.items() if k not in NIGHT_JSON_ADDED or v not in ("", None)}
        return {k: flat[k] for k in sorted(flat, key=_POSITION.__getitem__)}

    def summarise(self, result: NightResult, plan: PlanCounts, spent: Ledger) -> NightRecord:
        """This night's record at its end: its result's end, what its plan held, what its ledger spent."""
        status: NightStatus = "stopped" if result.outcome == "stopped-early" else "finished"
        return self.model_copy(
            update={"status": status, "end": NightEnd.of(result), "plan": plan, "spend": NightSpend.of(spent)}
        )

    def point(self) -> HistoryPoint:
        """This night as a chart point (what its end kept of `NightResult.point()`)."""
        return HistoryPoint(
            night=self.night,
            date=self.started.date(),
            baseline=self.end.baseline,
            candidate=self.end.candidate,
            accepted=self.end.accepted and not self.dry_run,
            dry_run=self.dry_run,
        )
