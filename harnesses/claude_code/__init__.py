"""Claude Code, as the registry lists it (docs/agents.md, "Claude Code")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.claude_code import home, transcripts
from skillsleep.harnesses.claude_code.cli import CLAUDE, NAME

if TYPE_CHECKING:
    from skillsleep.harnesses.install import InstallContext, Plan
    from skillsleep.harnesses.replay import CLIHarness

__all__ = ["AGENT"]


def _harness() -> type[CLIHarness]:
    from skillsleep.harnesses.claude_code.replay import ClaudeCodeHarness

    return ClaudeCodeHarness


def _install(ctx: InstallContext) -> Plan:
    from skillsleep.harnesses.claude_code.install import install

    return install(ctx)


AGENT = Agent(
    name=NAME,
    command=CLAUDE.default_command,
    home=home.config_dir,
    sources=transcripts.sources,
    watch_roots=transcripts.watch_roots,
    parser=transcripts.parse,
    skill_dirs=home.skill_dirs,
    managed_skills=home.managed_skills,
    harness=_harness,
    installer=_install,
    hook=True,
)
