"""The agent's name and its `codex` CLI: which build skillsleep replays with, how its failures read."""

from __future__ import annotations

from skillsleep.harnesses.agent_cli import AgentCLI
from skillsleep.harnesses.failures import Wording

__all__ = ["CODEX", "NAME", "WORDS"]

NAME = "codex"
CODEX = AgentCLI(
    harness=NAME, default_command="codex", package="@openai/codex", min_version=(0, 171, 0), tested_version="0.171.0"
)
WORDS = Wording(
    name="Codex",
    harness=NAME,
    check="rerun the task with `codex exec` in its folder to see why",
    login="run `codex login`",
    provider="the provider in the user's Codex config.toml",
    final="a finished turn",
    install_hint=CODEX.install_hint(),
    lean=", and `lean = true` in the codex harness settings",
    exit_word="code",
    seconds="{:g}s",
)
