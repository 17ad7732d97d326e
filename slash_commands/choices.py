"""Flags whose values or help name harnesses or providers: the names come from the registries
(harnesses/registry.py; core/models/backends/builtin.py, which loads no backend) when a command
line is read or its help shown, so importing the CLI loads no agent and no backend.

    Names        a choice among the names (`run --harness`)
    NamesMetavar any text, shown in the help as the names (`install [claude-code|codex|…|all]...`)
    NamesHelp    an option whose help text names them (`eval --harness`, `run --backend`)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

__all__ = [
    "Names",
    "NamesHelp",
    "NamesMetavar",
    "agents_or_all",
    "agents_then_chat",
    "harnesses",
    "hook_agents",
    "providers",
]


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


class NamesMetavar(click.ParamType[str]):
    """Any text (the command checks it), shown in the help as `[a|b|c]` of the names `names()` lists."""

    name = "text"

    def __init__(self, names: Callable[[], Sequence[str]]) -> None:
        self._names = names

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "[" + "|".join(self._names()) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(value)


class NamesHelp(click.Option):
    """An option whose help names what `names()` lists where its help text says `{names}`
    ("a, b, c or d"), asked each time the help is read."""

    def __init__(self, *args: Any, names: Callable[[], Sequence[str]], **kwargs: Any) -> None:
        self._names = names
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str | None:
        return self._help.format(names=one_of(self._names())) if self._help else self._help

    @help.setter
    def help(self, text: str | None) -> None:
        self._help = text


def one_of(names: Sequence[str]) -> str:
    """ "a, b, c or d"."""
    return " or ".join(filter(None, [", ".join(names[:-1]), *names[-1:]]))


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


def agents_or_all() -> tuple[str, ...]:
    """What `install` and `uninstall` take: the agents, or `all`."""
    from skillsleep.harnesses import registry

    return (*registry.agent_names(), "all")


def providers() -> tuple[str, ...]:
    """The built-in model providers and the agents that are one (names only: no backend is loaded)."""
    from skillsleep.core.models.backends.builtin import BUILT_IN
    from skillsleep.harnesses.providers import provider_names

    return (*BUILT_IN, *provider_names())
