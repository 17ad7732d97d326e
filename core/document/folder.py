"""A skill folder's other files: read-only context for the optimizer.

A skill is a `SKILL.md` in a folder, often with `references/`, `scripts/` and examples beside it.
The optimizer reads those files so that an edit to `SKILL.md` can point the agent at one of them
by its path relative to the folder instead of copying it in; nothing here ever writes.

What is read: the regular text files (UTF-8, no NUL byte) under the folder, `SKILL.md` itself left
out, top-level files first, then `references/`, `scripts/` and the other folders, by path. Hidden files and folders (`.git`, `.venv`, …), virtual environments and caches
(`venv`, `node_modules`, `__pycache__`), links and binaries are skipped; at most `MAX_FILES` files
are looked at. Each file shows at most `FILE_CHARS` characters and all of them together at most
the budget given (`[train] context_chars`); whatever is cut or left out is said in `notes`.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["FILE_CHARS", "MAX_FILES", "SKILL_FILE", "ContextFile", "SkillFolder", "read_folder"]

SKILL_FILE = "SKILL.md"
FILE_CHARS = 4000  # one file's share of the prompt, at most
MAX_FILES = 200  # files looked at in one folder
_SKIPPED_DIRS = frozenset({"venv", "env", "node_modules", "__pycache__", "site-packages", "dist", "build"})
_FIRST = ("references", "scripts")  # read before the other folders: the budget goes to them first
_LEFT_OUT = 200  # below this much room left, a file is left out rather than cut to a stub


class ContextFile(BaseModel):
    """One file of a skill folder as the optimizer sees it: `path` relative to the folder
    (`references/api.md`), its `size` in bytes, the `text` shown, and whether that text is `cut`."""

    model_config = ConfigDict(frozen=True)

    path: str
    size: int
    text: str
    cut: bool = False


class SkillFolder(BaseModel):
    """The context files of a skill folder, within `budget` characters in all, and `notes` on what
    was cut or left out (`references/big.md: cut to its first 4000 characters (52311 bytes)`)."""

    model_config = ConfigDict(frozen=True)

    budget: int
    files: list[ContextFile] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def chars(self) -> int:
        return sum(len(f.text) for f in self.files)


def read_folder(skill_file: Path, *, budget: int, file_chars: int = FILE_CHARS) -> SkillFolder | None:
    """The context files beside `skill_file`, or None when there are none to show: `budget` is 0,
    the file is not a `SKILL.md`, or its folder holds no other file."""
    if budget <= 0 or skill_file.name != SKILL_FILE or not skill_file.parent.is_dir():
        return None
    root = skill_file.parent
    files: list[ContextFile] = []
    notes: list[str] = []
    left = budget
    paths = _candidates(root)
    if len(paths) > MAX_FILES:
        notes.append(f"only the first {MAX_FILES} of {len(paths)} files were looked at")
    for rel in paths[:MAX_FILES]:
        read = _read_text(root / rel, min(file_chars, left)) if left > 0 else None
        if isinstance(read, str):
            notes.append(f"{rel}: left out, {read}")
            continue
        if read is None or (read[2] and len(read[0]) < min(_LEFT_OUT, file_chars)):
            notes.append(f"{rel}: left out, over the budget of {budget} characters for these files")
            continue
        text, size, cut = read
        if cut:
            notes.append(f"{rel}: cut to its first {len(text)} characters (the file is {size} bytes)")
        files.append(ContextFile(path=rel, size=size, text=text, cut=cut))
        left -= len(text)
    if not files and not notes:
        return None
    return SkillFolder(budget=budget, files=files, notes=notes)


def _candidates(root: Path) -> list[str]:
    """Paths (relative, with `/`) of the regular files under `root` worth reading, sorted."""
    out: list[str] = []
    for top, dirs, names in os.walk(root):
        here = Path(top)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS and not (here / d).is_symlink()
        )
        for name in sorted(names):
            path = here / name
            if name.startswith(".") or path.is_symlink() or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            if rel != SKILL_FILE:
                out.append(rel)
    return sorted(out, key=_order)


def _order(rel: str) -> tuple[int, str]:
    """Top-level files first, then `references/`, `scripts/` and the other folders, by path."""
    top = rel.split("/")[0] if "/" in rel else None
    return (0 if top is None else 1 + (_FIRST.index(top) if top in _FIRST else len(_FIRST))), rel


def _read_text(path: Path, chars: int) -> tuple[str, int, bool] | str:
    """The first `chars` characters of a UTF-8 text file, its size in bytes and whether it was cut;
    else why it is left out: a binary file (a NUL byte, or bytes that are not UTF-8), or one that
    cannot be read (and why)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(chars * 4 + 4)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if b"\0" in head:
        return "not a text file"
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) >= size)
    except UnicodeDecodeError:
        return "not a text file"
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    cut = len(head) < size or len(text) > chars
    return text[:chars], size, cut
