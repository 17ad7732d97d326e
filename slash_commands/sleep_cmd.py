"""`skillsleep run`: one night of the sleep cycle, from harvest to a staged proposal.

    lock → harvest (incremental) → which skill (--skill, or the managed learned skill) → resume an
    unfinished night of that skill, or plan a new one (mine, relevance, judges, split, dreams) →
    train one epoch through the chosen harness → verdict on held-out real tasks → test split →
    report (always, in the night's folder) → stage a proposal (not with --dry-run) → adopt it
    with --auto-adopt when the gate accepted it → the skill's memory and the night record.

The live skill is written only by `adopt` (here: --auto-adopt after an accepted gate). A night
stopped by the budget, a dead model server or Ctrl-C keeps its state: the next `skillsleep run`
for the same skill resumes it (same tasks, finished steps kept) when the live skill is unchanged.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillsleep.core.backends.base import RetryPolicy
from skillsleep.core.backends.registry import parse_spec
from skillsleep.core.changes import changes
from skillsleep.core.config import (
    BudgetSection,
    DataSection,
    JudgeSection,
    ModelSection,
    OptimizerSection,
    ReflectSection,
    RunSection,
    TrainConfig,
    TrainSection,
)
from skillsleep.core.errors import BackendError, BudgetExceeded, ConfigError
from skillsleep.core.evaluate import Evaluator
from skillsleep.core.gate import GateConfig
from skillsleep.core.ledger import Ledger
from skillsleep.core.lock import StateLock, pid_alive
from skillsleep.core.night import (
    NightOutcome,
    NightPlan,
    NightSettings,
    night_config,
    night_report,
    plan_night,
    train_night,
)
from skillsleep.core.nights import NightRecord, Nights
from skillsleep.core.proposals import Proposals, unified_diff
from skillsleep.core.redact import Redactor
from skillsleep.core.report import NightUsage, StopReason
from skillsleep.core.report_files import report_files
from skillsleep.core.report_markdown import render_markdown
from skillsleep.core.rundir import RunDir
from skillsleep.core.since import parse_since
from skillsleep.core.skill import Skill
from skillsleep.core.store import Store
from skillsleep.core.trainer import TrainState, config_hash
from skillsleep.core.user_config import SleepSection
from skillsleep.harnesses import registry
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.skills import SkillTarget, resolve_skill
from skillsleep.slash_commands.harvest_cmd import chat_folders, run_harvest
from skillsleep.slash_commands.runtime import Models, agent_harness
from skillsleep.slash_commands.wiring import (
    SLEEP_ENVS,
    SLEEP_FLAGS,
    chat_log_dir,
    data_dir,
    effective_settings,
    harness_settings,
    sleep_settings,
    state_db,
)

Progress = Callable[[str], None]


RUN = "skillsleep run"  # what a night's process records in the state lock


def run_sleep(
    flags: Mapping[str, object | None],
    *,
    dry_run: bool,
    progress: Progress,
    on_rollout: Callable[[Any], None] | None = None,
    chat_dirs: Sequence[Path] = (),
    on_start: Callable[[NightRecord], NightRecord] | None = None,
) -> dict[str, Any]:
    """One night with the settings layered flag > env > file > default; returns the summary.
    `chat_dirs` are the `--chat-dir` folders (empty: the environment's or the config file's);
    `on_start` may amend the night's record before it is first written (a detached night's log)."""
    settings = check_night(flags)
    with StateLock(data_dir(), RUN):
        return asyncio.run(
            _night(
                settings,
                dry_run=dry_run,
                progress=progress,
                on_rollout=on_rollout,
                chat_dirs=chat_dirs,
                on_start=on_start,
            )
        )


def check_night(flags: Mapping[str, object | None]) -> SleepSection:
    """The night's `[sleep]` settings layered flag > env > file > default and checked before any
    work (also by `schedule`, so a typo fails there and not at 3 a.m.)."""
    settings = sleep_settings(flags).values
    registry.check_name(settings.harness)
    harness_settings()  # a typo in any [harness.<name>] table fails now, whichever harness replays
    _model_specs(settings)  # names a missing default model now, not mid-night
    return settings


def _model_specs(s: SleepSection) -> tuple[str, str]:
    """(optimizer, chat target) as provider:model, each checked."""
    provider = s.backend.partition(":")[0]
    optimizer = f"{provider}:{s.optimizer_model}" if s.optimizer_model else s.backend
    chat_target = f"{provider}:{s.target_model}" if s.target_model and s.harness == "chat" else optimizer
    parse_spec(optimizer), parse_spec(chat_target)
    return optimizer, chat_target


def _now() -> datetime:
    return datetime.now(UTC)


def _read_live(target: SkillTarget) -> str:
    """The live file's whole text, byte-exact (CRLF kept), or "" when it does not exist yet."""
    if not target.path.exists():
        return ""
    try:
        return target.path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the skill {target.path} ({exc}); fix it or pick another with --skill") from None


