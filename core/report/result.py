"""A night's result: the one record (`NightResult`) every renderer reads and the store summarises.

    report_markdown.render_markdown(r)  what an agent shows after `/sleep` (and report.md)
    report_files.render_json(r)         the record as JSON with a top-level "version" (report.json)
    report_html.render_html(r)          ONE self-contained page for a person (report.html)
    report_files.report_files(r)        all three, keyed by file name, for `Proposals.stage(files=...)`

A report is written for every night, including one that stopped early (budget reached, model
server down): it then says why it stopped and what to do. Every report says whether the live
skill was changed: only `adopt` writes it, in a night `--auto-adopt` after an accepted gate (the
report is then written again, saying so). Task prompts, edits, reasons and the diff come from the
user's transcripts or from a model, so they are untrusted: the renderers escape every piece of
such text (see each renderer).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from skillsleep.core.models.ledger import RoleUsage
from skillsleep.core.report.changes import Change
from skillsleep.core.report.evidence import Validation
from skillsleep.core.shared.errors import BackendError, BudgetExceeded, ExecutorLost
from skillsleep.core.shared.records import Edit, GateDecision, Record, Split, Strategy, Task
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.paired import PairedComparison

REPORT_VERSION = 1  # of report.json; the HTML page names it too

Outcome = Literal["accepted", "rejected", "no-candidate", "stopped-early"]


class MemberRequest(Record):
    """One distinct request of a mined task (as harvested, redacted) and how often it was given."""

    text: str
    times: int = Field(default=1, ge=1)


class ReportTask(Record):
    """A task the night used: what it asks (short), where it went, how often it recurred; a mined
    task also with its distinct member requests (most frequent first) and its sessions."""

    id: str
    intent: str
    split: Split | None = None
    recurrence: int = Field(default=1, ge=1)
    origin: Literal["real", "dream"] = "real"
    grounding: Literal["evidence", "outcome-signals"] | None = None  # what its judge is built from
    requests: list[MemberRequest] = Field(default_factory=list)
    more_requests: int = Field(default=0, ge=0)  # distinct requests beyond those listed
    sessions: int = Field(default=0, ge=0)  # distinct sessions it was asked in (0: not known)

    @classmethod
    def from_task(cls, task: Task, *, recurrence: int = 1) -> ReportTask:
        return cls(
            id=task.id,
            intent=short(task.prompt),
            split=task.split,
            recurrence=recurrence,
            origin=task.origin,
            grounding=task.judge.grounding,
        )


class NightUsage(Record):
    """Calls, tokens and cost by role."""

    by_role: dict[str, RoleUsage] = Field(default_factory=dict)

    @classmethod
    def from_ledger(cls, by_role: Mapping[str, Mapping[str, float]]) -> NightUsage:
        """From `Ledger.by_role()`."""
        fields = RoleUsage.model_fields
        return cls(
            by_role={
                role: RoleUsage.model_validate(
                    {k: (float(v) if k == "cost_usd" else int(v)) for k, v in row.items() if k in fields}
                )
                for role, row in by_role.items()
            }
        )

    def total(self) -> RoleUsage:
        rows = self.by_role.values()
        return RoleUsage.model_validate({k: sum(getattr(r, k) for r in rows) for k in RoleUsage.model_fields})


class StopReason(Record):
    """Why a night ended early, and what the user can do about it."""

    kind: Literal["budget", "backend", "interrupted", "error"]
    message: str
    advice: str

    @classmethod
    def from_error(cls, exc: BaseException) -> StopReason:
        message = str(exc) or type(exc).__name__
        if isinstance(exc, BudgetExceeded):
            return cls(
                kind="budget",
                message=message,
                advice="Raise the budget (--budget-tokens / --budget-usd) or let the next night go on; "
                "what was measured tonight is kept.",
            )
        if isinstance(exc, ExecutorLost):
            return cls(
                kind="backend",
                message=message,
                advice="Start the Ray cluster again (or pass --executor local), then run `skillsleep run` again; "
                "the rollouts already finished are not repaid.",
            )
        if isinstance(exc, BackendError):
            return cls(
                kind="backend",
                message=message,
                advice="Check that the model server is running and reachable (`skillsleep backends` "
                "lists the configured ones), then run `skillsleep run` again.",
            )
        if isinstance(exc, KeyboardInterrupt):
            return cls(
                kind="interrupted",
                message="the night was interrupted",
                advice="Run `skillsleep run` again when you are ready.",
            )
        return cls(
            kind="error",
            message=f"{type(exc).__name__}: {message}",
            advice="Run `skillsleep run` again; if it fails the same way, report it with this file.",
        )


class SplitResult(Record):
    """A split's mean score with the live skill (before) and with the candidate (after)."""

    before: float
    after: float
    tasks: int = Field(default=0, ge=0)


class HistoryPoint(Record):
    """One night on the chart: a view of its `NightResult` (`NightResult.point()`), kept in the
    night's record and in the next nights' reports."""

    night: int
    date: dt.date
    baseline: float | None = None
    candidate: float | None = None
    accepted: bool = False  # the gate accepted it and it was not a dry run
    dry_run: bool = False  # a dry run: nothing was staged or remembered, whatever the gate said


