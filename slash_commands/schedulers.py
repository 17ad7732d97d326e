"""Where the night's schedule lives: one small class each, found by name in SCHEDULERS.

    NightJob     what runs: when, in which folder, with which environment and command line
    Scheduler    the protocol: preview / install / remove what it wrote, and read what is there
    Crontab      a managed block in the current user's crontab, through the `crontab` command
    SystemdTimer a user timer + service written from the templates in cron/, checked by
                 `systemd-analyze verify`, enabled when a systemd user manager answers
    OpenClawCron a command job in OpenClaw's cron (`openclaw cron add`, through its running gateway)

A new place (launchd) is one more class with these four methods, one entry in SCHEDULERS, and one `--<name>` switch on `schedule` / `unschedule` in cli.py. Each one writes
only what it owns and says what to run by hand when it cannot do it itself (`Change.todo`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from string import Template
from typing import Protocol

from pydantic import Field

from skillsleep.core.errors import ConfigError, SkillsleepError
from skillsleep.core.records import Record
from skillsleep.core.rundir import write_atomic
from skillsleep.harnesses.openclaw import cron as openclaw_cron
from skillsleep.slash_commands.cron_table import BEGIN, END, When, cron_line, read_block, remove_block, set_block
from skillsleep.slash_commands.wiring import data_dir


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


def systemd_quote(text: str, *, dollars: bool = True) -> str:
    """One word of a unit file setting, kept literal: double-quoted with C escapes, `%` doubled
    (specifiers), and `$` doubled where variables would be expanded (ExecStart=, not Environment=)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{text.replace("$", "$$") if dollars else text}"'


_MARK = "# Written by `skillsleep schedule --systemd`"
_CALENDAR = re.compile(r"^OnCalendar=(.*)$", re.MULTILINE)
_DAILY_CALENDAR = re.compile(r"\*-\*-\* ([0-9]{2}):([0-9]{2}):00")


