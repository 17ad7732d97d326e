"""The agent's name and its `openclaw` CLI: which build skillsleep replays with, how its failures read."""

from __future__ import annotations

from skillsleep.harnesses.agent_cli import AgentCLI
from skillsleep.harnesses.failures import Wording

__all__ = ["NAME", "OPENCLAW", "REPLAY_AGENT", "WORDS"]

NAME = "openclaw"
REPLAY_AGENT = "skillsleep-replay"  # the OpenClaw agent id of replays: its sessions are never harvested
OPENCLAW = AgentCLI(
    harness=NAME,
    default_command="openclaw",
    package="openclaw",
    min_version=(2026, 9, 0),
    tested_version="2026.9.6",
)
WORDS = Wording(
    name="OpenClaw",
    harness=NAME,
    check="check that `openclaw agent exec hello --json` works in this environment",
    login="a replay sees provider keys from the environment, ~/.openclaw/.env and openclaw.json, not logins "
    "stored in OpenClaw's state; export the provider's key (e.g. OPENAI_API_KEY)",
    provider="the provider's baseUrl in openclaw.json",
    final="its JSON envelope",
    install_hint=OPENCLAW.install_hint(),
    lean=", and `lean = true` in the openclaw harness settings (--local-model-lean: ~8k tokens of prompt "
    "instead of ~15k)",
)
