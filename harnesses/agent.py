"""One agent skillsleep works with (Claude Code, Codex, OpenClaw, or a plugin's), as one record.

Each agent package (`harnesses/<agent>/`) builds its `Agent` and the registry lists them by name;
nothing outside those packages branches on an agent's name. Paths come from the agent's own rule
for its home (docs/agents.md), always read from an environment mapping that holds `HOME`. The
record declares its `[harness.<name>]` settings model; the replay harness, the installer and an
agent's own cron are named as "module:attribute" and imported on first use, so reading
transcripts or checking a settings table never loads them.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from skillsleep.core.harvest.discovery import Found
from skillsleep.core.harvest.harvester import DbReader, Parser
from skillsleep.core.shared.errors import ConfigError
from skillsleep.harnesses.agent_cli import AgentSettings, HarnessStatus
from skillsleep.harnesses.skill_roots import ReadOnlyRoots, no_files, no_roots

if TYPE_CHECKING:
    from skillsleep.core.models.backends.base import BaseBackend
    from skillsleep.harnesses.agent_cron import AgentCron
    from skillsleep.harnesses.install_plan import InstallContext, Plan
    from skillsleep.harnesses.replay import CLIHarness

__all__ = ["Agent", "Env"]

Env = Mapping[str, str]


class Agent(BaseModel):
    """Everything about one agent: its name, CLI, home, transcripts, skills, settings, replay and install."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # the harness name: `--harness`, `Session.harness`, `[harness.<name>]`, `install <name>`
    command: str  # its CLI's name on PATH (`install` looks for it)
    home: Callable[[Env], Path]  # the one rule for where the agent keeps its state
    sources: Callable[[Env], Found]  # its transcript files on this machine
    watch_roots: Callable[[Env], list[Path]]  # the folders `watch` observes (they may not exist)
    parser: Parser  # a transcript file's bytes → sessions
    skill_dirs: Callable[[Env, Path], list[Path]]  # (env, cwd) → its skill folders, in its lookup order
    managed_skills: Callable[[Env], Path]  # the skill folder skillsleep's managed skill goes in
    # its plugins' and its own bundled skill folders (read-only: never proposed for edit)
    read_only_skills: ReadOnlyRoots = no_roots
    # (env, cwd) → the instruction files it reads (CLAUDE.md, AGENTS.md), whether they exist or not
    instruction_files: Callable[[Env, Path], list[Path]] = no_files
    settings_model: type[AgentSettings]  # the schema of `[harness.<name>]` (unknown keys are errors)
    replay: str  # "module:Class" of its replay harness, a CLIHarness (imported on first use)
    install: str  # "module:function" of its installer, what `skillsleep install <name>` does (the same)
    db_reader: DbReader | None = None  # for transcripts kept in a database instead of files
    hook: bool = False  # it runs `skillsleep harvest --hook <name>` when a session ends
    cron: str | None = None  # "module:attribute" of its own cron (an AgentCron): `schedule --<name>` uses it
    # "module:Class" of the agent as a model provider (a BaseBackend named like the agent, so the backend
    # spec is `<name>[:MODEL]`), if it is one: after `skillsleep install <name>` a night with nothing
    # configured uses it as the model (slash_commands/night_agent.py)
    provider: str | None = None

    def settings(self, raw: Mapping[str, object] | None = None, *, where: str = "") -> AgentSettings:
        """`raw` (a `[harness.<name>]` table) checked against the settings model; an error names the
        section (`where`, else `[harness.<name>]`), the key, and the closest known key."""
        try:
            return self.settings_model.model_validate(dict(raw or {}))
        except ValidationError as exc:
            known = list(self.settings_model.model_fields)
            problems = "; ".join(_problem(e, known) for e in exc.errors())
            raise ConfigError(
                f"{where or f'[harness.{self.name}]'}: {problems} (known keys: {', '.join(known)})"
            ) from None

    def harness(self, settings: AgentSettings, *, env: dict[str, str] | None = None) -> CLIHarness:
        """Its replay harness with `settings` (from `settings()`); `env` is the base environment of
        the agent process (None → this process's)."""
        from skillsleep.harnesses.replay import CLIHarness

        found = _imported(self.replay)
        if not (isinstance(found, type) and issubclass(found, CLIHarness)):
            raise ConfigError(f"the agent {self.name!r}: {self.replay} is not a replay harness (a CLIHarness)")
        if not isinstance(settings, self.settings_model):
            wanted, given = self.settings_model.__name__, type(settings).__name__
            raise TypeError(f"the {self.name} harness takes {wanted}, not {given}: build them with its settings()")
        return found(settings, env=env)

    def status(self, settings: AgentSettings | None = None, *, env: dict[str, str] | None = None) -> HarnessStatus:
        """Whether its CLI is installed here, its version, and whether skillsleep can replay with it
        (and why not): one row of `skillsleep harnesses`, checked before any replay."""
        return self.harness(settings if settings is not None else self.settings(), env=env).status()

    def own_cron(self) -> AgentCron:
        """Its own cron, where `skillsleep schedule --<name>` keeps the night."""
        if self.cron is None:
            raise ConfigError(f"the agent {self.name!r} keeps no cron of its own; schedule with the crontab instead")
        found: AgentCron = _imported(self.cron)
        return found

    def model_provider(self) -> type[BaseBackend]:
        """Its model provider's backend class, checked to carry the agent's name."""
        from skillsleep.core.models.backends.base import BaseBackend

        found = _imported(self.provider) if self.provider else None
        if not (isinstance(found, type) and issubclass(found, BaseBackend) and found.info.name == self.name):
            raise ConfigError(f"the agent {self.name!r}: {self.provider} is not a backend class named {self.name!r}")
        return found

    def installer(self, ctx: InstallContext) -> Plan:
        """What installing skillsleep into this agent means, for `ctx`."""
        plan: Plan = _imported(self.install)(ctx)
        return plan


def _problem(error: ErrorDetails, known: list[str]) -> str:
    """One pydantic error of a harness table in words; an unknown key names the closest known one."""
    key = ".".join(map(str, error["loc"])) or "(section)"
    if error["type"] != "extra_forbidden":
        return f"{key}: {error['msg']}"
    close = difflib.get_close_matches(key, known, n=1)
    return f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _imported(ref: str) -> Any:
    """What "module:attribute" names, imported."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
