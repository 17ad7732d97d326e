"""The agent's name and its `claude` CLI: which build skillsleep replays with, how its failures read."""

from __future__ import annotations

from skillsleep.harnesses.agent_cli import AgentCLI
from skillsleep.harnesses.failures import Wording

__all__ = ["CLAUDE", "NAME", "WORDS"]

NAME = "claude-code"
CLAUDE = AgentCLI(
    harness=NAME,
    default_command="claude",
    package="@anthropic-ai/claude-code",
    min_version=(2, 1, 0),
    tested_version="2.1.332",
)
WORDS = Wording(
    name="Claude Code",
    harness=NAME,
    check="check that `claude -p hello` works in this environment",
    login="log in by running `claude` and /login, or set ANTHROPIC_API_KEY",
    provider="ANTHROPIC_BASE_URL in the agent's settings",
    final="a final result",
    install_hint=CLAUDE.install_hint(),
)
