"""`skillsleep compare A B --tasks FILE`: the click command. Scoring two skills on the same tasks and
samples and comparing them pairwise is compare_runner.run_compare, imported when the verb runs; its
text, markdown and HTML are compare_render.py's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import agent_target_options, executor_option, scoring_options
from skillsleep.slash_commands.output import output_options, resolve, show
from skillsleep.slash_commands.progress import progress

__all__ = ["compare_"]


@click.command("compare")
@click.argument("a_path", metavar="A", type=click.Path(path_type=Path))
@click.argument("b_path", metavar="B", type=click.Path(path_type=Path))
@scoring_options("Which tasks to compare on.")
@click.option(
    "--samples", type=click.IntRange(min=1), help="Samples per task and skill (default: the config's rollouts_k, 1)."
)
@agent_target_options
@executor_option
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path),
    help="Also write the comparison as one self-contained HTML page (a paired dot plot per task) to this file.",
)
@output_options("Print the comparison as JSON; progress events as JSON lines on stderr.")
@guard
def compare_(
    a_path: Path,
    b_path: Path,
    tasks_path: Path,
    config_path: Path | None,
    target_spec: str | None,
    base_url: str | None,
    judge_spec: str | None,
    metric: str | None,
    split: str,
    samples: int | None,
    harness_name: str,
    target_model: str | None,
    executor: str | None,
    html_path: Path | None,
    as_json: bool,
    fmt: str | None,
) -> None:
    """Compare two skills on the same tasks: `skillsleep compare A.md B.md --tasks T` (is B better?)."""
    from skillsleep.slash_commands.compare_render import compare_html, compare_text, write_html
    from skillsleep.slash_commands.compare_runner import CompareOptions, run_compare

    out = resolve(fmt, as_json)
    opts = CompareOptions(
        a=a_path,
        b=b_path,
        tasks=tasks_path,
        config=config_path,
        target=target_spec,
        base_url=base_url,
        judge=judge_spec,
        metric=metric,
        split=split,
        samples=samples,
        harness=harness_name,
        target_model=target_model,
        executor=executor,
        html=html_path,
    )
    progress.start(json_lines=out.fmt == "json")
    result = asyncio.run(run_compare(opts, on_event=progress))
    if html_path is not None:
        write_html(html_path, compare_html(result))
    show(result, out, compare_text, lambda r, _prefix: compare_text(r, False))
