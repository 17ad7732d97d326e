"""The agent a night defaults to here (harnesses/default_agent.py has the rule): the agents installed
under the data folder, and `SKILLSLEEP_FROM_AGENT`, read here for `wiring.sleep_settings` (the
environment only: the `/sleep` skill each agent gets sets it on the command it runs, so a night
started there, detached ones included, defaults to that agent)."""

from __future__ import annotations

import os
from pathlib import Path

from skillsleep.core.shared.errors import ConfigError
from skillsleep.harnesses import registry
from skillsleep.harnesses.default_agent import AgentChoice, choose_agent, installed_agents

__all__ = ["FROM_AGENT_ENV", "agent_models", "night_agent"]

FROM_AGENT_ENV = "SKILLSLEEP_FROM_AGENT"  # the agent whose /sleep (or $sleep) ran this command


def agent_models() -> dict[str, str]:
    """Agent name → the backend provider of its headless mode, for every agent that can be the model."""
    return {a.name: a.model_provider for a in registry.agents() if a.model_provider}


def night_agent(data_dir: Path) -> AgentChoice:
    """The agent a night with nothing configured uses, and why (installs recorded under the data
    folder `data_dir`); `SKILLSLEEP_FROM_AGENT` naming an agent that cannot be the model is a
    ConfigError saying which can."""
    models = agent_models()
    typed_in = os.environ.get(FROM_AGENT_ENV) or None
    if typed_in is not None and typed_in not in models:
        known = ", ".join(models) or "none"
        raise ConfigError(
            f"{FROM_AGENT_ENV}={typed_in!r}: not an agent that can answer a night's model calls (those that can: "
            f"{known}); it is set by an agent's /sleep skill: unset it, or reinstall that agent's skill with "
            "`skillsleep install NAME`"
        )
    return choose_agent(installed_agents(data_dir, list(models)), models, typed_in=typed_in)
