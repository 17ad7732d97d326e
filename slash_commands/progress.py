"""Progress of a verb on stderr: stage lines, and on a terminal a live count of scored rollouts."""

from __future__ import annotations

import sys
from typing import Any

import click

__all__ = ["Progress", "progress"]


class Progress:
    """Stage lines (`· message`) on stderr; on a terminal also a live count of finished rollouts
    (a rich progress display, started by the first `tick()`), which `stop()` clears before a
    command prints its result. Off a terminal only the plain lines are written."""

    def __init__(self) -> None:
        self._live: Any = None  # rich.progress.Progress while the live count is shown
        self._count: Any = None  # its task id

    def __call__(self, message: str) -> None:
        if self._live is None:
            click.echo(f"· {message}", err=True)
        else:  # above the live count
            self._live.console.print(f"· {message}", markup=False, highlight=False, emoji=False, soft_wrap=True)

    def tick(self, _: object = None) -> None:
        if self._live is None:
            if not sys.stderr.isatty():
                return
            from rich.console import Console
            from rich.progress import Progress as Live
            from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

            self._live = Live(
                SpinnerColumn(),
                TextColumn("{task.completed:.0f} rollouts scored"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._count = self._live.add_task("rollouts", total=None)
            self._live.start()
        self._live.advance(self._count)

    def stop(self) -> None:
        """Clear the live count (if shown); later lines are plain again. Safe to call twice."""
        live, self._live = self._live, None
        if live is not None:
            live.stop()


progress = Progress()
