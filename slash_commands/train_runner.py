"""What `skillsleep train` does (train_cmd.py is its click command): assemble config, backends and
engine, then optimize a skill on a task set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.ledger import Ledger, spent_before
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import BudgetExceeded, ConfigError, FinalScoringFailed
from skillsleep.core.shared.events import EventSink, FinalScoring, Notice
from skillsleep.core.train.config import TrainConfig, load_config
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.tasks import assign_splits, by_split, load_tasks
from skillsleep.core.train.trainer import Trainer, TrainState, config_hash
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.slash_commands.runtime import Models, check_run, open_executor, read_skill
from skillsleep.slash_commands.wiring import chat_log_dir, effective_settings, state_db, user_config


async def run_training(
    config_path: Path,
    overrides: list[str],
    *,
    fresh: bool,
    on_event: EventSink,
    executor: str | None = None,
) -> dict[str, Any]:
    """Train as configured, resuming an unfinished run in the same directory unless `fresh`;
    `executor` ("local" or "ray", None: config.toml's `[executor]`) is where rollouts run."""
    cfg = load_config(config_path, overrides, prices=user_config().prices)
    check_run(cfg)  # keys and prices, before the run folder is made or --fresh removes anything
    # what the optimizer writes is redacted with the user's own patterns too ([harvest] redact_patterns)
    redactor = Redactor(effective_settings().harvest.redact_patterns.value)
    tasks = load_tasks(Path(cfg.data.tasks))
    splits = by_split(assign_splits(tasks, dict(cfg.data.split), cfg.run.seed))
    seed_skill = _seed_skill(cfg)
    run_dir = _run_dir(cfg)
    state = _state(run_dir, cfg, fresh=fresh)
    earlier = _read_summary(run_dir) if state is not None and state.done else None
    if earlier is not None and not earlier.get("failed"):
        on_event(Notice(text=f"{run_dir.path} already finished; showing its summary (--fresh trains again)"))
        return earlier
    ledger = _ledger(cfg, run_dir, state)
    store = Store(state_db()) if cfg.cache.enabled else None
    runner = open_executor(executor, on_event=on_event)
    models = Models(cfg, ledger, store, run_id=str(run_dir.path.resolve()), on_event=on_event)
    try:
        evaluator = Evaluator(
            ChatHarness(models.target, log_dir=chat_log_dir(), on_log_error=lambda text: on_event(Notice(text=text))),
            judge_llm=models.judge,
            gate=cfg.gate,
            rollouts_k=cfg.train.rollouts_k,
            timeout_s=cfg.target.timeout_s,
            log_path=run_dir.rollouts_path,
            on_event=on_event,
            executor=runner,
        )
        trainer = Trainer(
            cfg,
            splits=splits,
            seed_skill=seed_skill,
            evaluator=evaluator,
            optimizer=models.optimizer,
            run_dir=run_dir,
            on_event=on_event,
            redactor=redactor,
        )
        return await _train(trainer, run_dir, state, on_event)
    finally:
        await runner.aclose()
        await models.aclose()
        if store is not None:
            store.close()


def _ledger(cfg: TrainConfig, run_dir: RunDir, state: TrainState | None) -> Ledger:
    """The run's ledger, appending to its ledger.jsonl. Its budget covers the whole run: it starts at
    what every earlier invocation spent (a killed one's calls after its last save too), or at what
    the saved state counted when the ledger holds less."""
    tokens, usd = spent_before(run_dir.ledger_path, cfg.prices)
    return Ledger(
        budget=cfg.budget.to_budget(),
        prices=cfg.prices,
        sinks=[run_dir.append_ledger],
        spent_tokens=max(tokens, state.spent_tokens if state else 0),
        spent_usd=max(usd, state.spent_usd if state else 0.0),
    )


def _seed_skill(cfg: TrainConfig) -> Skill:
    """The seed skill, refused (naming the lines) when its region markers do not pair up."""
    seed_skill = read_skill(Path(cfg.data.skill))
    seed_skill.check_regions(cfg.data.skill)
    return seed_skill


def _run_dir(cfg: TrainConfig) -> RunDir:
    """The run's folder (run.out_dir / run.name), created; a ConfigError when it cannot be."""
    folder = Path(cfg.run.out_dir) / cfg.run.name
    try:
        return RunDir(folder)
    except OSError as exc:
        raise ConfigError(
            f"the run folder {folder} cannot be created ({exc.strerror or exc}); "
            "set run.out_dir or run.name so that it is a folder you can write to"
        ) from None


def _state(run_dir: RunDir, cfg: TrainConfig, *, fresh: bool) -> TrainState | None:
    """The run's saved state to resume (None: start anew; `fresh` removes what an earlier run left)."""
    state = None if fresh else run_dir.load("state.json", TrainState)
    if fresh:
        for name in ("state.json", "rollouts.jsonl", "ledger.jsonl", "best_skill.md", "summary.json"):
            (run_dir.path / name).unlink(missing_ok=True)
    if state is not None and state.config_hash != config_hash(cfg):
        raise ConfigError(
            f"{run_dir.path} holds a run made with other settings; pass --fresh to start over "
            "or set run.name to train in a new directory."
        )
    return state


async def _train(trainer: Trainer, run_dir: RunDir, state: TrainState | None, on_event: EventSink) -> dict[str, Any]:
    """Run (or resume) the training, score the test split, write best_skill.md and summary.json."""
    if state is not None and not state.done:
        on_event(Notice(text=f"resuming {run_dir.path} at epoch {state.epoch + 1}, step {state.step + 1}"))
    final = await trainer.run(state)
    test, failed = None, None
    if final.done:
        on_event(FinalScoring(subject="seed, best and final skill", tasks=len(trainer.test)))
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


def train_text(s: dict[str, Any]) -> str:
    lines = [
        f"run: {s['run_dir']}",
        f"selection score: seed {s['seed_score']:.3f} → best {s['best_score']:.3f} (final {s['final_score']:.3f})",
        f"steps: {s['steps']}, candidates accepted {s['accepted']}, rejected {s['rejected']}",
    ]
    if s.get("test"):
        t = s["test"]
        lines.append(f"test split: seed {t['seed']:.3f}, best {t['best']:.3f}, final {t['final']:.3f}")
    lines.append(
        f"calls: {s['calls_made']} made, {s['cache_hits']} from cache; tokens {s['tokens']}; cost ${s['cost_usd']:.4f}"
    )
    if s.get("stopped"):
        lines.append(f"stopped early: {s['stopped']} — run the same command again (with a larger budget) to resume")
    if s.get("problems"):
        lines.append(f"optimizer replies that could not be used ({len(s['problems'])}; the run went on without them):")
        lines += [f"  {p}" for p in s["problems"][:5]]
        lines += ["  … (--json lists them all)"] if len(s["problems"]) > 5 else []
    lines.append(f"best skill: {s['best_skill']}")
    return "\n".join(lines)
