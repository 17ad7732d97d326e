"""One night as `skillsleep run` starts it (run_cmd.py is its click command, detach.py its
background form): layer the `[sleep]` settings, hold the state lock, harvest new sessions, build
the night's objects (store, nights, proposals, the models and harness factories, the live skill)
and hand them to core's `run_night` (core/night/cycle.py); what comes back is summarised for `--json`
and rendered as text and markdown.

The live skill is written only by `adopt` (in a night: --auto-adopt after an accepted gate).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from skillsleep.core.harvest.harvester import HarvestReport
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.models.store import Store
from skillsleep.core.night.cycle import run_night
from skillsleep.core.night.deps import NightDeps, NightModels
from skillsleep.core.night.lock import StateLock
from skillsleep.core.night.nights import NightRecord, Nights
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.files import REPORT_FILES
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.result import NightResult, NightUsage, Outcome, RoleUsage, SplitResult, StopReason
from skillsleep.core.shared.events import EventSink, HarvestDone, HarvestStarted, Notice
from skillsleep.core.shared.records import Record, Split
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.skills import SkillTarget, resolve_skill
from skillsleep.slash_commands.harvester import chat_folders, run_harvest
from skillsleep.slash_commands.runtime import (
    RUN,
    Models,
    agent_harness,
    check_night,
    check_night_backends,
    open_executor,
)
from skillsleep.slash_commands.wiring import (
    SLEEP_ENVS,
    SLEEP_FLAGS,
    chat_log_dir,
    data_dir,
    effective_settings,
    state_db,
    user_config,
)


def run_sleep(
    flags: Mapping[str, object | None],
    *,
    dry_run: bool,
    on_event: EventSink,
    chat_dirs: Sequence[Path] = (),
    on_start: Callable[[NightRecord], NightRecord] | None = None,
    executor: str | None = None,
) -> RunSummary:
    """One night with the settings layered flag > env > file > default; returns the summary.
    `executor` is `--executor` (None: config.toml's `[executor]`): where the rollouts run.
    `chat_dirs` are the `--chat-dir` folders (empty: the environment's or the config file's);
    `on_start` may amend the night's record before it is first written (a detached night's log)."""
    settings = check_night(flags)
    check_night_backends(settings)  # a missing API key fails now, before the harvest
    with StateLock(data_dir(), RUN):
        return asyncio.run(
            _night(
                settings,
                dry_run=dry_run,
                on_event=on_event,
                chat_dirs=chat_dirs,
                on_start=on_start,
                executor=executor,
            )
        )


def _retry_advice(_role: str) -> str:
    keys = ("retries", "call_timeout")
    flags, envs = [SLEEP_FLAGS[k] for k in keys], [SLEEP_ENVS[k] for k in keys]
    return (
        f"allow more with {flags[0]} / {flags[1]} ([sleep] retries / call_timeout in config.toml, "
        f"or {envs[0]} / {envs[1]})"
    )


def _harness(s: SleepSection, models: NightModels, on_event: EventSink, *, dry_run: bool) -> tuple[Any, str, float]:
    if s.harness == "chat":  # a dry run leaves no chat log behind
        harness = ChatHarness(
            models.target,
            log_dir=None if dry_run else chat_log_dir(),
            on_log_error=lambda text: on_event(Notice(text=text)),
        )
        return harness, models.target.label, s.call_timeout
    # --base-url is the backend's server; an agent's own server is `base_url` in [harness.<name>]
    return agent_harness(s.harness, target_model=s.target_model, base_url=None)


async def _night(
    s: SleepSection,
    *,
    dry_run: bool,
    on_event: EventSink,
    chat_dirs: Sequence[Path],
    on_start: Callable[[NightRecord], NightRecord] | None,
    executor: str | None,
) -> RunSummary:
    data = data_dir()
    eff = effective_settings(chat_dirs)
    folders = chat_folders(eff)
    home = Path(os.environ.get("HOME") or Path.home())
    target = resolve_skill(s.skill, harness=s.harness, home=home, cwd=Path.cwd(), data_dir=data, env=os.environ)
    on_event(HarvestStarted())
    patterns = tuple(eff.harvest.redact_patterns.value)
    harvested = run_harvest(None, None, patterns, folders)
    on_event(HarvestDone(sessions=harvested.sessions, errors=harvested.errors))
    runner = open_executor(executor, on_event=on_event)
    store = Store(state_db())
    nights = Nights(data)
    deps = NightDeps(
        nights=nights,
        proposals=Proposals(data),
        store=store,
        open_models=lambda cfg, ledger, run_id: Models(
            cfg, ledger, store, run_id=run_id, on_event=on_event, retry_advice=_retry_advice
        ),
        open_harness=lambda models: _harness(s, models, on_event, dry_run=dry_run),
        clock=lambda: datetime.now(UTC),
        pid=os.getpid(),
        redact_patterns=patterns,
        on_event=on_event,
        on_start=on_start,
        executor=runner,
        prices=user_config().prices,
    )
    try:
        result = await run_night(s, target, deps, dry_run=dry_run)
    finally:
        await runner.aclose()
        store.close()
    return RunSummary.of(result, nights, target, harvested, dry_run=dry_run)


class SkillSummary(Record):
    """The skill a night trained, as `run --json` names it."""

    path: str
    section: str | None
    name: str
    managed: bool


class HarvestSummary(Record):
    """What the night's harvest found: sessions by harness, errors, what could not be read."""

    sessions: dict[str, int] = Field(default_factory=dict)
    errors: int = 0
    unreadable: list[str] = Field(default_factory=list)


