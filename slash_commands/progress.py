"""Progress of a verb on stderr, rendered from the engine's events (core/shared/events.py):

    on a terminal   `· line` for each event that has one, above a live display of the rollouts
                    scored so far, where they run on a cluster (in flight, done per node) and the
                    stage or step the run is in (rich); `stop()` clears it before a command
                    prints its result
    otherwise       `· line` for each event that has one (the same lines, nothing live)
    JSON lines      `start(json_lines=True)` (`--json`, a detached night's log): one object per
                    event, `kind` first, then `ts` (UTC), then the event's fields; every event,
                    each finished rollout and the harvest's counts too

`plain_lines()` turns what was written back into the `· line` text (a detached night's log).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # the events are imported on first use: every verb imports this module, --help too
    from pydantic import TypeAdapter

    from skillsleep.core.shared.events import Event

__all__ = ["Progress", "event_line", "plain_lines", "progress", "read_event"]

STAGE_CHARS = 100  # the live display's stage text is cut to this


class Progress:
    """The event sink of the command line (see the module docstring)."""

    def __init__(self) -> None:
        self.json_lines = False
        self._live: Any = None  # rich.progress.Progress while the live display is shown
        self._task: Any = None  # its task id
        self._stage = ""  # the latest line, shown beside the count
        self._where = ""  # where a cluster's rollouts are (in flight, done per node), after the count

    def start(self, *, json_lines: bool = False) -> None:
        """Render this command's events as JSON lines, or as lines for a person (the default)."""
        self.json_lines = json_lines

    def __call__(self, event: Event, /) -> None:
        if self.json_lines:
            click.echo(event_line(event), err=True)
        elif event.kind == "rollout_done":
            self._tick()
        elif event.kind == "cluster_load":
            self._where = f" ({event.describe()})"
            if self._live is not None:
                self._live.update(self._task, where=self._where)
        elif event.shown:
            self._line(event.describe())

    def notice(self, text: str) -> None:
        """A line of the command's own (a warning from the harness, a resumed run)."""
        from skillsleep.core.shared.events import Notice

        self(Notice(text=text))

    def _line(self, text: str) -> None:
        self._stage = text if len(text) <= STAGE_CHARS else text[: STAGE_CHARS - 1] + "…"
        if self._live is None:
            click.echo(f"· {text}", err=True)
            return
        self._live.console.print(f"· {text}", markup=False, highlight=False, emoji=False, soft_wrap=True)
        self._live.update(self._task, description=self._stage)

    def _tick(self) -> None:
        if self._live is None:
            if not sys.stderr.isatty():
                return
            from rich.console import Console
            from rich.progress import Progress as Live
            from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

            self._live = Live(
                SpinnerColumn(),
                TextColumn("{task.completed:.0f} rollouts scored{task.fields[where]}", markup=False),
                TimeElapsedColumn(),
                TextColumn("{task.description}", markup=False),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._live.add_task(self._stage, total=None, where=self._where)
            self._live.start()
        self._live.advance(self._task)

    def stop(self) -> None:
        """Clear the live display (if shown); later lines are plain again, and the next command's
        events are lines for a person unless it says otherwise. Safe to call twice."""
        live, self._live = self._live, None
        self.json_lines, self._stage, self._where = False, "", ""
        if live is not None:
            live.stop()


@cache
def _events() -> TypeAdapter[Event]:
    from pydantic import TypeAdapter

    from skillsleep.core.shared.events import Event

    return TypeAdapter(Event)


def event_line(event: Event, now: datetime | None = None) -> str:
    """One event as a JSON line: `kind`, `ts` (UTC, ISO 8601), then the event's fields."""
    fields = event.model_dump(mode="json")
    when = (now or datetime.now(UTC)).isoformat(timespec="milliseconds")
    return json.dumps({"kind": fields.pop("kind"), "ts": when, **fields}, ensure_ascii=False)


def read_event(line: str) -> Event | None:
    """The event an `event_line()` holds; None for any other line."""
    if not line.startswith('{"kind": '):
        return None
    try:
        data = json.loads(line)
        data.pop("ts", None)
        return _events().validate_python(data)
    except ValueError:  # not JSON, or not one of our events (pydantic's ValidationError is one): as it is
        return None


def plain_lines(lines: Iterable[str]) -> list[str]:
    """What a person reads of a log of event lines and other output: each event's `· line` (none
    for those without one, such as each rollout), every other line as it is."""
    out = []
    for line in lines:
        event = read_event(line)
        if event is None:
            out.append(line)
        elif event.shown:
            out.append(f"· {event.describe()}")
    return out


progress = Progress()
