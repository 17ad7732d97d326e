"""`skillsleep eval`: the click command. Scoring a skill on a task file (a transfer check), on the
chat harness or an agent CLI, is eval_runner.run_eval, imported when the verb runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import agent_target_options, executor_option, scoring_options
from skillsleep.slash_commands.output import emit
from skillsleep.slash_commands.progress import progress

__all__ = ["eval_"]


@click.command("eval")
@click.option("--skill", "skill_path", required=True, type=click.Path(path_type=Path), help="Skill to score.")
@scoring_options("Which tasks to score.")
@click.option("--rollouts-k", type=click.IntRange(min=1), help="Samples per task.")
@agent_target_options
@executor_option
@click.option("--json", "as_json", is_flag=True, help="Print scores as JSON; progress events as JSON lines on stderr.")
@guard
def eval_(
    skill_path: Path,
    tasks_path: Path,
    config_path: Path | None,
    target_spec: str | None,
    base_url: str | None,
    judge_spec: str | None,
    metric: str | None,
    split: str,
    rollouts_k: int | None,
    harness_name: str,
    target_model: str | None,
    executor: str | None,
    as_json: bool,
) -> None:
    """Score a skill on a task file (a transfer check): `skillsleep eval --skill S --tasks T`."""
    from skillsleep.slash_commands.eval_runner import EvalOptions, eval_text, run_eval

    opts = EvalOptions(
        skill=skill_path,
        tasks=tasks_path,
        config=config_path,
        target=target_spec,
        base_url=base_url,
        judge=judge_spec,
        metric=metric,
        split=split,
        rollouts_k=rollouts_k,
        harness=harness_name,
        target_model=target_model,
        executor=executor,
    )
    progress.start(json_lines=as_json)
    emit(asyncio.run(run_eval(opts, on_event=progress)), as_json, eval_text)
