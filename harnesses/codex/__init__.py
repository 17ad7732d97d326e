"""Codex, as the registry lists it (docs/agents.md, "Codex")."""

from __future__ import annotations

from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.codex import home, transcripts
from skillsleep.harnesses.codex.cli import CODEX, NAME
from skillsleep.harnesses.codex.settings import CodexSettings

__all__ = ["AGENT"]

AGENT = Agent(
    name=NAME,
    command=CODEX.default_command,
    home=home.codex_home,
    sources=transcripts.sources,
    watch_roots=transcripts.watch_roots,
    parser=transcripts.parse,
    skill_dirs=home.skill_dirs,
    managed_skills=home.managed_skills,
    read_only_skills=home.read_only_skills,
    instruction_files=home.instruction_files,
    settings_model=CodexSettings,
    replay=f"{__name__}.replay:CodexHarness",
    install=f"{__name__}.install:install",
    provider=f"{__name__}.model:CodexModel",  # `codex exec` answers as the backend spec codex[:MODEL]
)
