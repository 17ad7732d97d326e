"""One night of the sleep cycle, end to end: `run_night()`, the engine's entry for `skillsleep run`.

    resume an unfinished night of the skill, or start one → record it → plan (the harvested
    sessions since `[sleep] since`: mine, relevance, judges, split, dreams; core/night/stages.py) →
    train one epoch → the report (always, in the night's folder) → stage a proposal (not on a
    dry run) → adopt it with `auto_adopt` when the gate accepted it → the skill's memory → the
    night record.

Everything arrives as an argument: the settings, the live skill (`LiveSkill`) and `NightDeps`
(the store, the nights and proposals, the models and the harness, built once the night's folder
is known, the clock and the process id). Nothing here reads the environment or spawns a process.
A night stopped by the budget, a dead model server or Ctrl-C keeps its state: the next night of
the same skill resumes it (same tasks, finished steps kept) when the live skill is unchanged.
The budget caps the whole night: a resumed night starts its ledger at what it spent before.

A fan-out (core/night/fanout_run.py) runs one night a skill with `only` (the sessions of its group)
and `share` (its part of the budget: it caps this run of the night, and gets what it spent).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.ledger import Ledger, spent_before
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.models.store import StoredSessions
from skillsleep.core.night.deps import NightDeps, NightModels
from skillsleep.core.night.fanout import SessionKey, Share
from skillsleep.core.night.live_skill import LiveSkill
from skillsleep.core.night.nights import Nights, SkillMemory
from skillsleep.core.night.record import NightRecord, PlanCounts
from skillsleep.core.night.report import night_report
from skillsleep.core.night.settings import train_config
from skillsleep.core.night.since import parse_since
from skillsleep.core.night.stages import NightPlan, Trained, night_config, plan_night, train_night
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.report.changes import changes, unified_diff
from skillsleep.core.report.files import report_files
from skillsleep.core.report.proposal_record import Proposal
from skillsleep.core.report.result import NightInterrupted, NightResult, NightUsage, StopReason
from skillsleep.core.shared.errors import BackendError, BudgetExceeded, ConfigError
from skillsleep.core.shared.events import (
    Adopted,
    AdoptRefused,
    NightPlanned,
    NightResumed,
    ProposalPending,
    ProposalStaged,
    ReportWritten,
)
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.core.train.state import TrainState, config_hash


@dataclass
class _Night:
    """One night under way: what it was given, what it has reached (also when it stopped part-way)."""

    settings: SleepSection
    skill: LiveSkill
    deps: NightDeps
    dry_run: bool
    live: str  # the live file when the night began ("" when it does not exist yet)
    seed: str  # the text that is trained
    memory: SkillMemory
    record: NightRecord
    requires: str = ""  # what the gate requires, in words (the report states it)
    only: frozenset[SessionKey] | None = None  # the sessions it plans with (None: all since the cutoff)
    state: TrainState | None = None
    plan: NightPlan | None = None
    trained: Trained | None = None
    stop: StopReason | None = None
    interrupted: BaseException | None = None


async def run_night(
    settings: SleepSection,
    skill: LiveSkill,
    deps: NightDeps,
    *,
    dry_run: bool = False,
    only: frozenset[SessionKey] | None = None,
    share: Share | None = None,
) -> NightResult:
    """One night of `skill` with `settings` (its `[sleep]` settings, layered by the caller). A night
    interrupted (Ctrl-C) is recorded as stopped and raised again as `NightInterrupted`; any other
    error is recorded as stopped and raised. `only`: plan with these stored sessions alone;
    `share`: the budget of this run of it (instead of the settings' caps), and what it spent."""
    live, seed = skill.live_text(), skill.read()
    memory = deps.nights.memory(skill.key())
    resumed = resumable(deps, skill, settings, seed)
    record = _begin(settings, skill, deps, resumed[0] if resumed else None, dry_run=dry_run)
    n = _Night(
        settings=settings,
        skill=skill,
        deps=deps,
        dry_run=dry_run,
        live=live,
        seed=seed,
        memory=memory,
        record=record,
        only=only,
    )
    if resumed is not None:
        n.plan, n.state = resumed[1], resumed[2]
        deps.on_event(NightResumed(night=record.night, skill=skill.name, stopped=stopped_why(resumed[0], n.state)))
    folder = deps.nights.folder(record.night)
    cfg = train_config(settings, folder, skill.path, deps.prices)
    n.requires = requirements(cfg)
    # the cap is the whole night's: a resumed night's ledger starts at what its earlier runs spent
    tokens, usd = spent_before(RunDir(folder).ledger_path, cfg.prices) if resumed is not None else (0, 0.0)
    budget = cfg.budget.to_budget() if share is None else share.cap(tokens, usd)
    ledger = Ledger(budget=budget, prices=cfg.prices, spent_tokens=tokens, spent_usd=usd)
    models = deps.models(cfg, ledger, str(folder))
    try:  # bad settings (a backend, a harness that is not usable) fail before the night is recorded
        harness = deps.open_harness(models)
    except BaseException:
        await models.aclose()
        raise
    if deps.on_start is not None:
        n.record = deps.on_start(n.record)
    deps.nights.save(n.record)
    run_dir = RunDir(folder)
    ledger.sinks.append(run_dir.append_ledger)
    try:
        await _work(n, cfg, models, harness, run_dir)
    finally:
        await models.aclose()
        if share is not None:
            share.spent(ledger.spent_tokens - tokens, ledger.spent_usd - usd)
    result = finish(n, run_dir).model_copy(update={"resumed": resumed is not None})
    if n.interrupted is not None:
        raise NightInterrupted(result) from n.interrupted
    return result


def resumable(
    deps: NightDeps, skill: LiveSkill, settings: SleepSection, seed: str
) -> tuple[NightRecord, NightPlan, TrainState] | None:
    """The newest night of this skill, when it stopped (or died) before its end and can go on:
    same settings, same live skill (`seed`), its plan and state on disk."""
    mine = [r for r in deps.nights.list() if r.skill_path == skill.key() and not r.dry_run]
    if not mine:
        return None
    last = mine[-1]
    running = last.status == "running" and last.pid is not None and last.pid != 0 and deps.alive(last.pid)
    if last.status == "finished" or running:
        return None
    folder = deps.nights.folder(last.night)
    run_dir = RunDir(folder)
    try:
        plan = run_dir.load("plan.json", NightPlan)
        state = run_dir.load("state.json", TrainState)
    except ConfigError:  # a damaged plan or state cannot be resumed: a new night starts instead
        return None
    if plan is None or state is None or state.done or state.seed_skill != seed:
        return None
    if state.config_hash != config_hash(
        night_config(train_config(settings, folder, skill.path, deps.prices), last.night)
    ):
        return None
    return last, plan, state


def stopped_why(record: NightRecord, state: TrainState) -> str:
    """Why a night to resume stopped, in words: the stop its record keeps (budget, model server,
    Ctrl-C, an error), else its state's; "" when neither says (its process died)."""
    stop = record.end.stop
    if stop is None:
        return state.stopped or ""
    return stop.message if stop.kind == "interrupted" else f"{stop.kind}: {stop.message}"


def _begin(
    settings: SleepSection, skill: LiveSkill, deps: NightDeps, resumed: NightRecord | None, *, dry_run: bool
) -> NightRecord:
    """The night's record, running: the resumed one, or a new one with the next number."""
    if resumed is not None:  # running again: how its earlier run ended is kept, without its stop
        end = resumed.end.model_copy(update={"stop": None})
        return resumed.model_copy(
            update={"status": "running", "pid": deps.pid, "end": end, "steps": settings.steps, "log": None}
        )
    return NightRecord(
        night=deps.nights.next_number(),
        started=deps.clock(),
        pid=deps.pid,
        harness=settings.harness,
        skill_path=skill.key(),
        skill_name=skill.name,
        managed=skill.managed,
        dry_run=dry_run,
        steps=settings.steps,
    )


async def _work(n: _Night, cfg: TrainConfig, models: NightModels, harness: HarnessChoice, run_dir: RunDir) -> None:
    """Plan (unless resumed) and train, into `n`; a stop (budget, model server, Ctrl-C) is kept in
    `n`, any other error recorded on the night and raised."""
    try:
        evaluator = Evaluator(
            harness.harness,
            judge_llm=models.judge,
            gate=cfg.gate,
            rollouts_k=cfg.train.rollouts_k,
            timeout_s=harness.timeout_s,
            log_path=run_dir.rollouts_path,
            on_event=n.deps.on_event,
            executor=n.deps.executor,
        )
        if n.plan is None:
            n.plan = await plan(n, models.optimizer)
            run_dir.write_json("plan.json", n.plan)
        if not n.plan.not_ready:
            counts = {k: len(v) for k, v in n.plan.tasks().items()}
            n.deps.on_event(
                NightPlanned(
                    night=n.record.night,
                    train=counts["train"],
                    dreamed=len(n.plan.dreams),
                    val=counts["val"],
                    test=counts["test"],
                    harness=harness.label,
                )
            )
            n.trained = await train_night(
                cfg,
                head=_head(n),
                plan=n.plan,
                skill=Skill.parse(n.seed),
                evaluator=evaluator,
                optimizer=models.optimizer,
                run_dir=run_dir,
                memory=n.memory,
                state=n.state,
                on_event=n.deps.on_event,
                redactor=Redactor(n.deps.redact_patterns),
            )
    except (BudgetExceeded, BackendError) as exc:
        n.stop = StopReason.from_error(exc)
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        n.stop, n.interrupted = StopReason.from_error(KeyboardInterrupt()), exc
    except Exception as exc:  # never leave the night marked running: record why it stopped, then fail
        stop, finished = StopReason.from_error(exc), n.deps.clock()
        end = n.record.end.model_copy(
            update={"finished": finished, "outcome": "stopped-early", "stop": stop, "reason": str(exc)}
        )
        n.deps.nights.save(n.record.model_copy(update={"status": "stopped", "end": end}))
        raise


async def plan(n: _Night, optimizer: LLM) -> NightPlan:
    """The night's tasks from the stored sessions that ended (or began) since `[sleep] since`."""
    cutoff = parse_since(n.settings.since, now=n.deps.clock())
    sessions = n.deps.store.stream_sessions(since=cutoff)
    if n.only is not None:  # a fan-out's group: only the sessions that used this skill
        sessions = StoredSessions(n.deps.store, [key for key in sessions.keys if key in n.only])
    return await plan_night(
        sessions,
        skill=Skill.parse(n.seed),
        skill_name=n.skill.name,
        managed=n.skill.managed,
        optimizer=optimizer,
        settings=n.settings,
        memory=n.memory,
        redactor=Redactor(n.deps.redact_patterns),
        on_event=n.deps.on_event,
    )


def finish(n: _Night, run_dir: RunDir) -> NightResult:
    """The report (always written in the night's folder), the proposal, the memory, the record."""
    finished = n.deps.clock()
    candidate = composed(n)
    spent = run_dir.ledger()  # the whole night: every process that worked on it, a killed one too
    result = _report(n, candidate, NightUsage.from_ledger(spent.by_role()), finished)
    files = report_files(result)
    for name, text in files.items():
        run_dir.write_text(name, text)
    n.deps.on_event(ReportWritten(folder=str(run_dir.path), outcome=result.outcome))
    stopped = result.outcome == "stopped-early"
    if not n.dry_run and not stopped and n.trained is not None and result.diff:
        proposal = stage(n, result, candidate, files)
        result = result.model_copy(update={"proposal": proposal.id})
        if n.settings.auto_adopt and proposal.accepted:
            adopted, adopt_error = auto_adopt(n, proposal)
            result = result.model_copy(update={"adopted": adopted, "adopt_error": adopt_error})
            files = report_files(result)  # every copy of the report says what auto-adopt did
            for name, text in files.items():
                run_dir.write_text(name, text)
            n.deps.proposals.restage_files(proposal, files)
    if n.trained is not None and not stopped and not n.dry_run:
        remember(n.deps.nights, n.memory, n.trained.state, n.plan, n.record.night)
    n.deps.nights.save(n.record.summarise(result, n.plan.counts() if n.plan else PlanCounts(), spent))
    return result


def composed(n: _Night) -> str:
    """The whole live file to stage: the trained text composed into it, or the live file itself when
    nothing was trained (no candidate, rejected: the candidate is the seed; also for a managed skill
    that does not exist yet, whose seed differs from the absent live file)."""
    if n.trained is None or n.trained.candidate == n.seed:
        return n.live
    return n.skill.compose(n.trained.candidate, n.live)


def _report(n: _Night, candidate: str, usage: NightUsage, finished: datetime) -> NightResult:
    name = n.skill.path.name
    diff = unified_diff(n.live, candidate, f"a/{name}", f"b/{name}") if candidate != n.live else ""
    return night_report(
        n.trained.result if n.trained else _head(n),
        finished=finished,
        plan=n.plan,
        diff=diff,
        changes=changes(n.live, candidate),
        usage=usage,
        history=[p for p in n.deps.nights.history(n.skill.key()) if p.night != n.record.night],
        stop=n.stop,
        reason=n.plan.not_ready if n.plan is not None and n.plan.not_ready and n.stop is None else "",
    )


def _head(n: _Night) -> NightResult:
    """The night's result before training decides it: its number, start, harness and skill (it
    finishes when its report is written)."""
    return NightResult(
        night=n.record.night,
        started=n.record.started,
        finished=n.record.started,
        harness=n.settings.harness,
        skill_path=str(n.skill.path),
        skill_name=n.skill.name,
        managed=n.skill.managed,
        outcome="no-candidate",
        reason="nothing to train on",
        dry_run=n.dry_run,
        requires=n.requires,
    )


def requirements(cfg: TrainConfig) -> str:
    """What a night's candidate must show to be accepted, in words."""
    if not cfg.gate.enabled:
        return cfg.gate.describe()
    need = cfg.train.min_support
    support = (
        f"; only edits resting on at least {need} distinct trajectories reach it (copies of one reply count once)"
        if need > 1
        else ""
    )
    return cfg.gate.describe() + support


def stage(n: _Night, result: NightResult, candidate: str, files: dict[str, str]) -> Proposal:
    """The night's proposal: staged with its report files, or the same one already pending."""
    proposals, path, accepted = n.deps.proposals, n.skill.path, result.outcome == "accepted"
    pending = proposals.find_pending(path, candidate, base_text=n.live, accepted=accepted)
    if pending is not None:
        n.deps.on_event(ProposalPending(proposal=pending.id))
        return pending
    proposal = proposals.stage(
        path,
        candidate,
        accepted=accepted,
        reason=result.reason,
        files=files,
        base_text=n.live,
        night=n.record.night,
        **result.scores(),
        details={"harness": n.settings.harness, "section": n.skill.section, "managed": n.skill.managed},
    )
    n.deps.on_event(ProposalStaged(proposal=proposal.id, accepted=proposal.accepted, reason=proposal.reason))
    return proposal


def auto_adopt(n: _Night, proposal: Proposal) -> tuple[bool, str]:
    """(adopted, why not) of putting an accepted proposal live (`auto_adopt`)."""
    try:
        n.deps.proposals.adopt(proposal.id)
    except ConfigError as exc:
        n.deps.on_event(AdoptRefused(proposal=proposal.id, error=str(exc)))
        return False, str(exc)
    n.deps.on_event(Adopted(proposal=proposal.id, path=str(n.skill.path)))
    return True, ""


def remember(nights: Nights, memory: SkillMemory, state: TrainState, plan: NightPlan | None, night: int) -> None:
    """What the skill's next night carries over: rejected edits, the meta skill, the splits, the night."""
    memory.rejected = list(state.rejected)
    memory.meta_skill = state.meta_skill
    if plan is not None:
        memory.learn(plan.splits, plan.mined.tasks, night)
    memory.nights = [*memory.nights, night]
    nights.save_memory(memory)
