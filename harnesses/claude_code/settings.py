"""`[harness.claude-code]`: the settings of a Claude Code replay, on top of every agent's."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from skillsleep.harnesses.agent_cli import AgentSettings

__all__ = ["ClaudeCodeSettings"]


class ClaudeCodeSettings(AgentSettings):
    """Settings of the claude-code harness (`[harness.claude-code]`), on top of `AgentSettings`."""

    allowed_tools: list[str] = Field(default_factory=lambda: ["Bash", "Read", "Edit", "Write", "Glob", "Grep"])
    max_turns: int = Field(default=8, ge=1)
    # Headless: allowed tools run, anything else is denied at once (no one can answer a prompt).
    permission_mode: Literal["dontAsk", "acceptEdits", "auto", "bypassPermissions", "manual", "plan"] = "dontAsk"
    bare: bool = False  # `--bare`: minimal system prompt, no hooks/CLAUDE.md/auto-memory (tiny local models)
    tools: list[str] | None = None  # `--tools`: None → the agent's default set, [] → none (`--tools ""`)
    max_retries: int = Field(default=2, ge=0)  # CLAUDE_CODE_MAX_RETRIES
