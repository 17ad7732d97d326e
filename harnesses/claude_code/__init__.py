"""Claude Code, as the registry lists it (docs/agents.md, "Claude Code")."""

from __future__ import annotations

from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.claude_code import home, transcripts
from skillsleep.harnesses.claude_code.cli import CLAUDE, NAME
from skillsleep.harnesses.claude_code.settings import ClaudeCodeSettings

__all__ = ["AGENT"]

AGENT = Agent(
    name=NAME,
    command=CLAUDE.default_command,
    home=home.config_dir,
    sources=transcripts.sources,
    watch_roots=transcripts.watch_roots,
    parser=transcripts.parse,
    skill_dirs=home.skill_dirs,
    managed_skills=home.managed_skills,
    read_only_skills=home.read_only_skills,
    instruction_files=home.instruction_files,
    settings_model=ClaudeCodeSettings,
    replay=f"{__name__}.replay:ClaudeCodeHarness",
    install=f"{__name__}.install:install",
    hook=True,
    provider=f"{__name__}.model:ClaudeCodeModel",  # `claude -p` answers as the backend spec claude-code[:MODEL]
)
