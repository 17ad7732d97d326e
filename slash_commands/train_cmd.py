"""`skillsleep train`: the click command. Assembling config, backends and engine and optimizing a
skill on a task set is train_runner.run_training, imported when the verb runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import executor_option
from skillsleep.slash_commands.output import emit
from skillsleep.slash_commands.progress import progress

__all__ = ["train"]


@click.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path), help="Run config (TOML).")
@click.argument("overrides", nargs=-1)
@click.option("--fresh", is_flag=True, help="Start over even if the run directory holds a resumable run.")
@click.option("--budget-tokens", type=click.IntRange(min=1), help="Hard cap on tokens for this run.")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True), help="Hard cap on money (USD).")
@executor_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the run summary as JSON on stdout; progress events as JSON lines on stderr.",
)
@guard
def train(
    config_path: Path,
    overrides: tuple[str, ...],
    fresh: bool,
    budget_tokens: int | None,
    budget_usd: float | None,
    executor: str | None,
    as_json: bool,
) -> None:
    """Optimize a skill on a task set: `skillsleep train --config run.toml [section.key=value ...]`."""
    from skillsleep.slash_commands.train_runner import run_training, train_text

    extra = list(overrides)
    if budget_tokens is not None:
        extra.append(f"budget.tokens={budget_tokens}")
    if budget_usd is not None:
        extra.append(f"budget.usd={budget_usd}")
    progress.start(json_lines=as_json)
    result = asyncio.run(run_training(config_path, extra, fresh=fresh, on_event=progress, executor=executor))
    emit(result, as_json, train_text)