def _train_config(s: SleepSection, folder: Path, target: SkillTarget) -> TrainConfig:
    optimizer, chat_target = _model_specs(s)
    retry = RetryPolicy(attempts=s.retries + 1, timeout_s=s.call_timeout)
    return TrainConfig(
        run=RunSection(name=folder.name, out_dir=str(folder.parent)),
        data=DataSection(tasks=str(folder / "plan.json"), skill=str(target.path)),
        target=ModelSection(
            backend=chat_target, base_url=s.base_url, max_tokens=2048, timeout_s=s.call_timeout, retry=retry
        ),
        optimizer=OptimizerSection(backend=optimizer, base_url=s.base_url, max_tokens=2048, retry=retry),
        judge=JudgeSection(retry=retry),
        train=TrainSection(epochs=1, steps_per_epoch=s.steps, rollouts_k=s.rollouts_k),
        gate=GateConfig(enabled=s.gate == "on", metric=s.gate_metric),
        budget=BudgetSection(tokens=s.budget_tokens, usd=s.budget_usd),
        reflect=ReflectSection(preferences=s.preferences),
    )


def _retry_advice(_role: str) -> str:
    keys = ("retries", "call_timeout")
    flags, envs = [SLEEP_FLAGS[k] for k in keys], [SLEEP_ENVS[k] for k in keys]
    return (
        f"allow more with {flags[0]} / {flags[1]} ([sleep] retries / call_timeout in config.toml, "
        f"or {envs[0]} / {envs[1]})"
    )


def _harness(s: SleepSection, models: Models, progress: Progress) -> tuple[Any, str, float]:
    if s.harness == "chat":
        harness = ChatHarness(models.target, log_dir=chat_log_dir(), on_log_error=progress)
        return harness, models.target.label, s.call_timeout
    # --base-url is the backend's server; an agent's own server is `base_url` in [harness.<name>]
    return agent_harness(s.harness, target_model=s.target_model, base_url=None)


def _resumable(
    nights: Nights, key: str, cfg_for: Callable[[Path], TrainConfig], seed: str
) -> tuple[NightRecord, NightPlan, TrainState] | None:
    """The newest night of this skill, when it stopped (or died) before its end and can go on:
    same settings, same live skill, its plan and state on disk."""
    mine = [r for r in nights.list() if r.skill_path == key and not r.dry_run]
    if not mine:
        return None
    last = mine[-1]
    if last.status == "finished" or (
        last.status == "running" and last.pid is not None and last.pid != 0 and pid_alive(last.pid)
    ):
        return None
    folder = nights.folder(last.night)
    run_dir = RunDir(folder)
    try:
        plan = run_dir.load("plan.json", NightPlan)
        state = run_dir.load("state.json", TrainState)
    except ConfigError:  # a damaged plan or state cannot be resumed: a new night starts instead
        return None
    if plan is None or state is None or state.done or state.seed_skill != seed:
        return None
    if state.config_hash != config_hash(night_config(cfg_for(folder), last.night)):
        return None
    return last, plan, state


