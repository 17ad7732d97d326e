"""An agent's own scheduler, where `skillsleep schedule --<agent>` can keep the night: the
`AgentCron` an agent's record names (`Agent.cron`, as OpenClaw's does), and the jobs it takes
and lists. What a job runs and which job is skillsleep's are decided by the command layer
(slash_commands/schedulers.py); an `AgentCron` only talks to the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import Field

from skillsleep.core.shared.records import Record

__all__ = ["AgentCron", "CronEntry", "CronJob"]


class CronJob(Record):
    """A command job to add: runs `argv` in `cwd` with `env` (nothing else of the shell's) at the
    times of `expr` (five cron fields), with no time limit and nothing posted anywhere."""

    name: str
    expr: str
    description: str
    argv: list[str]
    cwd: Path
    env: dict[str, str] = Field(default_factory=dict)


class CronEntry(Record):
    """A job the agent's cron holds now."""

    id: str
    name: str
    description: str = ""


class AgentCron(Protocol):
    """An agent's cron. Every call but `add_argv` and `where` asks the agent (a missing CLI is a
    ConfigError naming what to install; a refusal a SkillsleepError saying what to do)."""

    title: str  # how messages name it: "OpenClaw's cron"
    remove_hint: str  # how the user removes a job of it by hand: "`openclaw cron rm ID`"

    def where(self) -> str:
        """Where it keeps its jobs, in words."""
        ...

    def add_argv(self, job: CronJob) -> list[str]:
        """The command line that adds `job` (what `schedule --print` shows)."""
        ...

    def add(self, job: CronJob) -> str:
        """Add `job`; its id."""
        ...

    def jobs(self) -> list[CronEntry]:
        """Every job it holds, skillsleep's or not."""
        ...

    def remove(self, job_id: str) -> None:
        """Remove the job `job_id`."""
        ...
