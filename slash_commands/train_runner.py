"""What `skillsleep train` does (train_cmd.py is its click command): read the run config, the task
file and the skill, check the keys and prices, and wire the environment in (the providers' keys,
the response cache in state.db, the chat logs, where rollouts run, the user's redaction patterns);
the run itself is core's `train()` (core/train/run.py). `train_text()` is its text."""

from __future__ import annotations

from pathlib import Path

from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.model_set import Models
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.events import EventSink, Notice
from skillsleep.core.train.config import load_config
from skillsleep.core.train.paired import PairedComparison
from skillsleep.core.train.run import TrainResult, train
from skillsleep.core.train.tasks import load_tasks
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.slash_commands.runtime import check_run, open_executor, read_skill
from skillsleep.slash_commands.wiring import (
    chat_log_dir,
    effective_settings,
    model_settings,
    state_db,
    user_config,
)


async def run_training(
    config_path: Path,
    overrides: list[str],
    *,
    fresh: bool,
    on_event: EventSink,
    executor: str | None = None,
) -> TrainResult:
    """Train as configured, resuming an unfinished run in the same directory unless `fresh`;
    `executor` ("local" or "ray", None: config.toml's `[executor]`) is where rollouts run."""
    cfg = load_config(config_path, overrides, prices=user_config().prices)
    check_run(cfg)  # keys and prices, before the run folder is made or --fresh removes anything
    # what the optimizer writes is redacted with the user's own patterns too ([harvest] redact_patterns)
    redactor = Redactor(effective_settings().harvest.redact_patterns.value)
    tasks = load_tasks(Path(cfg.data.tasks))
    skill = read_skill(Path(cfg.data.skill))
    stores: list[Store] = []  # the response cache, opened with the models (not for a finished run)

    def open_models(ledger: Ledger, run_id: str) -> Models:
        store = Store(state_db()) if cfg.cache.enabled else None
        stores.extend([store] if store else [])
        return Models(cfg.roles, ledger, store, run_id, settings_for=model_settings, on_event=on_event)

    try:
        return await train(
            cfg,
            tasks,
            skill,
            open_harness=lambda models: _chat(models, on_event),
            open_models=open_models,
            open_executor=lambda: open_executor(executor, on_event=on_event),
            fresh=fresh,
            redactor=redactor,
            on_event=on_event,
        )
    finally:
        for store in stores:
            store.close()


def _chat(models: Models, on_event: EventSink) -> ChatHarness:
    """The chat harness on the target model, logging its episodes to skillsleep's chat-logs folder."""
    return ChatHarness(models.target, log_dir=chat_log_dir(), on_log_error=lambda text: on_event(Notice(text=text)))


def train_text(s: TrainResult) -> str:
    lines = [
        f"run: {s.run_dir}",
        f"selection score: seed {s.seed_score:.3f} → best {s.best_score:.3f} (final {s.final_score:.3f})",
        f"steps: {s.steps}{_skipped(s.skipped)}, candidates accepted {s.accepted}, rejected {s.rejected}",
    ]
    if s.test:
        t = s.test
        lines.append(f"test split: seed {t.seed:.3f}, best {t.best:.3f}, final {t.final:.3f}")
    if s.test_paired:
        lines += paired_lines(s.test_paired)
    lines.append(f"calls: {s.calls_made} made, {s.cache_hits} from cache; tokens {s.tokens}; cost ${s.cost_usd:.4f}")
    if s.stopped:
        lines.append(f"stopped early: {s.stopped} — run the same command again (with a larger budget) to resume")
    if s.problems:
        lines.append(f"optimizer replies that could not be used ({len(s.problems)}; the run went on without them):")
        lines += [f"  {p}" for p in s.problems[:5]]
        lines += ["  … (--json lists them all)"] if len(s.problems) > 5 else []
    lines.append(f"best skill: {s.best_skill}")
    return "\n".join(lines)


def _skipped(n: int) -> str:
    return f" ({n} more skipped: every held-out task already had the top score, no candidate could pass)" if n else ""


TASKS_SHOWN = 10  # the per-task rows train's text shows; --json (and summary.json) has every task


def paired_lines(c: PairedComparison) -> list[str]:
    """The best skill against the seed on the test split: the verdict, how much of the spread is
    sampling noise (or that one sample per task covers the task variation only), then a row per
    task (seed → best, the difference), at most TASKS_SHOWN of them."""
    width = max(len(p.id) for p in c.tasks[:TASKS_SHOWN])
    rows = [f"    {p.id:<{width}}  {p.a_mean:.2f} → {p.b_mean:.2f}  {p.diff:+.2f}" for p in c.tasks[:TASKS_SHOWN]]
    more = c.n_tasks - TASKS_SHOWN
    return [
        f"test split, best against seed (paired per task): {c.verdict}",
        f"  repeatability: {c.repeatability.note}",
        "  per task, seed → best:",
        *rows,
        *([f"    … {more} more (--json lists them all)"] if more > 0 else []),
    ]
