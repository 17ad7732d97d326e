"""`skillsleep schedule --systemd`: the night as a systemd user timer and service, written from the
templates in cron/."""

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

from skillsleep.core.models.rundir import write_atomic
from skillsleep.core.shared.errors import ConfigError, SkillsleepError
from skillsleep.slash_commands.night_job import Change, NightJob, Scheduled


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
