"""`[harness.codex]`: the settings of a Codex replay, on top of every agent's."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from skillsleep.harnesses.agent_cli import AgentSettings

__all__ = ["LEAN_INSTRUCTIONS", "CodexSettings"]

LEAN_INSTRUCTIONS = (
    "You are a coding agent in a terminal. Do what the user asks. Use the shell tool when you "
    "need to run a command. Answer briefly.\n"
)


class CodexSettings(AgentSettings):
    """Settings of the codex harness (`[harness.codex]`), on top of `AgentSettings`."""

    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    skill_mode: Literal["skill", "agents_md"] = "skill"  # a `$name` skill, or the project's AGENTS.md (replay.py)
    lean: bool = False  # minimal instructions and tools, for tiny local models
    lean_instructions: str = LEAN_INSTRUCTIONS
    retries: int = Field(default=0, ge=0)  # request/stream retries of the base_url provider
