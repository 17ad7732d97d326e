"""Codex, as the registry lists it (docs/agents.md, "Codex")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.codex import home, transcripts
from skillsleep.harnesses.codex.cli import CODEX, NAME

if TYPE_CHECKING:
    from skillsleep.harnesses.install import InstallContext, Plan
    from skillsleep.harnesses.replay import CLIHarness

__all__ = ["AGENT"]


def _harness() -> type[CLIHarness]:
    from skillsleep.harnesses.codex.replay import CodexHarness

    return CodexHarness


def _install(ctx: InstallContext) -> Plan:
    from skillsleep.harnesses.codex.install import install

    return install(ctx)


AGENT = Agent(
    name=NAME,
    command=CODEX.default_command,
    home=home.codex_home,
    sources=transcripts.sources,
    watch_roots=transcripts.watch_roots,
    parser=transcripts.parse,
    skill_dirs=home.skill_dirs,
    managed_skills=home.managed_skills,
    harness=_harness,
    installer=_install,
)
