"""What the logs of cron/run_sleep_cron.sh say: when the night last ran and how it ended.

`<data>/logs/cron-<UTC time>-<pid>.log` holds one start of the script: a `skillsleep-cron: start`
line, everything `skillsleep run` printed, and a `skillsleep-cron: end … exit N[: why]` line; a
start that found the previous night still running holds one `skillsleep-cron: skipped` line.
A night that ran to its end takes its outcome from its night record (the first night that
started after the script did).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Literal

from skillsleep.core.night.nights import Nights
from skillsleep.core.shared.records import Record

LOGS = "logs"  # <data>/logs
_LINE = re.compile(r"skillsleep-cron: (?P<kind>start|end|skipped) (?P<time>[0-9T:Z-]+): ?(?P<rest>.*)")
_END = re.compile(r"exit (?P<code>[0-9]+)(?:: (?P<why>.*))?")

Outcome = Literal[
    "accepted", "rejected", "no-candidate", "stopped-early", "finished", "failed", "skipped", "unfinished"
]


class LastRun(Record):
    """The newest start of the script."""

    log: str
    started: datetime | None = None
    outcome: Outcome
    exit: int | None = None  # the script's exit code (None: no end line)
    message: str = ""  # why it failed, stopped early or was skipped
    night: int | None = None  # the night it ran, from the night records


def log_dir(data: Path) -> Path:
    return data / LOGS


def last_run(data: Path) -> LastRun | None:
    """The newest `cron-*.log` read back (their names sort by time); None when there is none."""
    logs = sorted(log_dir(data).glob("cron-*.log"))
    if not logs:
        return None
    try:
        text = logs[-1].read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    marks = [m for m in map(_LINE.fullmatch, text.splitlines()) if m]
    if not marks:
        return LastRun(log=str(logs[-1]), outcome="unfinished")
    first, last = marks[0], marks[-1]
    started = _time(first["time"])
    if first["kind"] == "skipped":
        return LastRun(log=str(logs[-1]), started=started, outcome="skipped", exit=0, message=first["rest"])
    end = _END.fullmatch(last["rest"]) if last["kind"] == "end" else None
    if end is None:
        return LastRun(log=str(logs[-1]), started=started, outcome="unfinished")
    code, why = int(end["code"]), end["why"] or ""
    night = next((r for r in Nights(data).list() if started and r.started >= started), None)
    if code == 0:
        outcome: Outcome = night.end.outcome if night and night.end.outcome else "finished"
    else:
        outcome = "stopped-early" if why.startswith("stopped early") else "failed"
    return LastRun(
        log=str(logs[-1]),
        started=started,
        outcome=outcome,
        exit=code,
        message=why,
        night=night.night if night else None,
    )


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