class NightResult(Record):
    """One night's result: everything its report shows (report.json is this record), and what
    became of it after the report was written (not in report.json). The end its night's record
    keeps (`NightEnd.of`, core/night/record.py), what `run --json` prints (`RunSummary`), a
    proposal's scores (`scores()`) and a chart point (`point()`) are derived from it."""

    night: int = Field(ge=1)
    started: AwareDatetime
    finished: AwareDatetime
    harness: str
    skill_path: str
    skill_name: str
    managed: bool = False  # the skill is skillsleep's managed learned skill
    outcome: Outcome
    reason: str
    dry_run: bool = False  # `--dry-run`: nothing staged, no chat log, nothing remembered
    requires: str = ""  # what the gate requires of a candidate, in words ("" when it was not set up)
    stop: StopReason | None = None
    baseline: float | None = None  # the live skill's held-out score when no candidate reached the gate
    gate: GateDecision | None = None
    test: SplitResult | None = None
    # beside the gate (report/evidence.py): the held-out paired difference, candidate − live skill, and
    # the label ("validated" or "suggestion — not validated"); absent in a report.json written before them
    paired: PairedComparison | None = None
    validation: Validation | None = None
    tasks: list[ReportTask] = Field(default_factory=list)
    accepted_edits: list[Edit] = Field(default_factory=list)
    kept_strategies: list[Strategy] = Field(default_factory=list)  # with several candidates: each kept one's
    # by the gate, with its reason and scores; stage "ignored": applied, the target did not follow it
    rejected_edits: list[RejectedEdit] = Field(default_factory=list)
    refused_edits: list[RejectedEdit] = Field(default_factory=list)  # by the safety screen
    diff: str = ""
    changes: list[Change] = Field(default_factory=list)  # the diff's changes, numbered as `adopt --edits` takes them
    usage: NightUsage = Field(default_factory=NightUsage)
    history: list[HistoryPoint] = Field(default_factory=list)  # previous nights
    problems: list[str] = Field(default_factory=list)  # model replies that could not be used, and what was done
    # what auto-adopt did after the report was first written (the report is written again with it)
    adopted: bool = False  # put live by auto-adopt
    adopt_error: str = ""  # why auto-adopt did not put it live
    # what became of the night after its report was written
    resumed: bool = Field(default=False, exclude=True)  # it went on from a night that stopped
    proposal: str | None = Field(default=None, exclude=True)  # the proposal staged (or already pending)

    @field_validator("started", "finished")
    @classmethod
    def _utc(cls, value: dt.datetime) -> dt.datetime:
        return value.astimezone(dt.UTC)

    @model_validator(mode="after")
    def _consistent(self) -> NightResult:
        gated = ("gate", "ignored")
        if any(e.stage not in gated for e in self.rejected_edits) or any(
            e.stage != "safety" for e in self.refused_edits
        ):
            raise ValueError(
                "`rejected_edits` are the gate's rejections (those the target ignored among them) and "
                "`refused_edits` the safety screen's refusals"
            )
        if (self.outcome == "stopped-early") != (self.stop is not None):
            raise ValueError("a stopped-early night needs `stop` (why and what to do), and only it has one")
        if self.outcome in ("accepted", "rejected"):
            if self.gate is None:
                raise ValueError(f"an {self.outcome} night needs the gate decision")
            if self.gate.accepted != (self.outcome == "accepted"):
                raise ValueError(
                    f"outcome {self.outcome!r} contradicts the gate decision (accepted={self.gate.accepted})"
                )
        return self

    def baseline_score(self) -> float | None:
        return self.gate.baseline if self.gate else self.baseline

    def scores(self) -> dict[str, float | None]:
        """The held-out and test scores a proposal of this night carries."""
        gate, test = self.gate, self.test
        return {
            "baseline_score": gate.baseline if gate else None,
            "candidate_score": gate.candidate if gate else None,
            "test_before": test.before if test else None,
            "test_after": test.after if test else None,
        }

    def point(self) -> HistoryPoint:
        """This night as a chart point."""
        return HistoryPoint(
            night=self.night,
            date=self.started.date(),
            baseline=self.baseline_score(),
            candidate=self.scores()["candidate_score"],
            accepted=self.outcome == "accepted" and not self.dry_run,
            dry_run=self.dry_run,
        )


def chart_points(r: NightResult) -> list[HistoryPoint]:
    """Previous nights plus this one, by night (this night replaces a history point with its number)."""
    points = {p.night: p for p in r.history}
    points[r.night] = r.point()
    return [points[n] for n in sorted(points)]


def short(text: str, limit: int = 120) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class NightInterrupted(KeyboardInterrupt):
    """Ctrl-C in a night, raised again once the night was recorded as stopped; `result` is what it
    did until then (a fan-out lists it, core/night/fanout_run.py). It is a KeyboardInterrupt: the
    CLI exits as for any interrupt."""

    def __init__(self, result: NightResult) -> None:
        super().__init__()
        self.result = result
