"""`skillsleep watch`: the click command. Harvesting a session's new bytes shortly after its
transcript changes is watcher.run_watch, imported when the verb runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import chat_dir_option, redact_pattern_option
from skillsleep.slash_commands.progress import progress

if TYPE_CHECKING:
    from skillsleep.slash_commands.watcher import Report

__all__ = ["watch"]


@click.command()
@click.option(
    "--debounce",
    "debounce_s",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Seconds of quiet after a transcript changes before it is harvested.",
)
@click.option(
    "--duration",
    "duration_s",
    type=click.FloatRange(min=0),
    help="Stop after this many seconds (default: until Ctrl-C).",
)
@chat_dir_option("Watch this folder of direct-chat logs too, besides the agents' transcripts")
@redact_pattern_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per harvest, one per line.")
@guard
def watch(
    debounce_s: float,
    duration_s: float | None,
    chat_dirs: tuple[Path, ...],
    redact_patterns: tuple[str, ...],
    as_json: bool,
) -> None:
    """Harvest new transcript bytes shortly after an agent writes them (same path as `harvest`)."""

    from skillsleep.slash_commands.watcher import Told, report_line, run_watch
    from skillsleep.slash_commands.wiring import effective_settings

    told = Told()  # what cannot be read (and the like) is said once, not in every harvest

    def on_report(r: Report) -> None:
        click.echo(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) if as_json else report_line(told.news(r)))

    def on_start(roots: list[tuple[str, Path]]) -> None:
        progress.notice("watching " + ", ".join(f"{h} {p}" for h, p in roots) + " (Ctrl-C to stop)")

    run_watch(debounce_s, duration_s, effective_settings(chat_dirs, redact_patterns), on_report, on_start)
