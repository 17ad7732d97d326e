"""`train`, `eval` and `backends`: assemble config, backends, harness and engine, then run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from skillsleep.core.backends.base import check_base_url
from skillsleep.core.backends.registry import check_provider, parse_spec, provider_infos
from skillsleep.core.config import TrainConfig, load_config
from skillsleep.core.errors import BudgetExceeded, ConfigError, FinalScoringFailed
from skillsleep.core.evaluate import Evaluator
from skillsleep.core.gate import mean
from skillsleep.core.judges import metric as metric_of
from skillsleep.core.ledger import Ledger
from skillsleep.core.records import Rollout
from skillsleep.core.redact import Redactor
from skillsleep.core.rundir import RunDir
from skillsleep.core.skill import Skill
from skillsleep.core.store import Store
from skillsleep.core.tasks import assign_splits, by_split, load_tasks
from skillsleep.core.textfile import read_text_file
from skillsleep.core.trainer import Trainer, TrainState, config_hash
from skillsleep.harnesses import registry
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.skills import SKILL_FILE
from skillsleep.slash_commands.runtime import Models, agent_harness
from skillsleep.slash_commands.wiring import (
    backend_settings,
    chat_log_dir,
    effective_settings,
    state_db,
)

Progress = Callable[[str], None]


def _read_skill(path: Path) -> Skill:
    inside = path / SKILL_FILE
    instead = (
        f"the skill file itself, e.g. {inside}" if inside.is_file() else f"a markdown skill file such as {SKILL_FILE}"
    )
    return Skill.parse(read_text_file(path, "skill file", instead=instead))


async def run_training(
    config_path: Path,
    overrides: list[str],
    *,
    fresh: bool,
    progress: Progress,
    on_rollout: Callable[[Rollout], None] | None = None,
) -> dict[str, Any]:
    """Train as configured, resuming an unfinished run in the same directory unless `fresh`."""
    cfg = load_config(config_path, overrides)
    # what the optimizer writes is redacted with the user's own patterns too ([harvest] redact_patterns)
    redactor = Redactor(effective_settings().harvest.redact_patterns.value)
    tasks = load_tasks(Path(cfg.data.tasks))
    splits = by_split(assign_splits(tasks, dict(cfg.data.split), cfg.run.seed))
    seed_skill = _read_skill(Path(cfg.data.skill))
    folder = Path(cfg.run.out_dir) / cfg.run.name
    try:
        run_dir = RunDir(folder)
    except OSError as exc:
        raise ConfigError(
            f"the run folder {folder} cannot be created ({exc.strerror or exc}); "
            "set run.out_dir or run.name so that it is a folder you can write to"
        ) from None
    state = None if fresh else run_dir.load("state.json", TrainState)
    if fresh:
        for name in ("state.json", "rollouts.jsonl", "ledger.jsonl", "best_skill.md", "summary.json"):
            (run_dir.path / name).unlink(missing_ok=True)
    if state is not None and state.config_hash != config_hash(cfg):
        raise ConfigError(
            f"{run_dir.path} holds a run made with other settings; pass --fresh to start over "
            "or set run.name to train in a new directory."
        )
    earlier = _read_summary(run_dir) if state is not None and state.done else None
    if earlier is not None and not earlier.get("failed"):
        progress(f"{run_dir.path} already finished; showing its summary (--fresh trains again)")
        return earlier
    ledger = Ledger(
        budget=cfg.budget.to_budget(),
        prices=cfg.prices,
        sinks=[run_dir.append_ledger],
        spent_tokens=state.spent_tokens if state else 0,
        spent_usd=state.spent_usd if state else 0.0,
    )
    store = Store(state_db()) if cfg.cache.enabled else None
    models = Models(cfg, ledger, store, run_id=str(run_dir.path.resolve()), progress=progress)
    try:
        evaluator = Evaluator(
            ChatHarness(models.target, log_dir=chat_log_dir(), on_log_error=progress),
            judge_llm=models.judge,
            gate=cfg.gate,
            rollouts_k=cfg.train.rollouts_k,
            timeout_s=cfg.target.timeout_s,
            log_path=run_dir.rollouts_path,
            on_rollout=on_rollout,
        )
        trainer = Trainer(
            cfg,
            splits=splits,
            seed_skill=seed_skill,
            evaluator=evaluator,
            optimizer=models.optimizer,
            run_dir=run_dir,
            progress=progress,
            redactor=redactor,
        )
        if state is not None and not state.done:
            progress(f"resuming {run_dir.path} at epoch {state.epoch + 1}, step {state.step + 1}")
        final = await trainer.run(state)
        test, failed = None, None
        if final.done:
            progress(f"scoring seed, best and final skill on {len(trainer.test)} test tasks")
            try:
                test = await trainer.score_test(final)
            except BudgetExceeded as exc:
                final.stopped = f"budget: {exc} (test split not scored)"
            except BaseException as exc:  # whatever it is, the paid-for training is written first
                failed = exc
        run_dir.write_text("best_skill.md", final.best)
        summary = _summary(
            run_dir,
            final,
            test,
            len(trainer.test),
            failed=f"scoring the test split: {failed}" if failed is not None else None,
        )
        run_dir.write_json("summary.json", summary)
        if isinstance(failed, Exception):
            raise FinalScoringFailed(
                f"training finished, but scoring the test split failed: {failed}. The best skill is in "
                f"{run_dir.best_path}, the summary in {run_dir.path / 'summary.json'}; run the same command "
                "again to score the test split (the training is not redone)."
            ) from failed
        if failed is not None:
            raise failed  # Ctrl-C and the like end the command as they would anywhere else
        return summary
    finally:
        await models.aclose()
        if store is not None:
            store.close()


def _read_summary(run_dir: RunDir) -> dict[str, Any] | None:
    """The run's summary.json, or None when there is none (or it cannot be read: it is rewritten)."""
    try:
        value = json.loads((run_dir.path / "summary.json").read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _summary(
    run_dir: RunDir, st: TrainState, test: dict[str, float] | None, n_test: int, *, failed: str | None = None
) -> dict[str, Any]:
    ledger = run_dir.ledger()  # every invocation of the run, resumes included
    roles = ledger.by_role()
    gated = [s for s in st.steps if s.gate is not None]
    return {
        "run_dir": str(run_dir.path),
        "best_skill": str(run_dir.best_path),
        "done": st.done,
        "stopped": st.stopped,
        "failed": failed,  # what failed after the training (the test scoring), or None
        "epochs": st.epoch,
        "steps": len(st.steps),
        "accepted": sum(1 for s in gated if s.gate and s.gate.accepted),
        "rejected": sum(1 for s in gated if s.gate and not s.gate.accepted),
        "seed_score": st.seed_score,
        "best_score": st.best_score,
        "final_score": st.current_score,
        "test": test,
        "test_tasks": n_test,
        "calls_made": ledger.calls_made,
        "cache_hits": ledger.cache_hits,
        "tokens": ledger.spent_tokens,
        "cost_usd": round(ledger.spent_usd, 6),
        "calls_by_role": roles,
        "problems": [p.line() for p in st.problems()],
        "gate": [
            {"epoch": s.epoch, "step": s.step, **s.gate.model_dump(mode="json", exclude={"deltas"})}
            for s in gated
            if s.gate
        ],
    }


class EvalOptions(BaseModel):
    """What `skillsleep eval` was asked to do."""

    model_config = ConfigDict(extra="forbid")

    skill: Path
    tasks: Path
    config: Path | None = None
    target: str | None = None
    base_url: str | None = None
    judge: str | None = None
    metric: str | None = None
    split: str = "all"
    rollouts_k: int | None = None
    harness: str = "chat"
    target_model: str | None = None


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
    if opts.config is not None:
        return load_config(opts.config, overrides)
    return TrainConfig.from_overrides(overrides)


def _eval_harness(opts: EvalOptions, models: Models, cfg: TrainConfig, progress: Progress) -> tuple[Any, str, float]:
    """(harness, label, per-run timeout) for `eval`: the chat harness on the [target] backend, or
    an agent CLI with its `[harness.<name>]` settings, `--target-model` and `--base-url` on top."""
    registry.check_name(opts.harness)
    if opts.harness == "chat":
        if opts.target_model:
            raise ConfigError(
                "--target-model picks an agent's model; with the chat harness use --target provider:model"
            )
        harness = ChatHarness(models.target, log_dir=chat_log_dir(), on_log_error=progress)
        return harness, models.target.label, cfg.target.timeout_s
    if opts.target:
        raise ConfigError(
            f"--target picks a backend for the chat harness; for {opts.harness} use --target-model MODEL "
            "(and --base-url URL for another model server)"
        )
    return agent_harness(opts.harness, target_model=opts.target_model, base_url=opts.base_url)


async def run_eval(
    opts: EvalOptions, *, progress: Progress, on_rollout: Callable[[Rollout], None] | None = None
) -> dict[str, Any]:
    """Score one skill on a task file."""
    cfg = _eval_config(opts)
    skill = _read_skill(opts.skill)
    tasks = load_tasks(opts.tasks)
    if opts.split != "all":
        tasks = by_split(assign_splits(tasks, dict(cfg.data.split), cfg.run.seed)).get(opts.split, [])
        if not tasks:
            raise ConfigError(f"no {opts.split} tasks in {opts.tasks}")
    ledger = Ledger(budget=cfg.budget.to_budget(), prices=cfg.prices)
    store = Store(state_db()) if cfg.cache.enabled else None
    models = Models(cfg, ledger, store, run_id="", progress=progress)
    gate = cfg.gate
    try:
        harness, label, timeout_s = _eval_harness(opts, models, cfg, progress)
        ev = Evaluator(
            harness,
            judge_llm=models.judge,
            gate=gate,
            rollouts_k=cfg.train.rollouts_k,
            timeout_s=timeout_s,
            on_rollout=on_rollout,
        )
        progress(f"scoring {opts.skill} on {len(tasks)} tasks × {cfg.train.rollouts_k} with {label}")
        rollouts = await ev.rollouts(skill, tasks)
    finally:
        await models.aclose()
        if store is not None:
            store.close()
    per_task: dict[str, list[Any]] = {}
    for r in rollouts:
        per_task.setdefault(r.task_id, []).append(r)
    rows = [
        {
            "id": tid,
            "score": sum(metric_of(r.score, gate.metric, gate.mixed_weight) for r in rs) / len(rs),
            "hard": sum(r.score.hard for r in rs) / len(rs),
            "soft": sum(r.score.soft for r in rs) / len(rs),
            "feedback": "; ".join(rs[0].score.feedback),
            "error": rs[0].run.error,
        }
        for tid, rs in per_task.items()
    ]
    return {
        "skill": str(opts.skill),
        "tasks": str(opts.tasks),
        "harness": opts.harness,
        "n": len(rows),
        "metric": gate.metric,
        "score": mean({r["id"]: r["score"] for r in rows}),
        "per_task": rows,
        "calls_made": ledger.calls_made,
        "tokens": ledger.spent_tokens,
        "cost_usd": round(ledger.spent_usd, 6),
    }


async def list_backends() -> list[dict[str, Any]]:
    """Every provider with whether it is usable here and how to configure it."""
    infos = provider_infos()

    async def row(info: Any) -> dict[str, Any]:
        model = info.default_model or (info.models[0] if info.models else "")
        settings = backend_settings(info.name, model)
        configured, reason = await check_provider(info.name, settings)
        return {
            "name": info.name,
            "configured": configured,
            "reason": reason,
            "how_to_configure": info.how_to_configure,
            "models": info.models,
            "default_model": info.default_model,
            "key_env": info.key_env,
        }

    return list(await asyncio.gather(*(row(i) for i in infos)))


__all__ = ["EvalOptions", "list_backends", "parse_spec", "run_eval", "run_training"]
