"""The folders skillsleep runs an agent process in: one shared thing for every replay and every call
of an agent as the night's model, so that whatever the agent writes about the run is recognised as
skillsleep's own and never harvested (`core/harvest/own.py`).

    <tmp>/skillsleep-run-XXXXXXXX/      the run folder (tempfile's 8 random characters), deleted after
        work/                           the agent's working folder: a copy of the task's, or empty
        agent/                          the agent's throwaway state (its home, config, scratch)

Every agent records its working folder as the session's cwd (Claude Code on every transcript line,
Codex in `session_meta` and `turn_context`, OpenClaw in the session header), so a transcript the
agent writes anyway — a user's wrapper that drops `--no-session-persistence` or `--ephemeral`, an
older CLI, an agent pointed back at the user's own state — names a run folder and harvest refuses
it. `<tmp>` is `tempfile.gettempdir()` ($TMPDIR): the folder's own name is what is recognised.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from skillsleep.core.harvest.own import RUN_FOLDER_PREFIX, in_run_folder
from skillsleep.core.shared.records import Task

__all__ = ["RUN_FOLDER_PREFIX", "WORKDIR_IGNORE", "RunFolder", "in_run_folder", "run_folder"]

WORKDIR_IGNORE = shutil.ignore_patterns(".git", "node_modules", ".venv", "__pycache__")


@dataclass(frozen=True)
class RunFolder:
    """One run folder: `work` (the agent's cwd) and `agent` (its throwaway state), both made."""

    root: Path
    work: Path
    agent: Path


@contextlib.contextmanager
def run_folder(task: Task | None = None, *, parent: Path | None = None) -> Iterator[RunFolder]:
    """A fresh run folder under `parent` (default: the temp folder), deleted afterwards. `work` is a
    copy of the task's working directory (without `.git`, `node_modules`, virtual environments and
    caches) or empty (no task, or a task without one: a model call)."""
    with tempfile.TemporaryDirectory(prefix=RUN_FOLDER_PREFIX, dir=parent, ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        work, agent = root / "work", root / "agent"
        source = Path(task.workdir) if task is not None and task.workdir else None
        if source is not None and source.is_dir():
            shutil.copytree(source, work, symlinks=True, ignore=WORKDIR_IGNORE, ignore_dangling_symlinks=True)
        else:
            work.mkdir()
        agent.mkdir()
        assert in_run_folder(str(work)), f"{work} is not recognised as a run folder"  # the harvest's rule
        yield RunFolder(root=root, work=work, agent=agent)
