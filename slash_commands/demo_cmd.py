"""`skillsleep demo`: the click command. The demo itself (the scratch folder, the samples, the
night, the model) is demo_runner.run_demo, imported when the verb runs."""

from __future__ import annotations

from pathlib import Path

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import emit
from skillsleep.slash_commands.progress import progress

__all__ = ["demo_"]


@click.command("demo")
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=Path),
    help="The demo folder: a new or empty one (default: a new temporary folder).",
)
@click.option("--backend", help="The model of every role (default: local:qwen2.5-coder-0.5b, the embedded one).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print what happened and the next commands as JSON; progress events as JSON lines on stderr.",
)
@guard(state=False)  # the demo works in its own folder (it reads and fills only the model cache here)
def demo_(folder: Path | None, backend: str | None, as_json: bool) -> None:
    """A whole night on recorded sample sessions, in a scratch folder of its own, ending in a proposal
    to diff and adopt there."""
    from skillsleep.slash_commands.demo_runner import demo_text, run_demo

    progress.start(json_lines=as_json)
    emit(run_demo(folder, backend, on_event=progress, echo=lambda line: click.echo(line, err=True)), as_json, demo_text)
