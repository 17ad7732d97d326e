"""The harness contract: how the engine runs one task with a given skill inside an agent, and the
harness a run replays in (`HarnessChoice`: the harness, its name in events, one replay's limit)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

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


class HarnessChoice(BaseModel):
    """The harness a run (`eval`, a night) replays its tasks in, as its caller opened it."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True, extra="forbid")

    harness: Harness
    label: str  # how events and summaries name it: "chat (deepseek:…)", "codex 0.171.0 (its configured model)"
    timeout_s: float = Field(gt=0)  # one replay's wall-clock limit
