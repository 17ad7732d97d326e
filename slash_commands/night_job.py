"""The night's schedule as every scheduler sees it: the job to run, what is installed, what changed,
and the Scheduler protocol each place (schedulers.schedulers()) follows."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Protocol

from pydantic import Field

from skillsleep.core.shared.records import Record
from skillsleep.slash_commands.cron_table import When

__all__ = ["Change", "NightJob", "Scheduled", "Scheduler"]


class NightJob(Record):
    """One night as cron or a timer starts it: `cd cwd && env… argv…` (`argv` is `/bin/sh
    run_sleep_cron.sh SKILLSLEEP RUN-FLAGS…`; `env` holds paths and names, never a secret)."""

    when: When
    cwd: Path
    env: dict[str, str]
    argv: list[str]

    def shell(self) -> str:
        """The job as one `/bin/sh` command line."""
        env = " ".join(f"{name}={shlex.quote(value)}" for name, value in self.env.items())
        return f"cd {shlex.quote(str(self.cwd))} && {env} {shlex.join(self.argv)}"


class Scheduled(Record):
    """What is installed now, for `status`."""

    via: str
    when: str  # "03:00 daily", "cron `0 3 * * 1`"
    where: str  # "the crontab of ada", a unit file's path
    entry: str  # the crontab line, the timer's OnCalendar


class Change(Record):
    """What `install` or `remove` did."""

    via: str
    where: str
    done: bool  # installed / removed (False: there was nothing to remove)
    replaced: bool = False  # an earlier skillsleep schedule was replaced
    written: list[str] = Field(default_factory=list)  # files written or removed
    todo: list[str] = Field(default_factory=list)  # commands the user still has to run


class Scheduler(Protocol):
    """A place the night's schedule can live. Bad input (a refusal, a file it does not own) is a
    ConfigError that changes nothing."""

    name: str

    def where(self) -> str: ...

    def preview(self, job: NightJob) -> str:
        """What `install` would write."""
        ...

    def install(self, job: NightJob) -> Change:
        """Write the job, replacing an earlier one of ours (never adding a second)."""
        ...

    def remove(self) -> Change:
        """Remove what `install` wrote, and only that."""
        ...

    def current(self) -> Scheduled | None:
        """What is installed now (None: nothing, or this place cannot be used here)."""
        ...
