"""What the replay tests check after an agent ran: the user's files unchanged, no process left."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path


def snapshot(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every path under `root`: kind, size and sha256 (symlinks by their target)."""
    out: dict[str, tuple[str, int, str]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = ("link", 0, os.readlink(path))
        elif path.is_dir():
            out[rel] = ("dir", 0, "")
        else:
            data = path.read_bytes()
            out[rel] = ("file", len(data), hashlib.sha256(data).hexdigest())
    return out


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose environment holds `marker` (readable ones of this user)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def survivors(marker: str, *, wait_s: float = 5.0) -> list[int]:
    """`processes_with(marker)` once they are gone, or after `wait_s` (a killed process may take a
    moment to be reaped): what is left is what survived."""
    left = processes_with(marker)
    deadline = time.monotonic() + wait_s
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = processes_with(marker)
    return left
