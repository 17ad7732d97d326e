"""Harnesses by name: the agents skillsleep replays tasks in and harvests from, and direct chat.

    chat     the skill as system prompt, one completion through any backend of the engine
    <agent>  an `Agent` (harnesses/agent.py): the built-in ones are the packages harnesses/<agent>/

Built-in agents are registered through the same `register()` that third-party packages reach
through the `skillsleep.agents` entry-point group (an entry point names either an `Agent` or a
`register_agents(register)` hook), in that order; tests switch third-party ones off with
`LOAD_ENTRY_POINTS`. An unknown name is an `UnknownNameError` listing the known ones. Settings
for an agent's harness are a plain mapping (a config file section) validated against the agent's
settings model (`Agent.settings`), so an unknown or mistyped key is an error, never ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path

from skillsleep.core.harvest.harvester import DbReader, Parser
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.plugins import PluginKind, register_plugins
from skillsleep.core.shared.errors import ConfigError, UnknownNameError
from skillsleep.core.train.harness import Harness
from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.agent_cli import AgentSettings, HarnessStatus
from skillsleep.harnesses.claude_code import AGENT as CLAUDE_CODE
from skillsleep.harnesses.codex import AGENT as CODEX
from skillsleep.harnesses.openclaw import AGENT as OPENCLAW

CHAT = "chat"  # the direct-chat harness: no agent CLI, no transcripts of its own
ENTRY_POINT_GROUP = "skillsleep.agents"
AGENTS: dict[str, Agent] = {}
# Set to False (tests do) to skip third-party agents registered through entry points.
LOAD_ENTRY_POINTS = True
_entry_points_loaded = False
PLUGINS = PluginKind("agent", "an Agent", lambda obj: isinstance(obj, Agent))


def register(agent: Agent, *, replace: bool = False) -> None:
    """Make `agent` available by its name."""
    if agent.name == CHAT or (agent.name in AGENTS and not replace and AGENTS[agent.name] is not agent):
        raise ConfigError(f"an agent named {agent.name!r} is already registered; pick another name")
    AGENTS[agent.name] = agent


def _load_entry_points() -> None:
    global _entry_points_loaded
    if LOAD_ENTRY_POINTS and not _entry_points_loaded:
        _entry_points_loaded = True
        register_plugins(entry_points(group=ENTRY_POINT_GROUP), PLUGINS, register)


def agents() -> list[Agent]:
    """Every registered agent, in registration order (the built-ins first)."""
    _load_entry_points()
    return list(AGENTS.values())


def agent_names() -> tuple[str, ...]:
    return tuple(a.name for a in agents())


def names() -> tuple[str, ...]:
    """Every harness name: `chat`, then the agents."""
    return (CHAT, *agent_names())


def get(name: str) -> Agent:
    """The agent registered as `name`, or UnknownNameError listing the known ones."""
    _load_entry_points()
    if name not in AGENTS:
        raise UnknownNameError("agent", name, list(AGENTS))
    return AGENTS[name]


def check_name(name: str) -> str:
    """`name` if it is a known harness, else an error listing the known ones."""
    if name not in names():
        raise UnknownNameError("harness", name, list(names()))
    return name


def parsers() -> dict[str, Parser]:
    """Each agent's transcript parser, by agent name."""
    return {a.name: a.parser for a in agents()}


def db_readers() -> dict[str, DbReader]:
    """The database readers of the agents that keep transcripts in one, by agent name."""
    return {a.name: a.db_reader for a in agents() if a.db_reader is not None}


def create_harness(
    name: str,
    *,
    llm: LLM | None = None,
    settings: Mapping[str, object] | AgentSettings | None = None,
    env: dict[str, str] | None = None,
    chat_log_dir: Path | None = None,
) -> Harness:
    """A harness by name. `chat` needs the target `llm`; an agent's harness takes `settings` (a
    `[harness.<name>]` table, or its settings model) and the base environment for the agent
    process (`env`, None → this process's)."""
    check_name(name)
    if name == CHAT:
        from skillsleep.harnesses.chat import ChatHarness

        if llm is None:
            raise ConfigError("the chat harness needs a target model: set [target] backend in the config")
        if settings:
            raise ConfigError("the chat harness takes no [harness.chat] settings; configure the model in [target]")
        return ChatHarness(llm, log_dir=chat_log_dir)
    agent = get(name)
    return agent.harness(settings if isinstance(settings, AgentSettings) else agent.settings(settings), env=env)


def statuses(
    settings: Mapping[str, AgentSettings] | None = None, env: dict[str, str] | None = None
) -> list[HarnessStatus]:
    """Every harness: whether its agent is installed, its version, whether it is usable and why
    not; `settings` are the `[harness.<name>]` tables by agent name (an agent without one: its defaults)."""
    try:
        own = version("skillsleep")
    except PackageNotFoundError:
        own = None
    chat = HarnessStatus(
        name=CHAT,
        installed=True,
        version=own,
        usable=True,
        reason="runs through the engine's backends; no agent CLI needed",
    )
    return [chat, *(agent.status((settings or {}).get(agent.name), env=env) for agent in agents())]


for _agent in (CLAUDE_CODE, CODEX, OPENCLAW):
    register(_agent)
