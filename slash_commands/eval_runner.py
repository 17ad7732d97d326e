"""What `skillsleep eval` does (eval_cmd.py is its click command): score a skill on a task file (a
transfer check), on the chat harness or an agent CLI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import check_base_url
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.model_set import Models
from skillsleep.core.models.store import Store
from skillsleep.core.shared.errors import ConfigError, SkillsleepError
from skillsleep.core.shared.events import EvalStarted, EventSink, Notice
from skillsleep.core.shared.records import Rollout, Task
from skillsleep.core.train.config import TrainConfig, load_config
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import mean
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.core.train.intervals import MeanInterval, mean_interval
from skillsleep.core.train.judges import metric as metric_of
from skillsleep.core.train.tasks import assign_splits, by_split, load_tasks
from skillsleep.harnesses import registry
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.slash_commands.runtime import agent_harness, check_run, open_executor, read_skill
from skillsleep.slash_commands.wiring import chat_log_dir, model_settings, state_db, user_config


class ScoringOptions(BaseModel):
    """What scoring skills on a task file was asked to do (eval's and compare's shared options)."""

    model_config = ConfigDict(extra="forbid")

    tasks: Path
    config: Path | None = None
    target: str | None = None
    base_url: str | None = None
    judge: str | None = None
    metric: str | None = None
    split: str = "all"
    harness: str = "chat"
    target_model: str | None = None
    executor: str | None = None  # "local" or "ray"; None: config.toml's [executor]


class EvalOptions(ScoringOptions):
    """What `skillsleep eval` was asked to do."""

    skill: Path
    rollouts_k: int | None = None


class TaskScore(BaseModel):
    """One task's score over its samples (`--rollouts-k`): in the gate's metric, hard and soft, with
    the first sample's feedback and error."""

    model_config = ConfigDict(extra="forbid")

    id: str
    score: float
    hard: float
    soft: float
    feedback: str
    error: str | None


class EvalResult(BaseModel):
    """What `skillsleep eval --json` prints: the skill's mean score on the tasks, each task's, and
    what the scoring cost."""

    model_config = ConfigDict(extra="forbid")

    skill: str
    tasks: str  # the task file
    harness: str
    n: int  # tasks scored
    metric: str
    score: float
    # the mean's bootstrap interval over the tasks (the task the unit, seeded with run.seed)
    interval: MeanInterval
    per_task: list[TaskScore]
    # runs that failed (the agent or model could not run, timed out, …), each scored 0
    failed: int = 0
    runs: int = 0  # runs made: tasks × samples
    error: str | None = None  # the first failed run's error
    calls_made: int
    tokens: int
    cost_usd: float


def _eval_config(opts: EvalOptions) -> TrainConfig:
    if opts.base_url and (problem := check_base_url(opts.base_url)):
        raise ConfigError(f"--base-url {opts.base_url!r}: {problem}")
    overrides: list[str] = [f"data.tasks={str(opts.tasks.resolve())!r}", f"data.skill={str(opts.skill.resolve())!r}"]
    if opts.target:
        overrides.append(f"target.backend={opts.target!r}")
    if opts.base_url:
        overrides.append(f"target.base_url={opts.base_url!r}")
    if opts.judge:
        overrides.append(f"judge.backend={opts.judge!r}")
    if opts.metric:
        overrides.append(f"gate.metric={opts.metric!r}")
    if opts.rollouts_k:
        overrides.append(f"train.rollouts_k={opts.rollouts_k}")
    prices = user_config().prices  # over the providers' own
    if opts.config is not None:
        return load_config(opts.config, overrides, prices=prices)
    return TrainConfig.from_overrides(overrides, prices=prices)


def _eval_harness(opts: EvalOptions, models: Models, cfg: TrainConfig, on_event: EventSink) -> HarnessChoice:
    """The harness `eval` replays in: the chat harness on the [target] backend, or
    an agent CLI with its `[harness.<name>]` settings, `--target-model` and `--base-url` on top."""
    registry.check_name(opts.harness)
    if opts.harness == "chat":
        if opts.target_model:
            raise ConfigError(
                "--target-model picks an agent's model; with the chat harness use --target provider:model"
            )
        harness = ChatHarness(
            models.target, log_dir=chat_log_dir(), on_log_error=lambda text: on_event(Notice(text=text))
        )
        return HarnessChoice(harness=harness, label=models.target.label, timeout_s=cfg.target.timeout_s)
    if opts.target:
        raise ConfigError(
            f"--target picks a backend for the chat harness; for {opts.harness} use --target-model MODEL "
            "(and --base-url URL for another model server)"
        )
    return agent_harness(opts.harness, target_model=opts.target_model, base_url=opts.base_url)


