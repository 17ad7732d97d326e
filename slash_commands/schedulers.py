"""Where the night's schedule lives: one small class each, found by name in SCHEDULERS.

    NightJob     what runs: when, in which folder, with which environment and command line
    Scheduler    the protocol: preview / install / remove what it wrote, and read what is there
    Crontab      a managed block in the current user's crontab, through the `crontab` command

A new place (an OpenClaw cron job, launchd) is one more class with these four methods, one entry
in SCHEDULERS, and one `--<name>` switch on `schedule` / `unschedule` in cli.py. Each one writes
only what it owns and says what to run by hand when it cannot do it itself (`Change.todo`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Protocol

from pydantic import Field

from skillsleep.core.errors import ConfigError
from skillsleep.core.records import Record
from skillsleep.slash_commands.cron_table import BEGIN, END, When, cron_line, read_block, remove_block, set_block


class NightJob(Record):
    """One night as cron or a timer starts it: `cd cwd && env… argv…` (`argv` is `/bin/sh
    run_sleep_cron.sh SKILLSLEEP RUN-FLAGS…`; `env` holds paths and names, never a secret)."""

    when: When
    cwd: Path
    env: dict[str, str]
    argv: list[str]
    run_flags: list[str] = Field(default_factory=list)

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


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


class Crontab:
    """The current user's crontab, edited with `crontab -l` / `crontab -` (cron need not be running):
    one managed block (cron_table.py), every other line kept."""

    name = "crontab"

    def where(self) -> str:
        return f"the crontab of {_user()}"

    def preview(self, job: NightJob) -> str:
        return "\n".join([BEGIN, self.line(job), END])

    def line(self, job: NightJob) -> str:
        return cron_line(job.when, job.shell())

    def install(self, job: NightJob) -> Change:
        old = self.read()
        replaced = read_block(old) is not None  # a block left open fails here, before any write
        self.write(set_block(old, [self.line(job)]))
        return Change(via=self.name, where=self.where(), done=True, replaced=replaced)

    def remove(self) -> Change:
        old = self.read()
        if read_block(old) is None:
            return Change(via=self.name, where=self.where(), done=False)
        self.write(remove_block(old))
        return Change(via=self.name, where=self.where(), done=True)

    def current(self) -> Scheduled | None:
        if shutil.which("crontab") is None:
            return None
        try:
            text = self.read()
        except ConfigError:  # this user may not use cron: nothing can be scheduled there
            return None
        block = read_block(text)  # a block left open is a problem status lists
        if not block:
            return None
        return Scheduled(via=self.name, when=When.parse(block[0]).describe(), where=self.where(), entry=block[0])

    def read(self) -> str:
        """The crontab's text ("" when the user has none)."""
        done = self._crontab("-l")
        if done.returncode == 0:
            return done.stdout
        if "no crontab for" in done.stderr:
            return ""
        raise self._refused("read", done)

    def write(self, text: str) -> None:
        """Install `text` as the crontab (none at all when it is empty); crontab keeps the old one
        when it refuses the new."""
        if text and not text.endswith("\n"):
            text += "\n"  # crontab refuses a table whose last line has no newline
        done = self._crontab("-", text=text) if text else self._crontab("-r")
        if done.returncode != 0:
            raise self._refused("write", done)

    def _crontab(self, *args: str, text: str | None = None) -> subprocess.CompletedProcess[str]:
        exe = shutil.which("crontab")
        if exe is None:
            raise ConfigError("crontab is not installed here (Debian/Ubuntu: `apt-get install cron`; Fedora: "
                              "`dnf install cronie`); install it, or schedule with --systemd instead")
        return subprocess.run([exe, *args], input=text, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "LC_ALL": "C"})

    def _refused(self, what: str, done: subprocess.CompletedProcess[str]) -> ConfigError:
        said = " ".join(done.stderr.split()) or f"exit code {done.returncode}"
        hint = ("the line is too long for cron: move run flags into [sleep] in config.toml"
                if "too long" in said else
                "if you may not use cron here (/etc/cron.allow, /etc/cron.deny), ask an administrator, "
                "or schedule with --systemd instead")
        return ConfigError(f"crontab refused to {what} {self.where()}: {said}; nothing was changed. {hint[0].upper()}{hint[1:]}.")


SCHEDULERS: dict[str, type[Scheduler]] = {"crontab": Crontab}