async def _night(
    s: SleepSection,
    *,
    dry_run: bool,
    progress: Progress,
    on_rollout: Callable[[Any], None] | None,
    chat_dirs: Sequence[Path],
    on_start: Callable[[NightRecord], NightRecord] | None,
) -> dict[str, Any]:
    data = data_dir()
    eff = effective_settings(chat_dirs)
    folders = chat_folders(eff)
    home = Path(os.environ.get("HOME") or Path.home())
    target = resolve_skill(s.skill, harness=s.harness, home=home, cwd=Path.cwd(), data_dir=data, env=os.environ)
    progress("harvesting new sessions")
    patterns = tuple(eff.harvest.redact_patterns.value)
    harvested = run_harvest(None, None, patterns, folders)
    live = _read_live(target)
    trained_text = target.read()
    skill = Skill.parse(trained_text)
    key = str(target.path) + (f"#{target.section}" if target.section else "")
    nights = Nights(data)
    memory = nights.memory(key)
    resumed = _resumable(nights, key, lambda folder: _train_config(s, folder, target), trained_text)
    started = _now()
    if resumed is not None:
        record, plan, state = resumed
        record = record.model_copy(
            update={"status": "running", "pid": os.getpid(), "stop": None, "steps": s.steps, "log": None}
        )
        progress(f"resuming night {record.night} of {target.label()} (stopped: {state.stopped or 'the process died'})")
        started = record.started
    else:
        plan, state = None, None
        record = NightRecord(
            night=nights.next_number(),
            started=started,
            pid=os.getpid(),
            harness=s.harness,
            skill_path=key,
            skill_name=target.name,
            managed=target.managed,
            dry_run=dry_run,
            steps=s.steps,
        )
    folder = nights.folder(record.night)
    cfg = _train_config(s, folder, target)
    ledger = Ledger(budget=cfg.budget.to_budget(), prices=cfg.prices)
    store = Store(state_db())
    models = Models(cfg, ledger, store, run_id=str(folder), progress=progress, retry_advice=_retry_advice)
    try:  # bad settings (a backend, a harness that is not usable) fail before the night is recorded
        harness, label, timeout_s = _harness(s, models, progress)
    except BaseException:
        await models.aclose()
        store.close()
        raise
    if on_start is not None:
        record = on_start(record)
    nights.save(record)
    run_dir = RunDir(folder)
    ledger.sinks.append(run_dir.append_ledger)
    outcome: NightOutcome | None = None
    stop: StopReason | None = None
    interrupted: BaseException | None = None
    try:
        evaluator = Evaluator(
            harness,
            judge_llm=models.judge,
            gate=cfg.gate,
            rollouts_k=cfg.train.rollouts_k,
            timeout_s=timeout_s,
            log_path=run_dir.rollouts_path,
            on_rollout=on_rollout,
        )
        if plan is None:
            cutoff = parse_since(s.since, now=_now())
            sessions = [
                x for x in store.sessions() if (x.ended or x.started) is None or (x.ended or x.started) >= cutoff
            ]
            plan = await plan_night(
                sessions,
                skill=skill,
                skill_name=target.name,
                managed=target.managed,
                optimizer=models.optimizer,
                settings=NightSettings(max_tasks=s.max_tasks, min_recurrence=s.min_recurrence, dreams=s.dreams),
                memory=memory,
                redactor=Redactor(patterns),
                progress=progress,
            )
            run_dir.write_json("plan.json", plan)
        if not plan.not_ready:
            counts = {k: len(v) for k, v in plan.tasks().items()}
            progress(
                f"night {record.night}: {counts['train']} train ({len(plan.dreams)} dreamed), {counts['val']} val, "
                f"{counts['test']} test tasks; replaying with {label}"
            )
            outcome = await train_night(
                cfg,
                night=record.night,
                plan=plan,
                skill=skill,
                evaluator=evaluator,
                optimizer=models.optimizer,
                run_dir=run_dir,
                memory=memory,
                state=state,
                progress=progress,
                redactor=Redactor(patterns),
            )
    except (BudgetExceeded, BackendError) as exc:
        stop = StopReason.from_error(exc)
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        stop, interrupted = StopReason.from_error(KeyboardInterrupt()), exc
    except Exception as exc:  # never leave the night marked running: record why it stopped, then fail
        nights.save(
            record.model_copy(
                update={
                    "status": "stopped",
                    "finished": _now(),
                    "outcome": "stopped-early",
                    "stop": StopReason.from_error(exc),
                    "reason": str(exc),
                }
            )
        )
        raise
    finally:
        await models.aclose()
        store.close()
    finished = _now()
    # Nothing trained (rejected / no candidate: the candidate is the seed) stages nothing, also for a
    # managed skill that does not exist yet (its seed differs from the absent live file).
    trained = outcome is not None and outcome.candidate != trained_text
    candidate_full = target.compose(outcome.candidate, live) if outcome and trained else live
    diff = (
        unified_diff(live, candidate_full, f"a/{target.path.name}", f"b/{target.path.name}")
        if candidate_full != live
        else ""
    )
    spent = run_dir.ledger()  # the whole night: every process that worked on it, a killed one too
    report = night_report(
        night=record.night,
        started=started,
        finished=finished,
        harness=s.harness,
        skill_path=str(target.path),
        skill_name=target.name,
        plan=plan,
        outcome=outcome,
        diff=diff,
        changes=changes(live, candidate_full),
        usage=NightUsage.from_ledger(spent.by_role()),
        history=[p for p in nights.history(key) if p.night != record.night],
        stop=stop,
        reason=plan.not_ready if plan is not None and plan.not_ready and stop is None else "",
    )
    files = report_files(report)
    for name, text in files.items():
        run_dir.write_text(name, text)
    proposal = None
    adopted, adopt_error = False, ""
    stopped = report.outcome == "stopped-early"
    if not dry_run and not stopped and outcome is not None and diff:
        proposals = Proposals(data)
        gate = outcome.gate
        proposal = proposals.find_pending(
            target.path, candidate_full, base_text=live, accepted=outcome.outcome == "accepted"
        )
        if proposal is not None:
            progress(f"the same proposal is already pending: {proposal.id} (`skillsleep adopt {proposal.id}`)")
        else:
            proposal = proposals.stage(
                target.path,
                candidate_full,
                accepted=outcome.outcome == "accepted",
                reason=outcome.reason,
                files=files,
                base_text=live,
                night=record.night,
                baseline_score=gate.baseline if gate else None,
                candidate_score=gate.candidate if gate else None,
                test_before=outcome.test.before if outcome.test else None,
                test_after=outcome.test.after if outcome.test else None,
                details={"harness": s.harness, "section": target.section, "managed": target.managed},
            )
            progress(
                f"staged proposal {proposal.id} ({'accepted' if proposal.accepted else 'not accepted'}: "
                f"{proposal.reason})"
            )
        if s.auto_adopt and proposal.accepted:
            try:
                proposals.adopt(proposal.id)
                adopted = True
                progress(f"adopted {proposal.id} into {target.path} (--auto-adopt; `skillsleep rollback` undoes it)")
            except ConfigError as exc:
                adopt_error = str(exc)
                progress(f"--auto-adopt did not adopt {proposal.id}: {exc}")
    if outcome is not None and not stopped and not dry_run:
        memory.rejected = list(outcome.state.rejected)
        memory.meta_skill = outcome.state.meta_skill
        memory.splits.update(plan.splits if plan else {})
        memory.nights = [*memory.nights, record.night]
        nights.save_memory(memory)
    gate = report.gate
    record = record.model_copy(
        update={
            "finished": finished,
            "status": "stopped" if stopped else "finished",
            "outcome": report.outcome,
            "reason": report.reason,
            "stop": report.stop,
            "sessions": plan.sessions if plan else 0,
            "mined": plan.recurring if plan else 0,
            "tasks": ({**{k: len(v) for k, v in plan.tasks().items()}, "dream": len(plan.dreams)} if plan else {}),
            "baseline": report.baseline_score(),
            "candidate": gate.candidate if gate else None,
            "accepted": report.outcome == "accepted",
            "test_before": report.test.before if report.test else None,
            "test_after": report.test.after if report.test else None,
            "proposal_id": proposal.id if proposal else None,
            "adopted": adopted,
            "calls": spent.calls_made,
            "cache_hits": spent.cache_hits,
            "tokens": spent.spent_tokens,
            "cost_usd": round(spent.spent_usd, 6),
        }
    )
    nights.save(record)
    if interrupted is not None:
        raise KeyboardInterrupt from interrupted
    return {
        "night": record.night,
        "outcome": report.outcome,
        "reason": report.reason,
        "stop": report.stop.model_dump(mode="json") if report.stop else None,
        "skill": {"path": str(target.path), "section": target.section, "name": target.name, "managed": target.managed},
        "harness": s.harness,
        "dry_run": dry_run,
        "resumed": resumed is not None,
        "harvest": {
            "sessions": harvested.get("sessions", {}),
            "errors": harvested.get("errors", 0),
            "unreadable": harvested.get("unreadable", []),
        },
        "sessions": record.sessions,
        "recurring_tasks": record.mined,
        "tasks": record.tasks,
        "unrelated": plan.unrelated if plan else [],
        "splits": plan.splits if plan else {},
        "baseline": record.baseline,
        "candidate": record.candidate,
        "test": report.test.model_dump(mode="json") if report.test else None,
        "accepted_edits": len(report.accepted_edits),
        "rejected_edits": len(report.rejected_edits),
        "refused_edits": [r.reason() for r in report.refused_edits],
        "proposal": proposal.id if proposal else None,
        "adopted": adopted,
        "adopt_error": adopt_error or None,
        "report": {name: str(folder / name) for name in files},
        "problems": report.problems,
        "calls_made": record.calls,
        "cache_hits": record.cache_hits,
        "tokens": record.tokens,
        "cost_usd": record.cost_usd,
        "calls_by_role": spent.by_role(),
        "markdown": render_markdown(report),
    }
