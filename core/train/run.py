"""A whole training run as one library call, what `skillsleep train` runs once it has read its
settings: `train(config, tasks, skill, open_harness=…) -> TrainResult`.

    the run folder (run.out_dir / run.name) → resume its saved state, or start anew (`fresh`
    removes what an earlier run left) → a finished run returns its summary.json again → the
    ledger (its budget covers every earlier invocation) → the models and the harness, opened on
    it → the Trainer over every epoch → the test split (seed, best and final skill) →
    best_skill.md and summary.json, the `TrainResult`

Everything arrives as an argument; nothing here reads the environment. `open_models(ledger,
run_id)` builds the run's `Models` (default: from the config's sections alone, no response cache)
and `open_harness(models)` the harness the tasks run on (the chat harness on `models.target`, or an
agent's); both are called once the run folder and its ledger are known, and the models are closed
at the end. `open_executor()` says where the rollouts run (default: in this process)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.ledger import Ledger, RoleUsage, spent_before
from skillsleep.core.models.model_set import Models
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import BudgetExceeded, ConfigError, FinalScoringFailed
from skillsleep.core.shared.events import EventSink, FinalScoring, Notice, quiet
from skillsleep.core.shared.records import Record, Task
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.executor import Executor, LocalExecutor
from skillsleep.core.train.folder_context import read_context
from skillsleep.core.train.gate import mean
from skillsleep.core.train.harness import Harness
from skillsleep.core.train.paired import SAMPLE_MORE_TRAIN, PairedComparison, compare_scores
from skillsleep.core.train.state import TrainState, config_hash
from skillsleep.core.train.tasks import assign_splits, by_split
from skillsleep.core.train.trainer import Trainer


class SplitScores(Record):
    """The test split's mean score of the seed, the best and the final skill."""

    seed: float
    best: float
    final: float


class StepGate(Record):
    """The gate's verdict at one step (its per-task deltas left out)."""

    epoch: int
    step: int
    baseline: float
    candidate: float
    accepted: bool
    reason: str
    baseline_hash: str
    candidate_hash: str


class TrainResult(Record):
    """What a training run did: summary.json, and what `skillsleep train` prints (`--json`: these
    fields in this order). Usage counts every invocation of the run, resumes included."""

    run_dir: str
    best_skill: str
    done: bool
    stopped: str | None
    failed: str | None = None  # what failed after the training (the test scoring), or None
    epochs: int
    steps: int
    skipped: int = 0  # steps not run: every held-out task already had the top score (core/train/gate.py)
    accepted: int
    rejected: int
    seed_score: float
    best_score: float
    final_score: float
    test: SplitScores | None
    test_tasks: int
    # the best skill against the seed on the test split, paired per task (None: not scored, or a
    # summary.json written before issue 29)
    test_paired: PairedComparison | None = None
    calls_made: int
    cache_hits: int
    tokens: int
    cost_usd: float
    calls_by_role: dict[str, RoleUsage]
    problems: list[str]  # the optimizer's replies that could not be used, as lines (TrainState.problems)
    gate: list[StepGate]


async def train(
    config: TrainConfig,
    tasks: list[Task],
    skill: Skill,
    *,
    open_harness: Callable[[Models], Harness],
    open_models: Callable[[Ledger, str], Models] | None = None,
    open_executor: Callable[[], Executor] = LocalExecutor,
    fresh: bool = False,
    redactor: Redactor | None = None,
    on_event: EventSink = quiet,
) -> TrainResult:
    """Train `skill` on `tasks` as `config` says, resuming an unfinished run in the same folder
    unless `fresh`. `redactor` (default: the built-in rules) redacts what the optimizer writes."""
    splits = by_split(assign_splits(tasks, dict(config.data.split), config.run.seed))
    skill.check_regions(config.data.skill)
    run_dir = _run_dir(config)
    state = _state(run_dir, config, fresh=fresh)
    earlier = _read_result(run_dir) if state is not None and state.done else None
    if earlier is not None and earlier.failed is None:
        on_event(Notice(text=f"{run_dir.path} already finished; showing its summary (--fresh trains again)"))
        return earlier
    ledger = _ledger(config, run_dir, state)
    executor = open_executor()
    try:
        models = (open_models or _plain_models(config))(ledger, str(run_dir.path.resolve()))
        try:
            trainer = Trainer(
                config,
                splits=splits,
                seed_skill=skill,
                evaluator=_evaluator(config, open_harness(models), models, run_dir, executor, on_event),
                optimizer=models.optimizer,
                run_dir=run_dir,
                on_event=on_event,
                redactor=redactor,
                folder=read_context(config, redactor or Redactor()),
            )
            return await _train(trainer, run_dir, state, on_event)
        finally:
            await models.aclose()
    finally:
        await executor.aclose()


