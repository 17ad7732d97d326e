"""What runs on a Ray worker: one rollout, rebuilt from what the driver sends.

The driver (`harnesses/cluster.py`) sends a `HarnessSpec` (the chat harness's backend and
sampling settings, or an agent's name and its `[harness.<name>]` settings), the task, the skill
and the sample; the worker builds the harness on its own node, runs the task once and returns
the `Run` (with its usage) and where it ran. Nothing here touches the driver's state: no cache,
no ledger, no budget (the driver keeps those), and an agent replays in its usual temporary
working copy and state folder, so nothing is written into the node's agent folders.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.registry import create_backend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.records import Completion, Run, Task
from skillsleep.core.train.harness import Harness
from skillsleep.harnesses import registry
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.providers import register_providers
from skillsleep.harnesses.ray_api import ray

__all__ = ["HarnessSpec", "Placed", "replay"]


class HarnessSpec(BaseModel):
    """How a worker builds the harness of a rollout: `chat` (with `backend`, its settings and the
    sampling) or an agent `name` (with its `agent_settings`, checked again on the worker)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    backend: str = ""  # provider:model of the chat harness
    backend_settings: BackendSettings | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = 0
    agent_settings: dict[str, Any] = Field(default_factory=dict)

    def build(self) -> Harness:
        """The harness on this node (the chat harness's model calls go to its backend directly)."""
        if self.name != registry.CHAT:
            return registry.create_harness(self.name, settings=self.agent_settings)
        register_providers()  # a worker process resolves `claude-code` / `codex` too
        backend = create_backend(self.backend, self.backend_settings)
        llm = LLM(backend, ledger=Ledger(), temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed)
        return ChatHarness(llm)


class Placed(BaseModel):
    """A rollout's `Run`, the node it ran on, and for the chat harness the model's answer (the
    driver caches it and counts its usage)."""

    model_config = ConfigDict(extra="forbid")

    run: Run
    node: str
    completion: Completion | None = None


def node_label() -> str:
    """This node as progress and errors name it: its address and the start of its Ray id."""
    cluster = ray()
    return f"{cluster.util.get_node_ip_address()} ({cluster.get_runtime_context().get_node_id()[:8]})"


def replay(spec: HarnessSpec, task: Task, skill: Skill, sample: int, timeout_s: float) -> Placed:
    """One rollout on this worker (the body of the Ray task)."""
    return asyncio.run(_replay(spec, task, skill, sample, timeout_s)).model_copy(update={"node": node_label()})


async def _replay(spec: HarnessSpec, task: Task, skill: Skill, sample: int, timeout_s: float) -> Placed:
    harness = spec.build()
    if not isinstance(harness, ChatHarness):
        return Placed(run=await harness.run(task, skill, sample=sample, timeout_s=timeout_s), node="")
    try:
        request = harness.request(task, skill, sample=sample)
        completion = await harness.llm.complete("target", request, timeout_s=timeout_s)
        return Placed(run=harness.finish(task, sample, request, completion), node="", completion=completion)
    finally:
        await harness.llm.backend.aclose()
