"""Running the real `skillsleep` command as an unprivileged user, for permission tests.

Tests run as root (here and in CI), and root ignores file permissions, so "not writable" can
only be shown by another user: `setpriv` runs the command as nobody (uid/gid 65534).

    nobody_skip_reason()     why it cannot be done here (None when it can)
    shared_tmp()             a temporary folder nobody can traverse (0755), removed afterwards
    run_as_nobody(args, env) the finished process: `skillsleep ARGS` as nobody, with env added
    crontab_skip_reason()    why nobody's crontab cannot be used here (None when it can)
    nobody_crontab(text)     nobody's crontab set to `text` (None: no crontab) for the block, then
                             put back as it was; yields a reader of its current text
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path

NOBODY = 65534
SKILLSLEEP = Path(sys.executable).parent / "skillsleep"


def _command(args: list[str]) -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", str(SKILLSLEEP), *args]


@cache
def nobody_skip_reason() -> str | None:
    """None when `skillsleep` can be run as nobody here, else why not (for pytest.skip)."""
    if os.geteuid() != 0:
        return "needs root to switch to an unprivileged user (run the tests as root, as CI does)"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed, so the command cannot run as another user"
    try:
        probe = subprocess.run(_command(["--version"]), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"setpriv could not start skillsleep as nobody: {exc}"
    if probe.returncode != 0:
        return f"skillsleep cannot run as nobody here (its install is not readable by that user): {probe.stderr[-300:]}"
    return None


@contextmanager
def shared_tmp() -> Iterator[Path]:
    """A fresh folder under the system temp dir that other users can traverse but not write."""
    path = Path(tempfile.mkdtemp(prefix="skillsleep-perm-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_as_nobody(
    args: list[str], env: Mapping[str, str], *, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`skillsleep ARGS` as nobody, with a minimal environment plus `env`."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return subprocess.run(_command(args), env={**base, **env}, cwd=cwd, capture_output=True, text=True, timeout=120)


@cache
def crontab_skip_reason() -> str | None:
    """None when nobody's crontab can be read and written here, else why not (for pytest.skip)."""
    if nobody_skip_reason():
        return nobody_skip_reason()
    if shutil.which("crontab") is None:
        return "crontab is not installed (Debian: apt-get install cron; .ci/run installs it when run as root)"
    return None


def _crontab(*args: str, text: str | None = None) -> subprocess.CompletedProcess[str]:
    """`crontab -u nobody ARGS` as root (root may edit another user's table; cron.deny does not apply)."""
    return subprocess.run(
        ["crontab", "-u", "nobody", *args],
        input=text,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        timeout=60,
    )


def _set_crontab(text: str | None) -> None:
    done = _crontab("-", text=text) if text is not None else _crontab("-r")
    if done.returncode != 0 and "no crontab" not in done.stderr:
        raise RuntimeError(f"cannot set nobody's crontab: {done.stderr}")


def read_nobody_crontab() -> str | None:
    """nobody's crontab as `crontab -l` shows it; None when there is none."""
    done = _crontab("-l")
    return done.stdout if done.returncode == 0 else None


@contextmanager
def nobody_crontab(text: str | None = None) -> Iterator[Callable[[], str | None]]:
    """nobody's crontab holds `text` (None: none) inside the block and is put back afterwards."""
    saved = read_nobody_crontab()
    _set_crontab(text)
    try:
        yield read_nobody_crontab
    finally:
        _set_crontab(saved)
