"""One night of the sleep cycle, inside the engine: plan it, train one epoch, judge the result.

    plan_night()   mined tasks (`mine`) → only the recurring ones → only those the skill is about
                   (`relevance`; every task for the managed learned skill) → the top `max_tasks`
                   get judges (`judge_writing`) → split by cluster (`splits`: val and test real
                   only, never a near-duplicate across splits, a task keeps its split across
                   nights, test tasks never reach the optimizer) → dreamed paraphrases of train
                   tasks (`dream`)
    train_night()  one epoch of the ordinary `Trainer` (rollout → reflect → safety screen →
                   clip → gate; slow update and meta skill at its end) numbered as the night, with
                   the skill's memory (rejected edits, meta skill) carried in; then the night's
                   verdict on the held-out split and the test split's before → after

`core/night/cycle.run_night` runs these in order, makes the report (core/night/report.py) and stages the
proposal, saves the memory and the night record. Nothing here writes a user's skill.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import Field

from skillsleep.core.document.skill import Skill
from skillsleep.core.mine.dream import dream
from skillsleep.core.mine.mining import MinedTask, MineResult, judge_tasks, mine
from skillsleep.core.mine.relevance import relevant_tasks
from skillsleep.core.mine.splits import split_tasks, unsplit
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.models.store import StoredSessions
from skillsleep.core.night.held_out import evidence_for
from skillsleep.core.night.nights import SkillMemory
from skillsleep.core.night.no_candidate import no_candidate_reason
from skillsleep.core.night.record import PlanCounts
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.report.result import NightResult, SplitResult, StopReason
from skillsleep.core.shared.errors import BudgetExceeded
from skillsleep.core.shared.events import (
    AskingRelevance,
    Dreaming,
    EventSink,
    FinalScoring,
    Mining,
    NotEnoughEvidence,
    WritingJudges,
    in_night,
    quiet,
)
from skillsleep.core.shared.records import GateDecision, Record, Split, Task, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.shared.session import Session
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.folder_context import read_context
from skillsleep.core.train.gate import NOT_ENOUGH, decide, mean
from skillsleep.core.train.state import TrainState
from skillsleep.core.train.step_record import StepRecord
from skillsleep.core.train.trainer import Trainer


class NightPlan(Record):
    """The tasks of one night and where each one went."""

    mined: MineResult
    sessions: int = 0
    recurring: int = 0  # mined tasks that recur at least min_recurrence times
    unrelated: list[str] = Field(default_factory=list)  # recurring tasks the relevance filter left out
    cut: list[str] = Field(default_factory=list)  # relevant tasks beyond max_tasks
    splits: dict[str, Split] = Field(default_factory=dict)  # real task id → split
    dreams: list[Task] = Field(default_factory=list)
    problems: list[UnusableReply] = Field(default_factory=list)  # optimizer replies that could not be used
    not_ready: str = ""  # why this night cannot train (too few tasks …); "" when it can

    def tasks(self) -> dict[str, list[Task]]:
        """train (real, then dreamed), val and test tasks, each with its split set."""
        out: dict[str, list[Task]] = {"train": [], "val": [], "test": []}
        for m in self.mined.tasks:
            split = self.splits.get(m.task.id)
            if split is not None:
                out[split].append(m.task.model_copy(update={"split": split}))
        out["train"] += self.dreams
        return out

    def recurrence(self) -> dict[str, int]:
        return {m.task.id: m.recurrence for m in self.mined.tasks}

    def counts(self) -> PlanCounts:
        """What the night's record keeps of this plan."""
        tasks = {**{k: len(v) for k, v in self.tasks().items()}, "dream": len(self.dreams)}
        return PlanCounts(sessions=self.sessions, mined=self.recurring, tasks=tasks)


# --- plan ----------------------------------------------------------------------------------------


