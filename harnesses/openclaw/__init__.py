"""OpenClaw, as the registry lists it (docs/agents.md, "OpenClaw")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.openclaw import home, store, transcripts
from skillsleep.harnesses.openclaw.cli import NAME, OPENCLAW

if TYPE_CHECKING:
    from skillsleep.harnesses.install import InstallContext, Plan
    from skillsleep.harnesses.replay import CLIHarness

__all__ = ["AGENT"]


def _harness() -> type[CLIHarness]:
    from skillsleep.harnesses.openclaw.replay import OpenClawHarness

    return OpenClawHarness


def _install(ctx: InstallContext) -> Plan:
    from skillsleep.harnesses.openclaw.install import install

    return install(ctx)


AGENT = Agent(
    name=NAME,
    command=OPENCLAW.default_command,
    home=home.state_dir,
    sources=transcripts.sources,
    watch_roots=transcripts.watch_roots,
    parser=transcripts.parse,
    db_reader=store.read_new,
    skill_dirs=home.skill_dirs,
    managed_skills=home.managed_skills,
    harness=_harness,
    installer=_install,
)
