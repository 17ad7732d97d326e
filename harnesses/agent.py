"""One agent skillsleep works with (Claude Code, Codex, OpenClaw, or a plugin's), as one record.

Each agent package (`harnesses/<agent>/`) builds its `Agent` and the registry lists them by name;
nothing outside those packages branches on an agent's name. Paths come from the agent's own rule
for its home (docs/agents.md), always read from an environment mapping that holds `HOME`. The
replay harness and the installer are named as "module:attribute" and imported on first use, so
reading transcripts never loads them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from skillsleep.core.harvest.discovery import Found
from skillsleep.core.harvest.harvester import DbReader, Parser
from skillsleep.core.shared.errors import ConfigError

if TYPE_CHECKING:
    from skillsleep.harnesses.install_plan import InstallContext, Plan
    from skillsleep.harnesses.replay import CLIHarness

__all__ = ["Agent", "Env"]

Env = Mapping[str, str]


class Agent(BaseModel):
    """Everything about one agent: its name, CLI, home, transcripts, skills, replay and install."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # the harness name: `--harness`, `Session.harness`, `[harness.<name>]`, `install <name>`
    command: str  # its CLI's name on PATH (`install` looks for it)
    home: Callable[[Env], Path]  # the one rule for where the agent keeps its state
    sources: Callable[[Env], Found]  # its transcript files on this machine
    watch_roots: Callable[[Env], list[Path]]  # the folders `watch` observes (they may not exist)
    parser: Parser  # a transcript file's bytes → sessions
    skill_dirs: Callable[[Env, Path], list[Path]]  # (env, cwd) → its skill folders, in its lookup order
    managed_skills: Callable[[Env], Path]  # the skill folder skillsleep's managed skill goes in
    replay: str  # "module:Class" of its replay harness, a CLIHarness (imported on first use)
    install: str  # "module:function" of its installer, what `skillsleep install <name>` does (the same)
    db_reader: DbReader | None = None  # for transcripts kept in a database instead of files
    hook: bool = False  # it runs `skillsleep harvest --hook <name>` when a session ends

    def harness(self) -> type[CLIHarness]:
        """Its replay harness class; its `settings_model` is the schema of `[harness.<name>]`."""
        from skillsleep.harnesses.replay import CLIHarness

        found = _imported(self.replay)
        if not (isinstance(found, type) and issubclass(found, CLIHarness)):
            raise ConfigError(f"the agent {self.name!r}: {self.replay} is not a replay harness (a CLIHarness)")
        return found

    def installer(self, ctx: InstallContext) -> Plan:
        """What installing skillsleep into this agent means, for `ctx`."""
        plan: Plan = _imported(self.install)(ctx)
        return plan


def _imported(ref: str) -> Any:
    """What "module:attribute" names, imported."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