def _plain_models(config: TrainConfig) -> Callable[[Ledger, str], Models]:
    """The run's models from `config`'s sections alone: no key or server from the environment, no response cache."""
    return lambda ledger, run_id: Models(config.roles, ledger, run_id=run_id)


def _evaluator(
    config: TrainConfig, harness: Harness, models: Models, run_dir: RunDir, executor: Executor, on_event: EventSink
) -> Evaluator:
    return Evaluator(
        harness,
        judge_llm=models.judge,
        gate=config.gate,
        rollouts_k=config.train.rollouts_k,
        timeout_s=config.target.timeout_s,
        log_path=run_dir.rollouts_path,
        on_event=on_event,
        executor=executor,
    )


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


async def _train(trainer: Trainer, run_dir: RunDir, state: TrainState | None, on_event: EventSink) -> TrainResult:
    """Run (or resume) the training, score the test split, write best_skill.md and summary.json."""
    if state is not None and not state.done:
        on_event(Notice(text=f"resuming {run_dir.path} at epoch {state.epoch + 1}, step {state.step + 1}"))
    final = await trainer.run(state)
    test, paired, failed = None, None, None
    if final.done:
        on_event(FinalScoring(subject="seed, best and final skill", tasks=len(trainer.test)))
        try:
            test, paired = await score_test(trainer, final)
        except BudgetExceeded as exc:
            final.stopped = f"budget: {exc} (test split not scored)"
        except BaseException as exc:  # whatever it is, the paid-for training is written first
            failed = exc
    run_dir.write_text("best_skill.md", final.best)
    result = _result(
        run_dir,
        final,
        test,
        len(trainer.test),
        paired=paired,
        failed=f"scoring the test split: {failed}" if failed is not None else None,
    )
    run_dir.write_json("summary.json", result.model_dump(mode="json"))  # as `train --json` prints it
    if isinstance(failed, Exception):
        raise FinalScoringFailed(
            f"training finished, but scoring the test split failed: {failed}. The best skill is in "
            f"{run_dir.best_path}, the summary in {run_dir.path / 'summary.json'}; run the same command "
            "again to score the test split (the training is not redone)."
        ) from failed
    if failed is not None:
        raise failed  # Ctrl-C and the like end the command as they would anywhere else
    return result


async def score_test(trainer: Trainer, st: TrainState) -> tuple[SplitScores | None, PairedComparison | None]:
    """Test-split scores of the seed, the best and the final skill, and the best against the seed
    paired per task (core/train/paired.py, seeded with run.seed); (None, None) without test tasks."""
    if not trainer.test:
        return None, None
    seed, best, final = [
        await trainer.ev.sample_scores(Skill(t), trainer.test) for t in (st.seed_skill, st.best, st.current)
    ]
    scores = SplitScores(**{k: mean(_means(v)) for k, v in {"seed": seed, "best": best, "final": final}.items()})
    return scores, compare_scores(
        seed, best, seed=trainer.cfg.run.seed, names=("seed", "best"), sample_more=SAMPLE_MORE_TRAIN
    )


def _means(samples: dict[str, list[float]]) -> dict[str, float]:
    return {t: sum(v) / len(v) for t, v in samples.items()}


def _read_result(run_dir: RunDir) -> TrainResult | None:
    """The run's summary.json, or None when there is none (or it cannot be read: it is rewritten)."""
    try:
        return TrainResult.model_validate(json.loads((run_dir.path / "summary.json").read_bytes()))
    except (OSError, ValueError, ValidationError):
        return None


def _result(
    run_dir: RunDir,
    st: TrainState,
    test: SplitScores | None,
    n_test: int,
    *,
    paired: PairedComparison | None = None,
    failed: str | None = None,
) -> TrainResult:
    ledger = run_dir.ledger()  # every invocation of the run, resumes included
    gated = [s for s in st.steps if s.gate is not None]
    return TrainResult(
        run_dir=str(run_dir.path),
        best_skill=str(run_dir.best_path),
        done=st.done,
        stopped=st.stopped,
        failed=failed,
        epochs=st.epoch,
        steps=len(st.steps),
        skipped=st.skipped,
        accepted=sum(1 for s in gated if s.gate and s.gate.accepted),
        rejected=sum(1 for s in gated if s.gate and not s.gate.accepted),
        seed_score=st.seed_score,
        best_score=st.best_score,
        final_score=st.current_score,
        test=test,
        test_tasks=n_test,
        test_paired=paired,
        calls_made=ledger.calls_made,
        cache_hits=ledger.cache_hits,
        tokens=ledger.spent_tokens,
        cost_usd=round(ledger.spent_usd, 6),
        calls_by_role=ledger.usage_by_role(),
        problems=[p.line() for p in st.problems()],
        gate=[StepGate(epoch=s.epoch, step=s.step, **s.gate.model_dump(exclude={"deltas"})) for s in gated if s.gate],
    )
