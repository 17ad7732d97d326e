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

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from skillsleep.core.harvest.harvester import HarvestReport
from skillsleep.core.models.model_set import Models
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.models.store import Store
from skillsleep.core.night.cycle import run_night
from skillsleep.core.night.deps import NightDeps, NightModels
from skillsleep.core.night.lock import StateLock
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord, NightSpend, PlanCounts
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.evidence import short_text
from skillsleep.core.report.files import REPORT_FILES
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.result import NightResult
from skillsleep.core.shared.events import EventSink, HarvestDone, HarvestStarted, Notice
from skillsleep.core.shared.records import Record, Split
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.skills import SkillTarget, resolve_skill
from skillsleep.slash_commands.harvester import chat_folders, run_harvest
from skillsleep.slash_commands.runtime import (
    RUN,
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
    model_settings,
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


def _harness(s: SleepSection, models: NightModels, on_event: EventSink, *, dry_run: bool) -> HarnessChoice:
    if s.harness == "chat":  # a dry run leaves no chat log behind
        harness = ChatHarness(
            models.target,
            log_dir=None if dry_run else chat_log_dir(),
            on_log_error=lambda text: on_event(Notice(text=text)),
        )
        return HarnessChoice(harness=harness, label=models.target.label, timeout_s=s.call_timeout)
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
            cfg.roles,
            ledger,
            store,
            run_id,
            settings_for=model_settings,
            on_event=on_event,
            retry_advice=_retry_advice,
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
    return RunSummary.of(result, nights, target, harvested)


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
    result, with the skill it trained, the harvest before it, the parts of its record that say what
    its plan held and what it spent, its plan's splits and its report's files (`of()`). It prints
    flat, its keys in the order tests/fixtures/run_summary.json pins (`_printed`)."""

    result: NightResult
    skill: SkillSummary
    harvest: HarvestSummary
    plan: PlanCounts
    unrelated: list[str]
    splits: dict[str, Split]
    spend: NightSpend
    report: dict[str, str]  # file name → path

    @classmethod
    def of(cls, result: NightResult, nights: Nights, target: SkillTarget, harvested: HarvestReport) -> RunSummary:
        """The summary of night `result` of `target`, after `harvested` (`run_harvest()`'s report)."""
        record, folder = nights.get(result.night), nights.folder(result.night)
        plan = RunDir(folder).load("plan.json", NightPlan)
        return cls(
            result=result,
            skill=SkillSummary(path=str(target.path), section=target.section, name=target.name, managed=target.managed),
            harvest=HarvestSummary(
                sessions=harvested.sessions, errors=harvested.errors, unreadable=harvested.unreadable
            ),
            plan=record.plan,
            unrelated=plan.unrelated if plan else [],
            splits=plan.splits if plan else {},
            spend=record.spend,
            report={name: str(folder / name) for name in REPORT_FILES},
        )

    @model_serializer(mode="wrap")
    def _printed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`run --json`: flat, each key from the part that holds it, in the order it always had."""
        part, r = handler(self), self.result
        point = r.point()
        return {
            "night": r.night,
            "outcome": r.outcome,
            "reason": r.reason,
            "stop": part["result"]["stop"],
            "skill": part["skill"],
            "harness": r.harness,
            "dry_run": r.dry_run,
            "resumed": r.resumed,
            "harvest": part["harvest"],
            "sessions": self.plan.sessions,
            "recurring_tasks": self.plan.mined,
            "tasks": self.plan.tasks,
            "unrelated": self.unrelated,
            "splits": self.splits,
            "baseline": point.baseline,
            "candidate": point.candidate,
            "test": part["result"]["test"],
            "paired": short_text(r.paired) or None,  # the held-out paired difference, candidate − live skill
            "validation": part["result"]["validation"],
            "accepted_edits": len(r.accepted_edits),
            "rejected_edits": len(r.rejected_edits),
            "refused_edits": [refused.why() for refused in r.refused_edits],
            "proposal": r.proposal,
            "adopted": r.adopted,
            "adopt_error": r.adopt_error or None,
            "report": self.report,
            "problems": r.problems,
            "calls_made": self.spend.calls,
            "cache_hits": self.spend.cache_hits,
            "tokens": self.spend.tokens,
            "cost_usd": self.spend.cost_usd,
            "calls_by_role": part["result"]["usage"]["by_role"],
            "markdown": render_markdown(r),
        }
