"""A night that trains several skills (a fan-out): one `run_night` a skill, each on the sessions of
its group and with its share of the budget (core/night/fanout.py holds the rules), then one
combined summary, `FanoutResult`, written as `<data>/fanouts/<NNNN>/` (fanout.json and the
combined report files, core/night/fanout_report.py). Each skill's night keeps its own folder, files,
memory, resume and proposal, exactly as a one-skill night's.

A skill whose night hits its share stops as a budget-stopped night does (its state kept, the next
night resumes it) and the skills after it still run with theirs; a stop for another cause (the
model server, Ctrl-C) ends the fan-out: the skills not reached are listed as not run. Ctrl-C still
writes the combined summary (that skill's night as stopped, the rest not run), then is raised again.
"""

from __future__ import annotations

from pathlib import Path

from skillsleep.core.models.rundir import RunDir
from skillsleep.core.night.cycle import run_night
from skillsleep.core.night.deps import NightDeps
from skillsleep.core.night.fanout import Group, Share, needs, next_share
from skillsleep.core.night.fanout_record import FanoutResult, RowStatus, SkillRow
from skillsleep.core.night.fanout_report import write_fanout
from skillsleep.core.night.record import NightRecord
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.result import NightInterrupted, NightResult
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.train.config import BudgetSection

__all__ = ["fanout_folder", "run_fanout"]


INTERRUPTED = "interrupted (Ctrl-C); the next `skillsleep run` resumes it"


def fanout_folder(data: Path, number: int) -> Path:
    return data / "fanouts" / f"{number:04d}"


def _next_number(data: Path) -> int:
    root = data / "fanouts"
    found = [int(p.name) for p in root.iterdir() if p.name.isdigit()] if root.is_dir() else []
    return max(found, default=0) + 1


async def run_fanout(
    settings: SleepSection, groups: list[Group], deps: NightDeps, data: Path, *, dry_run: bool = False
) -> tuple[FanoutResult, list[NightResult]]:
    """Train each selected group with enough sessions, most sessions first, sharing the cap; the
    combined result (written under `data`/fanouts) and the nights' results, in the order they ran."""
    started, need = deps.clock(), needs(settings)
    cap = BudgetSection(tokens=settings.budget_tokens, usd=settings.budget_usd).to_budget()
    ready = [g for g in groups if g.selected and len(g.sessions) >= need]
    broken = {g.skill.key(): why for g in ready if (why := _unreadable(g))}  # e.g. unpaired region markers
    trained = sorted((g for g in ready if g.skill.key() not in broken), key=lambda g: (-len(g.sessions), g.skill.name))
    rows, results = [], []
    spent, waiting = (0, 0.0), sum(len(g.sessions) for g in trained)
    deps = _one_log(deps)
    ended: str = ""
    interrupted: KeyboardInterrupt | None = None
    for group in trained:
        share = next_share(cap, spent, len(group.sessions), waiting, len(trained))
        waiting -= len(group.sessions)
        row = _row(group, "trained", share=share)
        if ended or share.empty():
            why = ended or "the night's budget was spent before its turn"
            rows.append(row.model_copy(update={"status": "not-run", "reason": why}))
            continue
        result, stop = await _one_night(settings, group, deps, dry_run, share)
        interrupted = stop or interrupted
        if result is None:  # Ctrl-C before its night was recorded
            ended = f"the night was interrupted at {group.skill.name}, before its night began"
            rows.append(row.model_copy(update={"status": "not-run", "reason": ended}))
            continue
        spent = (spent[0] + share.spent_tokens, spent[1] + share.spent_usd)
        results.append(result)
        rows.append(_ran(row, result, share, deps))
        if result.stop is not None and result.stop.kind != "budget":
            ended = f"the night stopped at {group.skill.name}: {result.stop.message}"
    rows += [_row(g, "not-run", reason=broken[g.skill.key()]) for g in ready if g.skill.key() in broken]
    rows += [
        _row(g, "not-enough-evidence", reason=_too_few(len(g.sessions), need))
        for g in groups
        if g.selected and len(g.sessions) < need
    ]
    rows += [
        _row(g, "not-selected", reason="not among the skills chosen (--skills, [sleep] skills)")
        for g in groups
        if not g.selected
    ]
    fanout = FanoutResult(
        fanout=_next_number(data),
        started=started,
        finished=deps.clock(),
        dry_run=dry_run,
        cap_tokens=cap.tokens,
        cap_usd=cap.usd,
        needs=need,
        rows=rows,
    )
    write_fanout(fanout_folder(data, fanout.fanout), fanout, results)
    if interrupted is not None:  # the summary is written: exit as an interrupted night does
        raise interrupted
    return fanout, results


async def _one_night(
    settings: SleepSection, group: Group, deps: NightDeps, dry_run: bool, share: Share
) -> tuple[NightResult | None, KeyboardInterrupt | None]:
    """The night of `group`'s skill, and the Ctrl-C that ended it (raised again once the summary is
    written): its result as it stopped, or None when it came before the night was recorded."""
    try:
        return await run_night(
            settings, group.skill, deps, dry_run=dry_run, only=frozenset(group.sessions), share=share
        ), None
    except NightInterrupted as exc:
        return exc.result, exc
    except KeyboardInterrupt as exc:
        return None, exc


def _unreadable(group: Group) -> str:
    """Why the group's skill cannot be trained as it is now ("" when it can): its night would stop
    before it starts, so it is listed instead and the other skills still run."""
    try:
        group.skill.live_text()
        group.skill.read()
    except ConfigError as exc:
        return f"its skill cannot be trained as it is: {exc}"
    return ""


def _too_few(sessions: int, need: int) -> str:
    return f"not enough evidence ({sessions} session{'s' if sessions != 1 else ''}; needs {need})"


def _row(group: Group, status: RowStatus, *, share: Share | None = None, reason: str = "") -> SkillRow:
    return SkillRow(
        skill_name=group.skill.name,
        skill_path=group.skill.key(),
        managed=group.skill.managed,
        sessions=len(group.sessions),
        status=status,
        reason=reason,
        share_tokens=share.tokens if share else None,
        share_usd=share.usd if share else None,
    )


def _ran(row: SkillRow, result: NightResult, share: Share, deps: NightDeps) -> SkillRow:
    """The row of a skill whose night ran: its night, spend, outcome and proposal; a night whose
    plan came out not ready is listed as not enough evidence, with why and what it spent."""
    plan = RunDir(deps.nights.folder(result.night)).load("plan.json", NightPlan)
    not_ready = plan is not None and bool(plan.not_ready) and result.stop is None
    interrupted = result.stop is not None and result.stop.kind == "interrupted"
    return row.model_copy(
        update={
            "status": "not-enough-evidence" if not_ready else "trained",
            "reason": plan.not_ready if plan is not None and not_ready else (INTERRUPTED if interrupted else ""),
            "night": result.night,
            "spent_tokens": share.spent_tokens,
            "spent_usd": share.spent_usd,
            "outcome": result.outcome,
            "proposal": result.proposal,
        }
    )


def _one_log(deps: NightDeps) -> NightDeps:
    """The deps for every skill's night: `on_start` (a detached night claiming its log) runs for the
    first night; the others name the same log."""
    first = deps.on_start
    if first is None:
        return deps
    claimed: list[NightRecord] = []

    def on_start(record: NightRecord) -> NightRecord:
        if not claimed:
            claimed.append(first(record))
            return claimed[0]
        return record.model_copy(update={"log": claimed[0].log})

    return deps.model_copy(update={"on_start": on_start})
