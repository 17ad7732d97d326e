"""OpenClaw, as the registry lists it (docs/agents.md, "OpenClaw")."""

from __future__ import annotations

from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.openclaw import home, store, transcripts
from skillsleep.harnesses.openclaw.cli import NAME, OPENCLAW
from skillsleep.harnesses.openclaw.settings import OpenClawSettings

__all__ = ["AGENT"]

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
    read_only_skills=home.read_only_skills,
    instruction_files=home.instruction_files,
    settings_model=OpenClawSettings,
    replay=f"{__name__}.replay:OpenClawHarness",
    install=f"{__name__}.install:install",
    cron=f"{__name__}.cron:CRON",
)
