"""Putting skillsleep's own files into the agents (`skillsleep install`) and taking them out again.

What "installed" means differs per agent, so each agent has an installer (its `Agent.installer`,
found by the agent's name in the registry) that describes it as a `Plan`: files to write (a user skill, a
plugin bundle, a hook) and agent commands to run, each with the command that undoes it.
`install()` carries a plan out and records what it did in a manifest under the data folder;
`uninstall()` undoes exactly what the manifest says, nothing else.

    <data>/installed/<agent>.json     the Manifest: every file written (path, sha256, the folders
                                      it created) and every command run (with its undo)
    <data>/backups/install-<time>/    a user's own version of a file, before --force replaced it

Rules:
- Idempotent: a file that already holds what would be written is left alone, a command the
  manifest records is not run again; a second `install` changes nothing and says so.
- A file the user changed (it differs from what would be written and from what skillsleep last
  wrote there) is never overwritten without `force`: the refusal shows the difference, and
  nothing at all is written (every file is checked before the first write). With `force`, the
  user's version is backed up first.
- `uninstall` removes a file only while it still holds what install wrote (else it refuses,
  showing the difference, unless `force`, which backs the user's version up first), removes the
  folders install created once they are empty, and runs the commands' undos in reverse order.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from skillsleep.core.models.rundir import write_atomic
from skillsleep.core.shared.errors import ConfigError, SkillsleepError
from skillsleep.core.shared.records import Record, UtcDatetime
from skillsleep.harnesses import registry
from skillsleep.harnesses.install_plan import Installer, Plan, PlannedCommand, PlannedFile


class WrittenFile(Record):
    """A file install wrote: what it held then, and the folders install created for it."""

    path: str
    sha256: str
    created_dirs: list[str] = Field(default_factory=list)  # outermost first


class Manifest(Record):
    """What install did for one agent (the only thing `uninstall` acts on)."""

    agent: str
    time: UtcDatetime
    files: list[WrittenFile] = Field(default_factory=list)
    commands: list[PlannedCommand] = Field(default_factory=list)


class Outcome(Record):
    """What `install()` or `uninstall()` did for one agent."""

    agent: str
    written: list[str] = Field(default_factory=list)  # created or replaced
    unchanged: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    backed_up: list[str] = Field(default_factory=list)  # the user's own versions, before force
    ran: list[str] = Field(default_factory=list)  # commands run, in words
    notes: list[str] = Field(default_factory=list)


Runner = Callable[[Sequence[str], Mapping[str, str]], subprocess.CompletedProcess[str]]


def installer(agent: str) -> Installer:
    """The installer of `agent`; UnknownNameError naming the known agents for any other name."""
    return registry.get(agent).installer


def _run(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), env=dict(env), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(
            f"{path} is a folder where skillsleep would write a file; move it away and install again"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path} cannot be read ({exc.strerror or exc}); fix its permissions and install again"
        ) from None


def _diff(path: Path, mine: bytes, theirs: bytes, their_name: str) -> str:
    a = mine.decode("utf-8", errors="replace").splitlines(keepends=True)
    b = theirs.decode("utf-8", errors="replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"{path} (yours)", f"{path} ({their_name})"))


class Installs:
    """The manifests and install backups under one data folder."""

    def __init__(self, data_dir: Path, *, runner: Runner = _run, env: Mapping[str, str] | None = None) -> None:
        self.root = Path(data_dir) / "installed"
        self.backups = Path(data_dir) / "backups"
        self.runner = runner
        self.env = dict(os.environ if env is None else env)

    def manifest(self, agent: str) -> Manifest | None:
        """What install did for `agent`, or None when it never did (or uninstall undid it)."""
        path = self.root / f"{agent}.json"
        data = _read(path)
        if data is None:
            return None
        try:
            return Manifest.model_validate_json(data)
        except ValueError:
            raise ConfigError(
                f"{path} (what `skillsleep install` wrote for {agent}) cannot be read; restore it, or "
                "move it away and remove that agent's skillsleep files by hand"
            ) from None

    def check(self, plan: Plan, *, force: bool = False) -> list[tuple[PlannedFile, bytes | None]]:
        """The plan's files to write, with what each holds now; a ConfigError showing the difference
        when one of them is the user's (changed since skillsleep wrote it, or never skillsleep's)
        and not `force`. Writes nothing: several agents can all be checked before any is written."""
        old = self.manifest(plan.agent)
        ours = {f.path: f.sha256 for f in old.files} if old else {}
        todo: list[tuple[PlannedFile, bytes | None]] = []
        conflicts: list[str] = []
        for f in plan.files:
            want, have = f.text.encode(), _read(f.path)
            if have == want:
                continue
            if have is not None and ours.get(str(f.path)) != _sha(have) and not force:
                conflicts.append(_diff(f.path, have, want, "what skillsleep would write"))
            todo.append((f, have))
        if conflicts:
            raise ConfigError(
                f"{len(conflicts)} file(s) of skillsleep's {plan.agent} install were changed by you since skillsleep "
                "wrote them (or were never skillsleep's); nothing was written. Keep your version, or run "
                "`skillsleep install " + plan.agent + " --force` (yours is backed up first):\n" + "\n".join(conflicts)
            )
        return todo

    def install(self, plan: Plan, *, force: bool = False) -> Outcome:
        """Write the plan's files (refusing, before any write, to replace one the user changed unless
        `force`) and run its commands that have not run yet; record both in the manifest."""
        todo = self.check(plan, force=force)
        old = self.manifest(plan.agent)
        ours = {f.path: f.sha256 for f in old.files} if old else {}
        pending = {str(f.path) for f, _ in todo}
        outcome = Outcome(
            agent=plan.agent,
            notes=list(plan.notes),
            unchanged=[str(f.path) for f in plan.files if str(f.path) not in pending],
        )
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        written = {w.path: w for w in old.files} if old else {}
        for f, have in todo:
            if have is not None and ours.get(str(f.path)) != _sha(have):
                outcome.backed_up.append(self._backup(f.path, have, stamp))
            created = _missing_dirs(f.path.parent)
            write_atomic(f.path, f.text.encode())
            if f.executable:
                f.path.chmod(f.path.stat().st_mode | 0o111)
            prior = written.get(str(f.path))
            written[str(f.path)] = WrittenFile(
                path=str(f.path), sha256=_sha(f.text.encode()), created_dirs=prior.created_dirs if prior else created
            )
            outcome.written.append(str(f.path))
        for f in plan.files:  # unchanged ones too: they are skillsleep's now
            written.setdefault(str(f.path), WrittenFile(path=str(f.path), sha256=_sha(f.text.encode())))
        manifest = Manifest(
            agent=plan.agent,
            time=datetime.now(UTC),
            files=list(written.values()),
            commands=list(old.commands) if old else [],
        )
        self._save(manifest)
        done = {tuple(c.argv) for c in manifest.commands}
        for command in plan.commands:
            if tuple(command.argv) in done:
                continue
            self._command(command.argv, command.what)
            manifest.commands.append(command)
            self._save(manifest)  # after each one: a later failure leaves a manifest uninstall can undo
            outcome.ran.append(command.what)
        return outcome

    def check_uninstall(self, agent: str, *, force: bool = False) -> Manifest | None:
        """What install recorded for `agent` (None: nothing); a ConfigError naming the files the user
        changed since, unless `force`. Removes nothing."""
        manifest = self.manifest(agent)
        changed = []
        for w in manifest.files if manifest else []:
            have = _read(Path(w.path))
            if have is not None and _sha(have) != w.sha256 and not force:
                changed.append(f"{w.path}: changed since skillsleep wrote it")
        if changed:
            raise ConfigError(
                f"{len(changed)} file(s) of skillsleep's {agent} install were changed by you since; nothing was "
                f"removed. Keep them and delete the rest by hand, or run `skillsleep uninstall {agent} --force` "
                "(your versions are backed up first):\n" + "\n".join(changed)
            )
        return manifest

    def uninstall(self, agent: str, *, force: bool = False) -> Outcome:
        """Undo what install recorded for `agent`: its commands (newest first), then its files."""
        manifest = self.check_uninstall(agent, force=force)
        outcome = Outcome(agent=agent)
        if manifest is None:
            return outcome
        for command in reversed(manifest.commands):
            if command.undo:
                self._command(command.undo, f"undo: {command.what}")
                outcome.ran.append(f"undo: {command.what}")
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        for w in manifest.files:
            path = Path(w.path)
            have = _read(path)
            if have is None:
                continue
            if _sha(have) != w.sha256:
                outcome.backed_up.append(self._backup(path, have, stamp))
            path.unlink()
            outcome.removed.append(w.path)
        created = {folder for w in manifest.files for folder in w.created_dirs}  # one file's folder may hold others
        for folder in sorted(created, key=lambda f: len(Path(f).parts), reverse=True):  # innermost first
            try:
                Path(folder).rmdir()
            except OSError:  # not empty: something not ours is in it, so it stays
                continue
        (self.root / f"{agent}.json").unlink()
        return outcome

    def _command(self, argv: Sequence[str], what: str) -> None:
        try:
            done = self.runner(argv, self.env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InstallFailed(f"could not {what}: `{' '.join(argv)}` did not run ({exc})") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-800:]
            raise InstallFailed(f"could not {what}: `{' '.join(argv)}` exited {done.returncode}: {tail}")

    def _backup(self, path: Path, data: bytes, stamp: str) -> str:
        target = self.backups / f"install-{stamp}" / str(path).lstrip(os.sep)
        write_atomic(target, data)
        return str(target)

    def _save(self, manifest: Manifest) -> None:
        write_atomic(self.root / f"{manifest.agent}.json", manifest.model_dump_json(indent=2) + "\n")


class InstallFailed(SkillsleepError):
    """An agent command of an install or uninstall failed; what was done so far is recorded."""


def _missing_dirs(folder: Path) -> list[str]:
    """The folders, outermost first, that writing into `folder` will create."""
    missing: list[str] = []
    while not folder.exists():
        missing.insert(0, str(folder))
        if folder.parent == folder:
            break
        folder = folder.parent
    return missing


def which(name: str, env: Mapping[str, str]) -> str | None:
    """`name` on the PATH of `env` (an agent CLI), or None."""
    return shutil.which(name, path=env.get("PATH"))
