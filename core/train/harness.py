"""The harness contract: how the engine runs one task with a given skill inside an agent."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Run, Task


@runtime_checkable
class Harness(Protocol):
    """An agent that can run one task headless with a given skill.

    Contract: `run()` never raises for one failed episode. A crash, a timeout, an auth failure
    or a malformed agent output is returned as `Run(error=...)`, which scores 0; only a
    systemic failure (budget exhausted, backend gone for good) propagates as an exception.
    It must not mutate `task` or `skill`, and must not touch the user's files.
    """

    name: str

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run: ...