class SystemdTimer:
    """`skillsleep-night.timer` + `.service` in `$XDG_CONFIG_HOME/systemd/user` (default
    `~/.config/systemd/user`): checked with `systemd-analyze verify` before they are written, then
    `systemctl --user daemon-reload` + `enable --now` when a user manager answers; otherwise those
    commands are left to the user (`todo`). Files it did not write are never touched."""

    name = "systemd"
    unit = "skillsleep-night"

    def folder(self) -> Path:
        config = os.environ.get("XDG_CONFIG_HOME") or str(Path(os.environ.get("HOME") or Path.home()) / ".config")
        return Path(config) / "systemd" / "user"

    def paths(self) -> list[Path]:
        return [self.folder() / f"{self.unit}.service", self.folder() / f"{self.unit}.timer"]

    def where(self) -> str:
        return f"the systemd user units in {self.folder()}"

    def render(self, job: NightJob) -> dict[Path, str]:
        if not job.when.at:
            raise ConfigError("a systemd timer takes a time of day: give --at HH:MM")
        values = {
            "workdir": str(job.cwd).replace("%", "%%"),
            "environment": "Environment="
            + " ".join(systemd_quote(f"{k}={v}", dollars=False) for k, v in job.env.items()),
            "command": " ".join(map(systemd_quote, job.argv)),
            "when": job.when.describe(),
            "calendar": f"*-*-* {job.when.at}:00",
        }
        service, timer = self.paths()
        return {
            path: Template((resources.files("skillsleep.cron") / path.name).read_text(encoding="utf-8")).substitute(
                values
            )
            for path in (service, timer)
        }

    def preview(self, job: NightJob) -> str:
        return "\n".join(f"# --- {path}\n{text}" for path, text in self.render(job).items())

    def install(self, job: NightJob) -> Change:
        files = self.render(job)
        existing = [path for path in files if path.exists()]
        for path in existing:
            self._ours(path)
        self._verify(files)
        for path, text in files.items():
            write_atomic(path, text)
        todo = self._systemctl(["daemon-reload"], ["enable", "--now", f"{self.unit}.timer"])
        return Change(
            via=self.name,
            where=self.where(),
            done=True,
            replaced=bool(existing),
            written=[str(p) for p in files],
            todo=todo,
        )

    def remove(self) -> Change:
        files = [path for path in self.paths() if path.exists()]
        if not files:
            return Change(via=self.name, where=self.where(), done=False)
        for path in files:
            self._ours(path)
        manager = self._manager()
        if manager:
            self._systemctl(["disable", "--now", f"{self.unit}.timer"])
        link = self.folder() / "timers.target.wants" / f"{self.unit}.timer"
        if link.is_symlink() and os.readlink(link).endswith(f"{self.unit}.timer"):
            link.unlink()  # what `enable` linked, when no manager could `disable` it
        for path in files:
            path.unlink()
        todo = (
            self._systemctl(["daemon-reload"])
            if manager
            else [f"systemctl --user stop {self.unit}.timer", "systemctl --user daemon-reload"]
        )
        return Change(via=self.name, where=self.where(), done=True, written=[str(p) for p in files], todo=todo)

    def current(self) -> Scheduled | None:
        timer = self.folder() / f"{self.unit}.timer"
        try:
            text = timer.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        found = _CALENDAR.search(text)
        if not text.startswith(_MARK) or found is None:
            return None
        calendar = found[1].strip()
        daily = _DAILY_CALENDAR.fullmatch(calendar)
        when = f"{daily[1]}:{daily[2]} daily" if daily else f"OnCalendar `{calendar}`"
        return Scheduled(via=self.name, when=when, where=str(timer), entry=calendar)

    def _ours(self, path: Path) -> None:
        try:
            first = path.read_text(encoding="utf-8", errors="replace").partition("\n")[0]
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror}; nothing was changed") from None
        if not first.startswith(_MARK):
            raise ConfigError(
                f"{path} was not written by skillsleep (it does not start with {_MARK!r}); nothing was "
                "changed: move it away to let skillsleep write its own, or use the crontab instead"
            )

    def _verify(self, files: dict[Path, str]) -> None:
        """`systemd-analyze verify` on the units in a scratch folder (when it is installed); a unit it
        rejects is never written."""
        exe = shutil.which("systemd-analyze")
        if exe is None:
            return
        with tempfile.TemporaryDirectory(prefix="skillsleep-units-") as scratch:
            paths = [Path(scratch) / path.name for path in files]
            for path, text in zip(paths, files.values(), strict=True):
                path.write_text(text, encoding="utf-8")
            done = subprocess.run([exe, "verify", *map(str, paths)], capture_output=True, text=True, timeout=120)
        said = (done.stdout + done.stderr).strip()
        if done.returncode != 0 and self.unit in said:  # not one about this machine's own units
            raise ConfigError(
                f"systemd-analyze verify rejected the units skillsleep would write ({said}); nothing "
                "was written: please report this, and use the crontab meanwhile"
            )

    def _manager(self) -> bool:
        """Whether a systemd user manager answers here (not in a container, over plain ssh, …)."""
        exe = shutil.which("systemctl")
        if exe is None:
            return False
        return subprocess.run([exe, "--user", "show-environment"], capture_output=True, timeout=60).returncode == 0

    def _systemctl(self, *commands: list[str]) -> list[str]:
        """`systemctl --user COMMAND` for each command when a user manager answers (then []); else
        the command lines, for the user to run where one does."""
        lines = [shlex.join(["systemctl", "--user", *command]) for command in commands]
        if not self._manager():
            return lines
        for command, line in zip(commands, lines, strict=True):
            done = subprocess.run(["systemctl", "--user", *command], capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                raise SkillsleepError(
                    f"`{line}` failed: {' '.join(done.stderr.split())}; the unit files are in "
                    f"{self.folder()}: fix the cause and run it again"
                )
        return []


class OpenClawJob(Record):
    """What `schedule --openclaw` added, noted in <data>/schedule/openclaw.json for `status`."""

    id: str
    expr: str  # the cron expression
    where: str


class OpenClawCron:
    """A command job in OpenClaw's cron (harnesses/openclaw/cron.py runs `openclaw cron …`; the
    script never runs two nights at once). One job named `skillsleep-night`, marked as skillsleep's
    in its description; a job of that name without the mark is never touched. What was added is
    noted in the data folder, so `status` asks no gateway."""

    name = "openclaw"  # the `--openclaw` switch of schedule / unschedule
    job = "skillsleep-night"
    mark = "Written by `skillsleep schedule --openclaw`; `skillsleep unschedule --openclaw` removes it."

    def where(self) -> str:
        return openclaw_cron.gateway()

    def note(self) -> Path:
        return data_dir() / "schedule" / f"{self.name}.json"

    def add_argv(self, job: NightJob) -> list[str]:
        if not job.when.at:
            raise ConfigError("an OpenClaw cron job takes a time of day here: give --at HH:MM")
        return openclaw_cron.add_argv(
            name=self.job, expr=job.when.fields, description=self.mark, argv=job.argv, cwd=job.cwd, env=job.env
        )

    def preview(self, job: NightJob) -> str:
        return shlex.join(self.add_argv(job))

    def install(self, job: NightJob) -> Change:
        argv = self.add_argv(job)
        old = self._ours()
        added = openclaw_cron.cron(argv[1:])
        for stale in old:
            openclaw_cron.cron(["cron", "rm", stale, "--json"])
        write_atomic(
            self.note(),
            OpenClawJob(id=str(added.get("id", "")), expr=job.when.fields, where=self.where()).model_dump_json() + "\n",
        )
        return Change(via=self.name, where=self.where(), done=True, replaced=bool(old))

    def remove(self) -> Change:
        old = self._ours()
        for stale in old:
            openclaw_cron.cron(["cron", "rm", stale, "--json"])
        self.note().unlink(missing_ok=True)
        return Change(via=self.name, where=self.where(), done=bool(old))

    def current(self) -> Scheduled | None:
        try:
            text = self.note().read_text(encoding="utf-8")
        except OSError:
            return None
        try:
            noted = OpenClawJob.model_validate_json(text)
        except ValueError:
            raise ConfigError(
                f"{self.note()} (what `skillsleep schedule --openclaw` added) cannot be read; "
                "run `skillsleep unschedule --openclaw`, then schedule again"
            ) from None
        return Scheduled(via=self.name, when=When.parse(noted.expr).describe(), where=noted.where, entry=noted.expr)

    def _ours(self) -> list[str]:
        """The ids of skillsleep's jobs; a job of that name that lacks the mark is a ConfigError."""
        jobs = openclaw_cron.cron(["cron", "list", "--all", "--json"]).get("jobs", [])
        named = [j for j in jobs if isinstance(j, dict) and j.get("name") == self.job]
        foreign = [str(j.get("id")) for j in named if j.get("description") != self.mark]
        if foreign:
            raise ConfigError(
                f"OpenClaw's cron job {', '.join(foreign)} is named {self.job!r} but was not written by "
                "skillsleep; nothing was changed: rename or remove it (`openclaw cron rm ID`), or "
                "schedule with the crontab instead"
            )
        return [str(j.get("id")) for j in named]


SCHEDULERS: dict[str, type[Scheduler]] = {"crontab": Crontab, "systemd": SystemdTimer, "openclaw": OpenClawCron}


def installed() -> tuple[list[Scheduled], list[str]]:
    """What is scheduled now, in every place, and what could not be read (a block left open)."""
    found: list[Scheduled] = []
    problems: list[str] = []
    for scheduler in SCHEDULERS.values():
        try:
            now = scheduler().current()
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        if now is not None:
            found.append(now)
    return found, problems
