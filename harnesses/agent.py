"""One agent skillsleep works with (Claude Code, Codex, OpenClaw, or a plugin's), as one record.

Each agent package (`harnesses/<agent>/`) builds its `Agent` and the registry lists them by name;
nothing outside those packages branches on an agent's name. Paths come from the agent's own rule
for its home (docs/agents.md), always read from an environment mapping that holds `HOME`. The
replay harness and the installer are imported on first use, so reading transcripts never loads
them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillsleep.core.discovery import Found
from skillsleep.core.harvest import DbReader, Parser

if TYPE_CHECKING:
    from skillsleep.harnesses.install import InstallContext, Plan
    from skillsleep.harnesses.replay import CLIHarness

__all__ = ["Agent", "Env"]

Env = Mapping[str, str]


@dataclass(frozen=True)
class Agent:
    """Everything about one agent: its name, CLI, home, transcripts, skills, replay and install."""

    name: str  # the harness name: `--harness`, `Session.harness`, `[harness.<name>]`, `install <name>`
    command: str  # its CLI's name on PATH (`install` looks for it)
    home: Callable[[Env], Path]  # the one rule for where the agent keeps its state
    sources: Callable[[Env], Found]  # its transcript files on this machine
    watch_roots: Callable[[Env], list[Path]]  # the folders `watch` observes (they may not exist)
    parser: Parser  # a transcript file's bytes → sessions
    skill_dirs: Callable[[Env, Path], list[Path]]  # (env, cwd) → its skill folders, in its lookup order
    managed_skills: Callable[[Env], Path]  # the skill folder skillsleep's managed skill goes in
    harness: Callable[[], type[CLIHarness]]  # its replay harness class (its `settings_model` too)
    installer: Callable[[InstallContext], Plan]  # what `skillsleep install <name>` does
    db_reader: DbReader | None = None  # for transcripts kept in a database instead of files
    hook: bool = False  # it runs `skillsleep harvest --hook <name>` when a session ends
