"""One night as `skillsleep run` starts it (run_cmd.py is its click command, detach.py its
background form): layer the `[sleep]` settings, hold the state lock, harvest new sessions, build
the night's objects (store, nights, proposals, the models and harness factories, the live skill)
and hand them to core's `run_night` (core/night/cycle.py); what comes back is summarised for `--json`
and rendered as text and markdown (`RunSummary`, night_summary.py). When the sessions used writable
skills of the night's agent, the night fans out instead (fanout_runner.py: core's `run_fanout`, one
night a skill; a `FanoutSummary`).

The live skill is written only by `adopt` (in a night: --auto-adopt after an accepted gate).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from skillsleep.core.models.model_set import Models
from skillsleep.core.models.store import Store
from skillsleep.core.night.cycle import run_night
from skillsleep.core.night.deps import NightDeps, NightModels
from skillsleep.core.night.fanout_run import fanout_folder, run_fanout
from skillsleep.core.night.lock import StateLock
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.events import EventSink, HarvestDone, HarvestStarted, Notice
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.skills import resolve_skill
from skillsleep.slash_commands.fanout_runner import FanoutSummary, fanout_groups, night_skills
from skillsleep.slash_commands.harvester import chat_folders, run_harvest
from skillsleep.slash_commands.night_summary import RunSummary
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
) -> RunSummary | FanoutSummary:
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
) -> RunSummary | FanoutSummary:
    data = data_dir()
    eff = effective_settings(chat_dirs)
    folders = chat_folders(eff)
    home = Path(os.environ.get("HOME") or Path.home())
    target = resolve_skill(s.skill, harness=s.harness, home=home, cwd=Path.cwd(), data_dir=data, env=os.environ)
    skills = night_skills(s, home=home, cwd=Path.cwd(), data_dir=data, env=os.environ)
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
        groups = fanout_groups(s, store, skills, target, deps.clock()) if skills is not None else None
        if groups is not None:
            fanout, results = await run_fanout(s, groups, deps, data, dry_run=dry_run)
        else:
            result = await run_night(s, target, deps, dry_run=dry_run)
    finally:
        await runner.aclose()
        store.close()
    if groups is None:
        return RunSummary.of(result, nights, target, harvested)
    return FanoutSummary.of(fanout, results, nights, groups, harvested, fanout_folder(data, fanout.fanout))
