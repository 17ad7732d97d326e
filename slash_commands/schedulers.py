"""Where the night's schedule lives: one small class each, found by its switch in `schedulers()`.

    NightJob     what runs: when, in which folder, with which environment and command line (night_job.py)
    Scheduler    the protocol: preview / install / remove what it wrote, and read what is there (night_job.py)
    Crontab            a managed block in the current user's crontab, through the `crontab` command
    SystemdTimer       a user timer + service written from the templates in cron/ (systemd_timer.py),
                       checked by `systemd-analyze verify`, enabled when a systemd user manager answers
    AgentCronScheduler a command job in an agent's own cron, reached through its record (`Agent.cron`:
                       OpenClaw's `openclaw cron add`, through its running gateway)

A new place (launchd) is one more class with these four methods, one entry in `schedulers()`, and
one `--<name>` switch on `schedule` / `unschedule` in schedule_cmd.py; an agent with a cron of its
own brings it in its record. Each one writes only what it owns
and says what to run by hand when it cannot do it itself (`Change.todo`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from skillsleep.core.models.rundir import write_private
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record
from skillsleep.harnesses.agent_cron import CronJob
from skillsleep.slash_commands.cron_table import BEGIN, END, When, cron_line, read_block, remove_block, set_block
from skillsleep.slash_commands.night_job import Change, NightJob, Scheduled, Scheduler
from skillsleep.slash_commands.systemd_timer import SystemdTimer
from skillsleep.slash_commands.wiring import data_dir

if TYPE_CHECKING:
    from skillsleep.harnesses.agent import Agent


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
            raise ConfigError(
                "crontab is not installed here (Debian/Ubuntu: `apt-get install cron`; Fedora: "
                "`dnf install cronie`); install it, or schedule with --systemd instead"
            )
        return subprocess.run(
            [exe, *args], input=text, capture_output=True, text=True, timeout=60, env={**os.environ, "LC_ALL": "C"}
        )

    def _refused(self, what: str, done: subprocess.CompletedProcess[str]) -> ConfigError:
        said = " ".join(done.stderr.split()) or f"exit code {done.returncode}"
        hint = (
            "The line is too long for cron: move run flags into [sleep] in config.toml"
            if "too long" in said
            else "If you may not use cron here (/etc/cron.allow, /etc/cron.deny), ask an administrator, "
            "or schedule with --systemd instead"
        )
        return ConfigError(f"crontab refused to {what} {self.where()}: {said}; nothing was changed. {hint}.")


class AgentCronJob(Record):
    """What `schedule --<agent>` added to an agent's own cron, noted in <data>/schedule/<agent>.json
    for `status`."""

    id: str
    expr: str  # the cron expression
    where: str


class AgentCronScheduler:
    """A command job in an agent's own cron (`Agent.cron`: OpenClaw's, whose `openclaw cron …` needs
    its gateway; the script never runs two nights at once). One job named `skillsleep-night`,
    marked as skillsleep's in its description; a job of that name without the mark is never
    touched. What was added is noted in the data folder, so `status` asks no agent."""

    job = "skillsleep-night"

    def __init__(self, agent: Agent) -> None:
        self.name = agent.name  # the `--<agent>` switch of schedule / unschedule
        self.cron = agent.own_cron()
        self.mark = f"Written by `skillsleep schedule --{self.name}`; `skillsleep unschedule --{self.name}` removes it."

    def where(self) -> str:
        return self.cron.where()

    def note(self) -> Path:
        return data_dir() / "schedule" / f"{self.name}.json"

    def cron_job(self, job: NightJob) -> CronJob:
        if not job.when.at:
            raise ConfigError(f"{self.cron.title} takes a time of day here: give --at HH:MM")
        return CronJob(
            name=self.job, expr=job.when.fields, description=self.mark, argv=job.argv, cwd=job.cwd, env=job.env
        )

    def preview(self, job: NightJob) -> str:
        return shlex.join(self.cron.add_argv(self.cron_job(job)))

    def install(self, job: NightJob) -> Change:
        wanted = self.cron_job(job)
        old = self._ours()
        added = self.cron.add(wanted)
        for stale in old:
            self.cron.remove(stale)
        noted = AgentCronJob(id=added, expr=job.when.fields, where=self.where())
        write_private(self.note(), noted.model_dump_json() + "\n")
        return Change(via=self.name, where=self.where(), done=True, replaced=bool(old))

    def remove(self) -> Change:
        old = self._ours()
        for stale in old:
            self.cron.remove(stale)
        self.note().unlink(missing_ok=True)
        return Change(via=self.name, where=self.where(), done=bool(old))

    def current(self) -> Scheduled | None:
        try:
            text = self.note().read_text(encoding="utf-8")
        except OSError:
            return None
        try:
            noted = AgentCronJob.model_validate_json(text)
        except ValueError:
            raise ConfigError(
                f"{self.note()} (what `skillsleep schedule --{self.name}` added) cannot be read; "
                f"run `skillsleep unschedule --{self.name}`, then schedule again"
            ) from None
        return Scheduled(via=self.name, when=When.parse(noted.expr).describe(), where=noted.where, entry=noted.expr)

    def _ours(self) -> list[str]:
        """The ids of skillsleep's jobs; a job of that name that lacks the mark is a ConfigError."""
        named = [j for j in self.cron.jobs() if j.name == self.job]
        foreign = [j.id for j in named if j.description != self.mark]
        if foreign:
            raise ConfigError(
                f"{self.cron.title} job {', '.join(foreign)} is named {self.job!r} but was not written by "
                f"skillsleep; nothing was changed: rename or remove it ({self.cron.remove_hint}), or "
                "schedule with the crontab instead"
            )
        return [j.id for j in named]


def schedulers() -> dict[str, Callable[[], Scheduler]]:
    """Every place the night's schedule can live, by its switch: the crontab, systemd, and the own
    cron of each agent that keeps one (the registry's `Agent.cron`)."""
    from skillsleep.harnesses import registry

    places: dict[str, Callable[[], Scheduler]] = {"crontab": Crontab, "systemd": SystemdTimer}
    for agent in registry.agents():
        if agent.cron is not None:
            places[agent.name] = partial(AgentCronScheduler, agent)
    return places


def installed() -> tuple[list[Scheduled], list[str]]:
    """What is scheduled now, in every place, and what could not be read (a block left open)."""
    found: list[Scheduled] = []
    problems: list[str] = []
    for scheduler in schedulers().values():
        try:
            now = scheduler().current()
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        if now is not None:
            found.append(now)
    return found, problems