async def plan_night(
    sessions: Sequence[Session] | StoredSessions,
    *,
    skill: Skill,
    skill_name: str,
    managed: bool,
    optimizer: LLM,
    settings: SleepSection,
    memory: SkillMemory,
    redactor: Redactor | None = None,
    on_event: EventSink = quiet,
) -> NightPlan:
    """Mine, filter, judge, split and dream: everything before the first rollout (`sessions` is read
    once, one session at a time: `Store.stream_sessions()` keeps one in memory)."""
    on_event(Mining(sessions=len(sessions)))
    least, known = settings.min_recurrence, memory.known()  # the ids earlier nights gave their tasks
    mined = await mine(
        sessions, llm=optimizer, min_recurrence=least, max_tasks=None, redactor=redactor, judges=False, known=known
    )
    plan = NightPlan(mined=mined, sessions=mined.intake.sessions, problems=list(mined.problems))
    recurring = [m for m in mined.tasks if m.recurrent]
    plan.recurring = len(recurring)
    if managed or not recurring:
        relevant = recurring
    else:
        on_event(AskingRelevance(tasks=len(recurring), skill=skill_name))
        relevance = await relevant_tasks(optimizer, skill, skill_name, recurring)
        relevant = relevance.tasks
        plan.problems += relevance.problems
        kept = {m.task.id for m in relevant}
        plan.unrelated = [m.task.id for m in recurring if m.task.id not in kept]
    chosen, cut = relevant[: settings.max_tasks], relevant[settings.max_tasks :]
    plan.cut = [m.task.id for m in cut]
    _keep_only(mined, chosen)
    if chosen:
        on_event(WritingJudges(tasks=len(chosen)))
        judged = await judge_tasks(optimizer, chosen)
        mined.dropped_checks += judged.dropped_checks
        plan.problems += judged.problems
    plan.splits = split_tasks(chosen, memory.splits)
    if not plan.splits:
        plan.not_ready = unsplit(
            len(recurring), len(relevant), len({m.cluster for m in chosen}), settings.min_recurrence
        )
        return plan
    val = sum(1 for split in plan.splits.values() if split == "val")
    if settings.gate == "on" and val < settings.gate_min_wins:  # the gate could accept nothing
        plan.not_ready = _not_enough(val, settings.gate_min_wins)
        on_event(NotEnoughEvidence(held_out=val, needed=settings.gate_min_wins))
        return plan
    if settings.dreams:
        split = plan.tasks()
        held_out = [t.prompt for t in split["val"] + split["test"]]
        train = [m for m in chosen if plan.splits[m.task.id] == "train"]
        on_event(Dreaming(variants=settings.dreams, tasks=len(train)))
        dreams = await asyncio.gather(*(dream(optimizer, m, settings.dreams, held_out, redactor) for m in train))
        plan.dreams = [t for d in dreams for t in d.tasks]
        plan.problems += [p for d in dreams for p in d.problems]
    return plan


def _keep_only(mined: MineResult, chosen: list[MinedTask]) -> None:
    """Only the chosen tasks stay in the plan (clusters restricted to them)."""
    chosen_ids = {m.task.id for m in chosen}
    mined.tasks = chosen
    mined.clusters = {c: [t for t in ids if t in chosen_ids] for c, ids in mined.clusters.items()}
    mined.clusters = {c: ids for c, ids in mined.clusters.items() if ids}


def _not_enough(held_out: int, needed: int) -> str:
    return (
        f"{NOT_ENOUGH}: only {held_out} real held-out task(s) for this skill, and the gate accepts a candidate "
        f"only when it scores higher on at least {needed} (--gate-min-wins) with none lower, so nothing was "
        "trained; keep working and run again later (more recurring tasks give more held-out ones)"
    )


# --- train ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trained:
    """What training a night gives: its verdict as the night's result (the report adds the tasks,
    the usage and the diff), the trained text to stage (the seed when there is none) and the
    trainer's state (the rejected edits and meta skill the skill's memory keeps)."""

    result: NightResult
    candidate: str
    state: TrainState


