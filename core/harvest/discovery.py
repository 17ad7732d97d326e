"""Finding transcript files under a folder, reporting whatever could not be read or used.

Every harness lays its transcripts out differently (Claude Code `projects/<project>/*.jsonl`,
Codex `sessions/**/rollout-*.jsonl`, OpenClaw `agents/<agent>/sessions/*`, direct-chat logs
`**/*.jsonl`), so `walk()` takes two rules over an entry's path below the root (its `Parts`):
`wanted` (a transcript file belongs here) and `enter` (a folder here may hold some). Nothing is
dropped silently:

    a folder that cannot be listed                   → `unreadable` ("path: reason")
    an entry that cannot be looked at (no x bit)     → `unreadable`
    a wanted name that is a folder                   → skipped "folder_named_like_a_transcript"
    a wanted name that is a dangling symlink         → skipped "dangling_symlink"
    a symlink that loops (itself, or to a folder it is inside) → skipped "symlink_loop"
    a wanted name that is a FIFO, socket or device   → skipped "not_a_regular_file"

Symlinked folders are followed (a user's transcript folder may live elsewhere); a file reached
twice through links is listed once. A root that does not exist is an agent that is not installed
here: nothing found, nothing to report.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from skillsleep.core.shared.records import Record

Parts = tuple[str, ...]  # an entry's path below the walked root, one name per level


class Found(Record):
    """Transcript files found under some folders, and what the walk could not read or use."""

    files: list[Path] = Field(default_factory=list)
    unreadable: list[str] = Field(default_factory=list)  # "path: reason" of folders or entries
    skipped: Counter[str] = Field(default_factory=Counter)  # entries that are no transcript file, by reason

    def __add__(self, other: Found) -> Found:
        return Found(
            files=sorted({*self.files, *other.files}),
            unreadable=[*self.unreadable, *other.unreadable],
            skipped=self.skipped + other.skipped,
        )


def _everywhere(_: Parts) -> bool:
    return True


def walk(
    root: Path,
    *,
    wanted: Callable[[Parts], bool],
    enter: Callable[[Parts], bool] = _everywhere,
    exclude: Sequence[Path] = (),
) -> Found:
    """The files under `root` that `wanted` accepts (sorted), descending only into the folders
    `enter` accepts, none inside an `exclude` folder; see the module docstring for the rest."""
    found = Found()
    skip = [Path(p).resolve() for p in exclude]
    st = _root_stat(root, found)
    if st is None:
        return found
    seen: set[tuple[int, int]] = set()  # files, by (device, inode)
    stack: list[tuple[Path, Parts, frozenset[tuple[int, int]]]] = [(Path(root), (), frozenset({_key(st)}))]
    while stack:
        folder, parts, ancestors = stack.pop()
        try:
            with os.scandir(folder) as entries:
                names = sorted(entry.name for entry in entries)
        except OSError as exc:
            _unreadable(found, folder, exc, "folder")
            continue
        below = []
        for name in names:
            sub = (*parts, name)
            want, into = wanted(sub), enter(sub)
            if not (want or into):
                continue
            path = folder / name
            try:
                st = os.stat(path)
            except OSError as exc:
                _unstatable(found, path, exc)
                continue
            if skip and any(path.resolve().is_relative_to(x) for x in skip):
                continue
            if stat.S_ISDIR(st.st_mode):
                if want:
                    found.skipped["folder_named_like_a_transcript"] += 1
                if into and _key(st) in ancestors:
                    found.skipped["symlink_loop"] += 1
                elif into:
                    below.append((path, sub, ancestors | {_key(st)}))
            elif want and stat.S_ISREG(st.st_mode):
                if _key(st) not in seen:
                    seen.add(_key(st))
                    found.files.append(path)
            elif want:
                found.skipped["not_a_regular_file"] += 1
        stack += reversed(below)
    found.files.sort()
    return found


def _root_stat(root: Path, found: Found) -> os.stat_result | None:
    """The stat of `root` when it is a folder; else None, with why in `found` (a missing root: nothing)."""
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _unreadable(found, root, exc, "folder")
        return None
    if not stat.S_ISDIR(st.st_mode):
        found.unreadable.append(f"{root}: not a folder")
        found.skipped["unreadable_folder:NotADirectoryError"] += 1
        return None
    return st


def _key(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _unstatable(found: Found, path: Path, exc: OSError) -> None:
    """An entry `os.stat` failed on: a broken or looping link is skipped, anything else unreadable."""
    if exc.errno == errno.ELOOP:
        found.skipped["symlink_loop"] += 1
    elif isinstance(exc, FileNotFoundError):
        if path.is_symlink():
            found.skipped["dangling_symlink"] += 1
        # else: removed since the folder was listed; nothing was there to read
    else:
        _unreadable(found, path, exc, "entry")


def _unreadable(found: Found, path: Path, exc: OSError, what: str) -> None:
    found.unreadable.append(f"{path}: {exc.strerror or exc}")
    found.skipped[f"unreadable_{what}:{type(exc).__name__}"] += 1
