"""The agent a night defaults to here (harnesses/default_agent.py has the rule): the agents installed
under the data folder, and the agent the command was typed in, `SKILLSLEEP_FROM_AGENT`, read here
for `wiring.sleep_settings`. The `/sleep` skill each agent gets runs `skillsleep sleep --from-agent
NAME …`, which sets it (`typed_in()`) for the verb it runs and every process that verb starts, so
a night started there, a detached one included, defaults to that agent. (A flag and not the
variable in the skill: Claude Code's permission rule `Bash(skillsleep:*)` refuses a command that
begins with a variable assignment.)"""

from __future__ import annotations

import os
from pathlib import Path

from skillsleep.core.shared.errors import ConfigError
from skillsleep.harnesses import registry
from skillsleep.harnesses.default_agent import AgentChoice, choose_agent, installed_agents

__all__ = ["FROM_AGENT_ENV", "agent_models", "night_agent", "typed_in"]

FROM_AGENT_ENV = "SKILLSLEEP_FROM_AGENT"  # the agent whose /sleep (or $sleep) ran this command


def agent_models() -> dict[str, str]:
    """Agent name → the backend provider of its headless mode, for every agent that can be the model."""
    return {a.name: a.name for a in registry.agents() if a.provider}  # its provider carries its name


def _check(name: str, where: str) -> str:
    models = agent_models()
    if name not in models:
        raise ConfigError(
            f"{where}: not an agent that can answer a night's model calls (those that can: "
            f"{', '.join(models) or 'none'}); it is set by an agent's /sleep skill: reinstall that agent's skill "
            "with `skillsleep install NAME`"
            + (f", or unset {FROM_AGENT_ENV}" if where.startswith(FROM_AGENT_ENV) else "")
        )
    return name


def typed_in(name: str) -> None:
    """`skillsleep sleep --from-agent NAME`: the verb runs in agent NAME (an agent that can be the
    model, else a ConfigError), for this process and every process it starts."""
    os.environ[FROM_AGENT_ENV] = _check(name, f"--from-agent {name!r}")


def night_agent(data_dir: Path) -> AgentChoice:
    """The agent a night with nothing configured uses, and why (installs recorded under the data
    folder `data_dir`); `SKILLSLEEP_FROM_AGENT` naming an agent that cannot be the model is a
    ConfigError saying which can."""
    models = agent_models()
    agent = os.environ.get(FROM_AGENT_ENV) or None
    if agent is not None:
        _check(agent, f"{FROM_AGENT_ENV}={agent!r}")
    return choose_agent(installed_agents(data_dir, list(models)), models, typed_in=agent)