def night_config(cfg: TrainConfig, night: int) -> TrainConfig:
    """`cfg` made into night `night` of the skill's training: epoch night-1 of `night` epochs
    (the learning rate decays across nights), steps_per_epoch from the settings."""
    return cfg.model_copy(update={"train": cfg.train.model_copy(update={"epochs": night})})


async def train_night(
    cfg: TrainConfig,
    *,
    head: NightResult,
    plan: NightPlan,
    skill: Skill,
    evaluator: Evaluator,
    optimizer: LLM,
    run_dir: RunDir,
    memory: SkillMemory,
    state: TrainState | None = None,
    on_event: EventSink = quiet,
    redactor: Redactor | None = None,
) -> Trained:
    """Train one epoch of night `head.night` (resuming `state` when given) and decide it: `head`
    (the night's number, times, harness and skill) with the verdict. A budget reached before the
    end gives a "stopped-early" result; the state on disk lets the next night resume. `redactor`
    (the user's patterns too) redacts and screens every edit the optimizer writes."""
    night = head.night
    cfg = night_config(cfg, night)
    trainer = Trainer(
        cfg,
        splits=plan.tasks(),
        seed_skill=skill,
        evaluator=evaluator,
        optimizer=optimizer,
        run_dir=run_dir,
        on_event=in_night(on_event, night),
        first_epoch=night - 1,
        redactor=redactor,
        folder=read_context(cfg, redactor or Redactor()),
    )
    try:
        if state is None:
            state = await trainer.start()
            state.rejected = list(memory.rejected)
            state.meta_skill = memory.meta_skill
        else:  # a proposal the user rejected since the night stopped is remembered too
            state.rejected += [r for r in memory.rejected if r.stage == "user" and r not in state.rejected]
        state = await trainer.run(state)
    except BudgetExceeded as exc:  # while scoring the seed (run() catches the rest)
        if state is None:
            raise
        state.stopped = f"budget: {exc}"
    return await _verdict(cfg, head, plan, state, evaluator, on_event=on_event)


async def _verdict(
    cfg: TrainConfig,
    head: NightResult,
    plan: NightPlan,
    state: TrainState,
    evaluator: Evaluator,
    *,
    on_event: EventSink,
) -> Trained:
    """The verdict once its epoch is trained (or stopped): candidate vs live skill, held-out then test."""
    epoch = head.night - 1
    steps = [s for s in state.steps if s.epoch == epoch]
    common = _Leftovers(head, state, steps, evidence_for(cfg.gate.enabled, plan.tasks(), evaluator))
    if state.stopped:
        stop = StopReason.from_error(BudgetExceeded(state.stopped.removeprefix("budget: ")))
        return common.decided(
            state.seed_skill,
            outcome="stopped-early",
            reason=f"stopped early: {state.stopped}",
            baseline=state.seed_score,
            stop=stop,
        )
    seed = Skill(state.seed_skill)
    candidate = Skill(state.best if cfg.gate.enabled else state.current)
    val = plan.tasks()["val"]
    base_scores = await evaluator.task_scores(seed, val)
    gated = [s for s in steps if s.gate is not None]
    if candidate == seed:
        return _unchanged(seed, steps, gated, base_scores, common)
    cand_scores = await evaluator.task_scores(candidate, val)
    decision = decide(cfg.gate, base_scores, cand_scores, baseline_hash=seed.hash, candidate_hash=candidate.hash)
    accepted_edits = [e for s in gated if s.gate and s.gate.accepted for e in s.applied]
    test = await _test_split(plan, seed, candidate, evaluator, state, on_event)
    return common.decided(
        candidate.text,
        outcome="accepted" if decision.accepted else "rejected",
        reason=decision.reason,
        gate=decision,
        test=test,
        accepted_edits=accepted_edits,
        **common.evidence(decision),
        kept_strategies=[s.strategy for s in gated if s.strategy],
    )