class RunSummary(Record):
    """What `skillsleep run --json` prints (and the text and markdown are rendered from): the night's
    result, with the record, plan and ledger the night keeps in its folder (`of()`)."""

    night: int
    outcome: Outcome
    reason: str
    stop: StopReason | None
    skill: SkillSummary
    harness: str
    dry_run: bool
    resumed: bool
    harvest: HarvestSummary
    sessions: int
    recurring_tasks: int
    tasks: dict[str, int]
    unrelated: list[str]
    splits: dict[str, Split]
    baseline: float | None
    candidate: float | None
    test: SplitResult | None
    accepted_edits: int
    rejected_edits: int
    refused_edits: list[str]
    proposal: str | None
    adopted: bool
    adopt_error: str | None
    report: dict[str, str]  # file name → path
    problems: list[str]
    calls_made: int
    cache_hits: int
    tokens: int
    cost_usd: float
    calls_by_role: dict[str, RoleUsage]
    markdown: str

    @classmethod
    def of(
        cls, result: NightResult, nights: Nights, target: SkillTarget, harvested: HarvestReport, *, dry_run: bool
    ) -> RunSummary:
        """The summary of night `result` of `target`, after `harvested` (`run_harvest()`'s report)."""
        record, folder = nights.get(result.night), nights.folder(result.night)
        plan = RunDir(folder).load("plan.json", NightPlan)
        return cls(
            night=result.night,
            outcome=result.outcome,
            reason=result.reason,
            stop=result.stop,
            skill=SkillSummary(path=str(target.path), section=target.section, name=target.name, managed=target.managed),
            harness=result.harness,
            dry_run=dry_run,
            resumed=result.resumed,
            harvest=HarvestSummary(
                sessions=harvested.sessions, errors=harvested.errors, unreadable=harvested.unreadable
            ),
            sessions=record.sessions,
            recurring_tasks=record.mined,
            tasks=record.tasks,
            unrelated=plan.unrelated if plan else [],
            splits=plan.splits if plan else {},
            baseline=record.baseline,
            candidate=record.candidate,
            test=result.test,
            accepted_edits=len(result.accepted_edits),
            rejected_edits=len(result.rejected_edits),
            refused_edits=[r.reason() for r in result.refused_edits],
            proposal=result.proposal,
            adopted=result.adopted,
            adopt_error=result.adopt_error or None,
            report={name: str(folder / name) for name in REPORT_FILES},
            problems=result.problems,
            calls_made=record.calls,
            cache_hits=record.cache_hits,
            tokens=record.tokens,
            cost_usd=record.cost_usd,
            calls_by_role=NightUsage.from_ledger(nights.ledger(result.night).by_role()).by_role,
            markdown=render_markdown(result),
        )
