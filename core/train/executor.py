"""Where rollouts run: the executor seam between the engine and the machines that replay tasks.

The `Evaluator` asks an `Executor` for each rollout it does not already hold (task × skill ×
sample → `Run`). The default, `LocalExecutor`, runs the harness in this process, concurrently
(the harness's and the backend's own limits cap how many are in flight). Another executor (the
Ray one, `skillsleep.harnesses.cluster`) sends rollouts elsewhere; the memo, the response cache,
the budget and the ledger stay with the caller, so a rollout already known is never dispatched.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Run, Task
from skillsleep.core.train.harness import Harness

__all__ = ["Executor", "ExecutorSection", "LocalExecutor", "check_address"]


def check_address(address: str) -> str | None:
    """What is wrong with an `[executor] address` ("auto", "ray://HOST:PORT", "HOST:PORT"), or None."""
    if address == "auto":
        return None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"{address!r} is not auto, ray://HOST:PORT or HOST:PORT"
    return None


class ExecutorSection(BaseModel):
    """`[executor]`: where rollouts run (run.toml for `train` and `eval`, config.toml for `run`).

    `resources` maps a harness name to how much of the custom resource of that name one of its
    rollouts needs (`{codex = 1}`: a Codex replay runs only on nodes started with that resource)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ray"] = "local"
    address: str = "auto"  # "auto", "ray://host:port" or "host:port" (only with kind = "ray")
    num_cpus: float = Field(default=1.0, ge=0)  # CPUs one rollout reserves on its node
    resources: dict[str, float] = Field(default_factory=dict)
    max_retries: int = Field(default=3, ge=0)  # new tries of a rollout whose worker died

    @field_validator("address")
    @classmethod
    def _address_syntax(cls, address: str) -> str:
        if problem := check_address(address):
            raise ValueError(problem)
        return address


@runtime_checkable
class Executor(Protocol):
    """Runs one rollout of a harness somewhere and returns its `Run` (with its usage).

    Contract: like `Harness.run`, one failed episode is a `Run(error=...)`, never an exception
    (a worker that died more often than its retries allow is one); only a systemic failure (the
    budget, a backend gone for good, the cluster unreachable) raises. It must not mutate `task`
    or `skill`, and never writes the user's files. `aclose()` lets go of what it holds."""

    name: str

    async def run(self, harness: Harness, task: Task, skill: Skill, *, sample: int, timeout_s: float) -> Run: ...

    async def aclose(self) -> None: ...


class LocalExecutor:
    """Rollouts in this process, as concurrent asyncio tasks."""

    name = "local"

    async def run(self, harness: Harness, task: Task, skill: Skill, *, sample: int, timeout_s: float) -> Run:
        return await harness.run(task, skill, sample=sample, timeout_s=timeout_s)

    async def aclose(self) -> None:
        return None
