"""Flags whose values are harness names: the names come from the registry (harnesses/registry.py)
when a command line is read or its help shown, so importing the CLI loads no agent."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

__all__ = ["Names", "agents_then_chat", "harnesses", "hook_agents"]


class Names(click.Choice[str]):
    """A `click.Choice` of names asked of `names()` each time they are needed."""

    def __init__(self, names: Callable[[], Sequence[str]]) -> None:
        self._names = names
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self._names())

    @choices.setter
    def choices(self, value: tuple[str, ...]) -> None:
        """Nothing to set: the registry holds the names (click's own `__init__` would set them)."""


def harnesses() -> tuple[str, ...]:
    """Every harness: `chat`, then the agents."""
    from skillsleep.harnesses import registry

    return registry.names()


def agents_then_chat() -> tuple[str, ...]:
    """Every harness with transcripts to harvest: the agents, then `chat` (its logs)."""
    from skillsleep.harnesses import registry

    return (*registry.agent_names(), registry.CHAT)


def hook_agents() -> tuple[str, ...]:
    """The agents that run `skillsleep harvest --hook <name>` when a session ends."""
    from skillsleep.harnesses import registry

    return tuple(a.name for a in registry.agents() if a.hook)
