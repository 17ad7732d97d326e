"""One lock per state directory: cron, `/sleep` and `watch` never run a cycle twice at once; and
a mark of each running `skillsleep watch`, which `doctor --repair` names instead of racing it.

The lock is an advisory `flock` on `<data>/cycle.lock`, so it is released by the kernel when
the holder exits in any way (kill -9 included): a stale lock file never blocks the next night.
The file records who holds it, for the message the second process prints; `held_by()` only
looks (for `run --detach`, which must refuse before it starts anything); `pid_alive()` tells
whether a recorded process still runs (a "running" night whose process is gone died).
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from skillsleep.core.models.rundir import PRIVATE_FILE, private_dir
from skillsleep.core.shared.errors import Busy


class StateLock:
    """`with StateLock(data_dir, "night"):` — raises Busy at once when another holder exists."""

    def __init__(self, data_dir: Path, purpose: str) -> None:
        self.path = Path(data_dir) / "cycle.lock"
        self.purpose = purpose
        self._fd: int | None = None

    def __enter__(self) -> StateLock:
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise Busy(
                f"another skillsleep cycle is running on {self.path.parent} ({who(holder)}); "
                "wait for it to finish, or stop that process first"
            ) from None
        info = {"pid": os.getpid(), "purpose": self.purpose, "since": datetime.now(UTC).isoformat()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def held_by(data_dir: Path) -> dict[str, object] | None:
    """What the holder of the lock recorded (pid, purpose, since), or None when it is free. Only
    looks: a free lock is let go at once and its file is not written."""
    try:
        fd = os.open(Path(data_dir) / "cycle.lock", os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read(fd)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class Running:
    """`with Running(data_dir, "watch"):` — says that this process runs `skillsleep watch` (others
    may too) until the block ends: `<data>/running/watch-<pid>.lock`, flocked by this process, so
    the kernel lets go of it however the process ends; a file left by a killed one is removed by
    the next to start. `running()` lists the processes that hold theirs."""

    def __init__(self, data_dir: Path, what: str) -> None:
        self.folder, self.what = Path(data_dir) / "running", what
        self.path = self.folder / f"{what}-{os.getpid()}.lock"
        self._fd: int | None = None

    def __enter__(self) -> Running:
        running(self.folder.parent, self.what, clean=True)
        private_dir(self.folder)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        fcntl.flock(fd, fcntl.LOCK_EX)  # a file of this pid: nobody else takes it
        info = {"pid": os.getpid(), "purpose": f"skillsleep {self.what}", "since": datetime.now(UTC).isoformat()}
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def running(data_dir: Path, what: str, *, clean: bool = False) -> list[dict[str, object]]:
    """What each process that runs `what` (`Running`) recorded: pid, purpose, since. Only looks;
    with `clean`, the files of processes that ended without removing theirs are removed."""
    out = []
    for path in sorted((Path(data_dir) / "running").glob(f"{what}-*.lock")):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            out.append(_read(fd))
        else:
            if clean:
                path.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return out


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError, OSError):
        return False
    return True


def who(holder: dict[str, object]) -> str:
    """ "pid 123, skillsleep run since 2026-…" from what a holder recorded."""
    return f"pid {holder.get('pid', '?')}, {holder.get('purpose', 'a cycle')} since {holder.get('since', '?')}"


def _read(fd: int) -> dict[str, object]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return data if isinstance(data, dict) else {}
    except ValueError:
        return {}
