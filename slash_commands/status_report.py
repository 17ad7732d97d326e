"""What `skillsleep status` reports (status_cmd.py is its click command and text; agent_md.py its
markdown): `StatusResult`, read from the data folder by `status()` — nights, gate history, pending
proposals, recent actions, last harvest, spend, schedule, the harness, model and token cap of the
next night and why (next_night.py), problems. It only reads: it needs no config file (one it cannot
read is one of the problems), no backend and no lock, and works on an empty data directory."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, ValidationError, model_serializer

from skillsleep.core.models.ledger import Ledger
from skillsleep.core.night.fanout_record import FanoutResult, newest_fanout
from skillsleep.core.night.nights import NightProgress, Nights, month_start
from skillsleep.core.night.record import NightEnd, NightRecord
from skillsleep.core.night.record import NightSpend as RecordSpend
from skillsleep.core.report.evidence import label_text
from skillsleep.core.report.proposal_record import Action, Proposal, file_hash
from skillsleep.core.report.proposal_skills import Found, ProposalSkill, pending_skills
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.wording import no_agent_reads
from skillsleep.core.shared.errors import ConfigError, SkillsleepError
from skillsleep.core.shared.records import Record
from skillsleep.slash_commands.cron_log import LastRun, last_run
from skillsleep.slash_commands.harvester import LAST_HARVEST, LastHarvest
from skillsleep.slash_commands.liveness import night_state
from skillsleep.slash_commands.next_night import NextNight
from skillsleep.slash_commands.night_job import Scheduled

__all__ = ["StatusResult", "next_commands", "status"]

RECENT_NIGHTS = 5  # nights shown in detail
GATE_HISTORY = 10  # nights on the gate history
# a recent night's end, in the order `status --json` printed its keys before NightSeen held a NightEnd
_END_KEYS = (
    "outcome",
    "baseline",
    "candidate",
    "accepted",
    "reason",
    "test_before",
    "test_after",
    "proposal_id",
    "adopted",
    "stop",
    "paired",
    "validated",
    "validation",
)
RECENT_ACTIONS = 10  # lines of the action history


class NightSeen(Record):
    """One recent night as `status` shows it: its record's own facts, how it ended (its `NightEnd`),
    what it spent by its own ledger, and a running night's progress. Printed flat (`_printed`), in
    the key order `status --json` always had."""

    night: int
    date: str
    started: str
    status: str  # running, finished, stopped, or died (night_state())
    pid: int | None
    harness: str
    skill: str
    skill_path: str
    dry_run: bool
    end: NightEnd
    spend: RecordSpend
    log: str | None
    progress: NightProgress | None

    @classmethod
    def of(cls, r: NightRecord, spent: Ledger, nights: Nights) -> NightSeen:
        """Night `r`; its spend from its own ledger (the record misses a killed process's), a
        running one's progress from the files it writes as it goes."""
        state = night_state(r)
        return cls(
            night=r.night,
            date=r.started.date().isoformat(),
            started=r.started.isoformat(),
            status=state,
            pid=r.pid,
            harness=r.harness,
            skill=r.skill_name or r.skill_path,
            skill_path=r.skill_path,
            dry_run=r.dry_run,
            end=r.end,
            spend=RecordSpend.of(spent),
            log=r.log,
            progress=nights.progress(r) if state == "running" else None,
        )

    @model_serializer(mode="wrap")
    def _printed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        part, end = handler(self), self.end
        own = {k: part[k] for k in ("night", "date", "started")}
        own["finished"] = end.finished.isoformat() if end.finished else None
        own |= {k: part[k] for k in ("status", "pid", "harness", "skill", "skill_path", "dry_run")}
        ended = {k: part["end"][k] for k in _END_KEYS}
        return {**own, **ended, **part["spend"], "log": self.log, "progress": part["progress"]}


class NightsSeen(Record):
    count: int  # every night recorded
    recent: list[NightSeen]  # the last RECENT_NIGHTS


def held_out(end: NightEnd | None) -> dict[str, Any]:
    """The held-out evidence a night recorded beside its gate (`NightEnd`: the paired difference in
    short, the label and its reason), as the gate history and a pending proposal show it; nothing
    for a night recorded before it was kept, or without a gate decision."""
    if end is None:
        return {}
    label = label_text(end.validated, end.outcome, end.validation)
    return {"paired": end.paired, "validated": end.validated, "validation": end.validation, "label": label}


class GateVerdict(Record):
    """A night's line on the gate history: held-out baseline → candidate, and the verdict; beside it
    the night's held-out evidence (`held_out()`)."""

    night: int
    date: str
    skill: str
    baseline: float | None
    candidate: float | None
    accepted: bool
    dry_run: bool
    reason: str
    paired: str = ""  # "+0.31 [0.12, 0.50], p = 0.008, 6 tasks × 1 sample" ("" : none recorded)
    validated: bool | None = None  # None: no gate decision, or a night recorded before the label
    validation: str = ""  # the label with its reason
    label: str = Field(default="", exclude=True)  # the label as status shows it (`label_text`)


class PendingProposal(Record):
    """A staged proposal: its verdict and scores, the held-out evidence of the night that staged it
    (`held_out()`), whether the live file changed since, what to type."""

    id: str
    created: str
    skill_path: str
    skill: str  # its skill's name (core/report/proposal_skills.py): what `adopt SKILL` takes
    night: int | None
    accepted: bool
    reason: str
    baseline: float | None
    candidate: float | None
    test_before: float | None
    test_after: float | None
    live_changed: bool
    next: list[str]  # the commands: diff, adopt, reject
    note: str  # "" or why no agent reads this skill
    paired: str = ""  # as GateVerdict's: from the record of the night that staged it
    validated: bool | None = None
    validation: str = ""
    label: str = Field(default="", exclude=True)

    @classmethod
    def of(cls, p: Proposal, skill: ProposalSkill, staged_by: NightEnd | None = None) -> PendingProposal:
        """`p` of `skill`, with the held-out evidence of `staged_by`, the end of the night that staged it."""
        return cls(
            id=p.id,
            created=p.created.isoformat(),
            skill_path=p.skill_path,
            skill=skill.name,
            night=p.night,
            accepted=p.accepted,
            reason=p.reason,
            baseline=p.baseline_score,
            candidate=p.candidate_score,
            test_before=p.test_before,
            test_after=p.test_after,
            live_changed=file_hash(Path(p.skill_path)) != p.base_hash,
            next=next_commands(p),
            note=no_agent_reads(str(p.details.get("harness", "")), bool(p.details.get("managed"))),
            **held_out(staged_by),
        )


class NightSpend(Record):
    night: int
    tokens: int
    cost_usd: float


class MonthSpend(Record):
    since: str
    tokens: int
    cost_usd: float


class Spend(Record):
    night: NightSpend | None  # the newest night's
    month: MonthSpend


class ScheduleSeen(Record):
    scheduled: list[Scheduled]  # the crontab, systemd timers, OpenClaw's cron: read, never written
    last_run: LastRun | None  # what the newest cron log says


class FanoutSeen(Record):
    """The newest night when it trained several skills (a fan-out, core/night/fanout_record.py): its
    record, with only the named skill's row for `status SKILL`, and its combined report."""

    summary: FanoutResult
    report: str  # the combined report.html


class StatusResult(Record):
    """What `skillsleep status` prints (`--json`), and its text and markdown are rendered from;
    `fanout` only when the newest night was a fan-out (else the key is left out, as it always was)."""

    data_dir: str
    nights: NightsSeen
    gate_history: list[GateVerdict]
    pending: list[PendingProposal]
    actions: list[Action]
    last_harvest: LastHarvest | None
    spend: Spend
    schedule: ScheduleSeen
    next_night: NextNight | None  # the harness, model and token cap a night started now would use, and why
    problems: list[str]
    fanout: FanoutSeen | None = None

    @model_serializer(mode="wrap")
    def _printed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if out.get("fanout", "") is None:
            del out["fanout"]
        return out


def next_commands(p: Proposal) -> list[str]:
    """What the user can type about a pending proposal."""
    adopt = f"skillsleep adopt {p.id}" + ("" if p.accepted else " --force")
    return [f"skillsleep diff {p.id}", adopt, f"skillsleep reject {p.id}"]


def _last_harvest(problems: list[str]) -> LastHarvest | None:
    from skillsleep.core.models.store import Store
    from skillsleep.slash_commands.wiring import state_db

    db = state_db()
    if not db.is_file():  # never create the state database just to look at it
        return None
    try:
        store = Store(db, readonly=True)
        try:
            raw = store.meta(LAST_HARVEST)
        finally:
            store.close()
    except SkillsleepError as exc:  # a damaged or unusable database is one of the problems status lists
        problems.append(str(exc))
        return None
    if raw is None:
        return None
    try:
        return LastHarvest.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        problems.append(f"the last harvest's record in {db} cannot be read; the next `skillsleep harvest` rewrites it")
        return None


def _gate_history(records: list[NightRecord]) -> list[GateVerdict]:
    return [
        GateVerdict(
            night=r.night,
            date=r.started.date().isoformat(),
            skill=r.skill_name or r.skill_path,
            baseline=r.end.baseline,
            candidate=r.end.candidate,
            accepted=r.end.accepted,
            dry_run=r.dry_run,
            reason=r.end.reason,
            **held_out(r.end),
        )
        for r in records
        if r.status != "running"
    ][-GATE_HISTORY:]


def _staged_by(p: Proposal, records: list[NightRecord]) -> NightEnd | None:
    """The end of the night that staged `p` (None: staged outside a night, or its record is gone)."""
    return next((r.end for r in records if r.night == p.night and r.end.proposal_id == p.id), None)


def _next_night(problems: list[str]) -> NextNight | None:
    """What a night started now would use; a setting it cannot read is one of the problems (a
    config file that is not there is none: status needs none)."""
    from skillsleep.core.night.user_config import UserConfig
    from skillsleep.slash_commands.next_night import next_night
    from skillsleep.slash_commands.wiring import config_file, sleep_settings, user_config

    try:
        where = config_file()
        return next_night(sleep_settings(cfg=user_config(where) if where.exists else UserConfig()))
    except SkillsleepError as exc:
        problems.append(f"the next night's settings: {exc}")
        return None


def _fanout(root: Path, records: list[NightRecord], problems: list[str]) -> FanoutSeen | None:
    """The newest fan-out when it is the newest night: it ran the newest night recorded, or ran none
    (no skill trained) and began after it."""
    newest = newest_fanout(root, problems)
    if newest is None:
        return None
    f, folder = newest
    last = records[-1] if records else None
    if last is not None and last.night not in f.nights() and f.started < last.started:
        return None
    return FanoutSeen(summary=f, report=str(folder / "report.html"))


def _skill_rows(seen: FanoutSeen | None, name: str, files: set[str]) -> FanoutSeen | None:
    """`status SKILL`: the fan-out with that skill's row only (None: it has none)."""
    if seen is None:
        return None
    rows = [r for r in seen.summary.rows if r.skill_name == name or r.skill_path in files]
    return seen.model_copy(update={"summary": seen.summary.model_copy(update={"rows": rows})}) if rows else None


def _one_skill(
    name: str, found: Found, records: list[NightRecord], actions: list[Action], fanned: set[str]
) -> tuple[Found, list[NightRecord], list[Action]]:
    """`status SKILL`: the proposals, nights and actions of the skill called `name` (its nights by the
    name they record, or by its file); a name none of them has is a ConfigError naming the skills
    with pending proposals."""
    mine = [(p, s) for p, s in found if s.answers_to(name)]
    files = {s.path for _, s in mine}
    nights = [r for r in records if r.skill_name == name or r.skill_path in files]
    if not mine and not nights and name not in fanned:  # `fanned`: the skills of the newest fan-out
        raise ConfigError(
            f"no proposal or night of a skill called {name!r} is recorded; skills with pending proposals: "
            f"{pending_skills(found)}"
        )
    files |= {r.skill_path for r in nights}
    return mine, nights, [a for a in actions if a.skill_path in files]


def status(data: Path | None = None, *, now: datetime | None = None, skill: str | None = None) -> StatusResult:
    """Nights, gate history, pending proposals, recent actions, last harvest, spend, problems; with
    `skill`, the nights, proposals and actions of that skill only."""
    from skillsleep.slash_commands.schedulers import installed
    from skillsleep.slash_commands.wiring import data_dir

    root = Path(data) if data is not None else data_dir()
    nights, props = Nights(root), Proposals(root)
    records = nights.list()
    problems = list(nights.problems) + nights.memory_problems()
    proposals = props.list()
    problems += props.problems
    actions = props.history()
    problems += props.history_problems()
    found = props.with_skills([p for p in proposals if p.status == "staged"])
    fanout = _fanout(root, records, problems)
    if skill is not None:
        fanned = {r.skill_name for r in fanout.summary.rows} if fanout else set()
        found, records, actions = _one_skill(skill, found, records, actions, fanned)
        fanout = _skill_rows(fanout, skill, {s.path for _, s in found} | {r.skill_path for r in records})
    month = month_start(now)
    month_tokens, month_cost = nights.spend_since(month)
    recent = [NightSeen.of(r, nights.ledger(r.night), nights) for r in records[-RECENT_NIGHTS:]]
    scheduled, schedule_problems = installed()  # the crontab, systemd timers: read, never written
    problems += schedule_problems
    last = recent[-1] if recent else None
    return StatusResult(
        data_dir=str(root),
        nights=NightsSeen(count=len(records), recent=recent),
        gate_history=_gate_history(records),
        pending=[PendingProposal.of(p, s, _staged_by(p, records)) for p, s in found],
        actions=actions[-RECENT_ACTIONS:],
        last_harvest=_last_harvest(problems),
        spend=Spend(
            night=NightSpend(night=last.night, tokens=last.spend.tokens, cost_usd=last.spend.cost_usd)
            if last
            else None,
            month=MonthSpend(since=month.isoformat(), tokens=month_tokens, cost_usd=float(month_cost)),
        ),
        schedule=ScheduleSeen(scheduled=scheduled, last_run=last_run(root)),
        next_night=_next_night(problems),
        problems=problems,
        fanout=fanout,
    )
