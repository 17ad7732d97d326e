"""The run directory: every candidate, step, gate decision, the ledger and a resumable state.

<run>/state.json            resumable training state (written atomically after each step)
<run>/best_skill.md         the best gate-accepted skill (the seed until one is accepted)
<run>/candidates/eEsS.md    every candidate skill
<run>/steps/eEsS/*.json     proposed, merged and ranked edits, the step record, the gate
<run>/rollouts.jsonl        every scored rollout (reused on resume)
<run>/ledger.jsonl          every model call: role, model, tokens, cost, latency, cache hit
<run>/summary.json          the run's summary (also printed by --json)
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from skillsleep.core.models.ledger import Ledger, read_ledger
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import LedgerEntry

M = TypeVar("M", bound=BaseModel)


PRIVATE_DIR = 0o700  # skillsleep's own folders (the data folder, its runs, staging, backups, logs)
PRIVATE_FILE = 0o600  # skillsleep's own files: harvested conversations, records, logs


def private_dir(path: Path) -> Path:
    """`path` as a folder: created, with every missing folder above it, for this user alone (0700,
    what XDG asks of a folder it creates); a folder that exists is left as it is."""
    path = Path(path)
    if path.is_dir():
        return path
    if path.parent != path and not path.parent.is_dir():
        private_dir(path.parent)
    try:
        path.mkdir(mode=PRIVATE_DIR)
    except FileExistsError:
        if not path.is_dir():
            raise
    return path


def write_private(path: Path, content: str | bytes, *, mode: int = PRIVATE_FILE) -> None:
    """`write_atomic` for a file of skillsleep's own: missing folders are created 0700 and a new
    file gets `mode` (0600; a copy of a user's file passes that file's mode)."""
    private_dir(path.parent)
    write_atomic(path, content, new_mode=mode)


def file_mode(path: Path, default: int = PRIVATE_FILE) -> int:
    """The permission bits of the file at `path`, or `default` when there is none."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return default


def write_atomic(path: Path, content: str | bytes, *, new_mode: int = 0o644) -> None:
    """Write a file so that readers see the old or the new content, never a torn one.

    Text is written in text mode; bytes exactly as given (a user's file: its line endings and
    encoding are not ours to change). An existing file keeps its permission bits; a new one
    gets `new_mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if isinstance(content, bytes) else "w") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, file_mode(path, new_mode))  # (not the umask: reading it changes it for every thread)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_line(path: Path, line: str, *, mode: int = PRIVATE_FILE, durable: bool = False) -> None:
    """Append one line to a JSONL file of skillsleep's own (created `mode`, in folders created
    0700) in a single write on an O_APPEND descriptor, so writers never interleave. After a line
    torn by a kill, the new one starts on a line of its own (a reader skips the torn one and loses
    nothing else). `durable`: fsync before returning."""
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, mode)
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        os.write(fd, (("\n" if torn else "") + line + "\n").encode("utf-8"))
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


class RunDir:
    """Paths and atomic writers of one training run; its folder and files are this user's alone."""

    def __init__(self, path: Path) -> None:
        self.path = private_dir(Path(path))

    @property
    def state_path(self) -> Path:
        return self.path / "state.json"

    @property
    def rollouts_path(self) -> Path:
        return self.path / "rollouts.jsonl"

    @property
    def ledger_path(self) -> Path:
        return self.path / "ledger.jsonl"

    @property
    def best_path(self) -> Path:
        return self.path / "best_skill.md"

    def step_dir(self, epoch: int, step: int) -> Path:
        return self.path / "steps" / f"e{epoch}s{step}"

    def write_json(self, rel: str | Path, data: Any) -> None:
        if isinstance(data, BaseModel):
            text = data.model_dump_json(indent=2)
        else:
            text = json.dumps(_plain(data), indent=2, ensure_ascii=False)
        write_private(self.path / rel, text + "\n")

    def write_text(self, rel: str | Path, text: str) -> None:
        write_private(self.path / rel, text)

    def load(self, rel: str, model: type[M]) -> M | None:
        """A saved record, or None when absent; a damaged file is an error naming the fix."""
        path = self.path / rel
        if not path.exists():
            return None
        try:
            return model.model_validate_json(path.read_text())
        except ValueError as exc:
            raise ConfigError(
                f"{path} is damaged ({exc.__class__.__name__}); start over with --fresh or a new run name."
            ) from exc

    def append_ledger(self, entry: LedgerEntry) -> None:
        append_line(self.ledger_path, entry.model_dump_json())

    def ledger(self) -> Ledger:
        """Every call of this run, by every process that worked on it (resumes included)."""
        return read_ledger(self.ledger_path)


def _plain(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_plain(v) for v in data]
    return data
