"""`[harness.openclaw]`: the settings of an OpenClaw replay, on top of every agent's."""

from __future__ import annotations

from pydantic import Field

from skillsleep.harnesses.agent_cli import AgentSettings

__all__ = ["OpenClawSettings"]


class OpenClawSettings(AgentSettings):
    """Settings of the openclaw harness (`[harness.openclaw]`), on top of `AgentSettings`."""

    lean: bool = False  # `--local-model-lean`: reduced tool surface for small local models
    thinking: str = ""  # `--thinking LEVEL` (off, minimal, low, medium, high, …); "" → the config's
    provider_retries: int | None = Field(default=2, ge=0)  # retry.provider.maxRetries; None → OpenClaw's 8