@dataclass(frozen=True)
class _Leftovers:
    """What every verdict of night `head` carries: refused and rejected edits, the state, the
    unusable replies, and the held-out evidence beside a gate decision (`evidence`)."""

    head: NightResult
    state: TrainState
    steps: list[StepRecord]
    evidence: Callable[[GateDecision], dict[str, object]]

    def decided(self, candidate: str, **verdict: object) -> Trained:
        """The night decided: `head` with `verdict` (outcome, reason, gate, scores) and the leftovers."""
        epoch, steps = self.head.night - 1, self.steps
        refused = [r for s in steps for r in s.refused]
        rejected = [  # the report's: each with its step's gate reason, or the words for one the target ignored
            _reported(r, steps) for r in self.state.rejected if r.epoch == epoch and _gated(r)
        ]
        result = NightResult.model_validate(
            {
                **dict(self.head),
                "refused_edits": refused + _guidance_refused(self.state, epoch),
                "rejected_edits": rejected,
                "problems": [p.line() for p in self.state.problems(epoch)],
                **verdict,
            }
        )
        return Trained(result=result, candidate=candidate, state=self.state)


def _unchanged(
    seed: Skill, steps: list[StepRecord], gated: list[StepRecord], base_scores: dict[str, float], common: _Leftovers
) -> Trained:
    """The verdict when the candidate is the live skill: no candidate, or none passed the gate."""
    if not gated:
        reason = no_candidate_reason(steps, len(base_scores) if common.state.skipped else 0)
        return common.decided(seed.text, outcome="no-candidate", baseline=mean(base_scores), reason=reason)
    best = max(gated, key=lambda s: s.gate.candidate if s.gate else 0.0)
    assert best.gate is not None
    return common.decided(
        seed.text,
        outcome="rejected",
        gate=best.gate,
        reason=f"no candidate passed the gate; the best one: {best.gate.reason}",
        **common.evidence(best.gate),
    )


async def _test_split(
    plan: NightPlan, seed: Skill, candidate: Skill, evaluator: Evaluator, state: TrainState, on_event: EventSink
) -> SplitResult | None:
    """The live skill and the candidate on the test split; None without test tasks, or when the
    budget ends it (noted on `state`)."""
    test_tasks = plan.tasks()["test"]
    if not test_tasks:
        return None
    on_event(FinalScoring(subject="the live skill and the candidate", tasks=len(test_tasks)))
    try:
        before = mean(await evaluator.task_scores(seed, test_tasks))
        after = mean(await evaluator.task_scores(candidate, test_tasks))
    except BudgetExceeded as exc:
        state.stopped = f"budget: {exc} (test split not scored)"
        return None
    return SplitResult(before=before, after=after, tasks=len(test_tasks))


def _gate_reason(steps: list[StepRecord], step: int | None) -> str:
    return next((s.gate.reason for s in steps if s.step == step and s.gate), "")


def _gated(r: RejectedEdit) -> bool:
    """An edit the gate rejected as applied: the report lists it (not the proposal a repair replaced)."""
    return r.stage == "gate" or (r.stage == "ignored" and r.repair is None)


def _reported(r: RejectedEdit, steps: list[StepRecord]) -> RejectedEdit:
    """A memory entry as the report's `rejected_edits` hold it: the edit, why in words, the scores."""
    reason = r.reason if r.stage == "ignored" else _gate_reason(steps, r.step)
    return RejectedEdit(edit=r.edit, stage=r.stage, reason=reason, before=r.before, after=r.after)


def _guidance_refused(state: TrainState, epoch: int) -> list[RejectedEdit]:
    """The slow update's guidance lines the safety screen refused at the end of `epoch`."""
    slow = [e.slow_update for e in state.epochs if e.epoch == epoch and e.slow_update]
    return [r for s in slow for r in s.refused]