def _tasks(opts: EvalOptions, cfg: TrainConfig) -> list[Task]:
    """The tasks of `--tasks` that `--split` picks (all of them by default)."""
    tasks = load_tasks(opts.tasks)
    if opts.split != "all":
        tasks = by_split(assign_splits(tasks, dict(cfg.data.split), cfg.run.seed)).get(opts.split, [])
        if not tasks:
            raise ConfigError(f"no {opts.split} tasks in {opts.tasks}")
    return tasks


@dataclass
class Scoring:
    """What scoring skills on `--tasks` needs, open: the layered config, the skills read, the tasks
    `--split` picks, the ledger, and one Evaluator (its memo shared by every skill scored through it;
    the response cache under it), on the harness `label` names."""

    cfg: TrainConfig
    skills: list[Skill]
    tasks: list[Task]
    ledger: Ledger
    evaluator: Evaluator
    label: str


@asynccontextmanager
async def scoring(opts: EvalOptions, skills: list[Path], *, on_event: EventSink) -> AsyncIterator[Scoring]:
    """Open what `eval` and `compare` score with (settings checked, skill and task files read before
    any model is opened), and close it after."""
    cfg = _eval_config(opts)
    check_run(cfg)
    read = [read_skill(path) for path in skills]
    tasks = _tasks(opts, cfg)
    ledger = Ledger(budget=cfg.budget.to_budget(), prices=cfg.prices)
    store = Store(state_db()) if cfg.cache.enabled else None
    runner = open_executor(opts.executor, on_event=on_event)
    models = Models(cfg.roles, ledger, store, settings_for=model_settings, on_event=on_event)
    try:
        chosen = _eval_harness(opts, models, cfg, on_event)
        ev = Evaluator(
            chosen.harness,
            judge_llm=models.judge,
            gate=cfg.gate,
            rollouts_k=cfg.train.rollouts_k,
            timeout_s=chosen.timeout_s,
            on_event=on_event,
            executor=runner,
        )
        yield Scoring(cfg=cfg, skills=read, tasks=tasks, ledger=ledger, evaluator=ev, label=chosen.label)
    finally:
        await runner.aclose()
        await models.aclose()
        if store is not None:
            store.close()


async def run_eval(opts: EvalOptions, *, on_event: EventSink) -> EvalResult:
    """Score one skill on a task file."""
    async with scoring(opts, [opts.skill], on_event=on_event) as s:
        cfg, tasks, ledger = s.cfg, s.tasks, s.ledger
        on_event(EvalStarted(skill=str(opts.skill), tasks=len(tasks), rollouts_k=cfg.train.rollouts_k, harness=s.label))
        rollouts = await s.evaluator.rollouts(s.skills[0], tasks)
    gate = cfg.gate
    per_task: dict[str, list[Rollout]] = {}
    for r in rollouts:
        per_task.setdefault(r.task_id, []).append(r)
    rows = [
        TaskScore(
            id=tid,
            score=sum(metric_of(r.score, gate.metric, gate.mixed_weight) for r in rs) / len(rs),
            hard=sum(r.score.hard for r in rs) / len(rs),
            soft=sum(r.score.soft for r in rs) / len(rs),
            feedback="; ".join(rs[0].score.feedback),
            error=rs[0].run.error,
        )
        for tid, rs in per_task.items()
    ]
    errors = [r.run.error for r in rollouts if r.run.error is not None]
    if rollouts and len(errors) == len(rollouts):
        raise SkillsleepError(f"every run failed, so there is no score (each would be 0); the first: {errors[0]}")
    return EvalResult(
        skill=str(opts.skill),
        tasks=str(opts.tasks),
        harness=opts.harness,
        n=len(rows),
        metric=gate.metric,
        score=mean({r.id: r.score for r in rows}),
        interval=mean_interval([r.score for r in rows], seed=cfg.run.seed),
        per_task=rows,
        failed=len(errors),
        runs=len(rollouts),
        error=errors[0] if errors else None,
        calls_made=ledger.calls_made,
        tokens=ledger.spent_tokens,
        cost_usd=round(ledger.spent_usd, 6),
    )


def eval_text(s: EvalResult) -> str:
    lines = [f"{s.skill} on {s.tasks} ({s.n} tasks, metric {s.metric}): {s.score:.3f}"]
    for t in s.per_task:
        lines.append(f"  {t.score:.2f}  {t.id}" + (f"  — {t.feedback}" if t.feedback else ""))
    lines.append(s.interval.line())
    if s.failed:
        lines.append(f"failed runs, each scored 0: {s.failed} of {s.runs}; the first: {s.error}")
    return "\n".join(lines)
