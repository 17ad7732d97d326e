"""Running the real `skillsleep` command as an unprivileged user, for permission tests.

Tests run as root (here and in CI), and root ignores file permissions, so "not writable" can
only be shown by another user: `setpriv` runs the command as nobody (uid/gid 65534).

    nobody_skip_reason()     why it cannot be done here (None when it can)
    shared_tmp()             a temporary folder nobody can traverse (0755), removed afterwards
    run_as_nobody(args, env) the finished process: `skillsleep ARGS` as nobody, with env added
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
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


def run_as_nobody(args: list[str], env: Mapping[str, str], *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`skillsleep ARGS` as nobody, with a minimal environment plus `env`."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return subprocess.run(_command(args), env={**base, **env}, cwd=cwd, capture_output=True, text=True, timeout=120)
