"""The `skillsleep` group's verbs, each imported only when it is used: `skillsleep --help` reads each
verb's one-line help from its command's docstring in the module's source, without importing the
module (and the engine behind it), so the help stays fast and the docstring stays its one source."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Iterator, MutableMapping
from gettext import gettext as _

import click

__all__ = ["VerbGroup", "Verbs"]


class Verbs(MutableMapping[str, click.Command]):
    """The verbs by name, each given as `"module:command"` in skillsleep.slash_commands; looking a verb
    up imports its module."""

    def __init__(self, where: dict[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, attr = self._where[name].split(":")
            command = getattr(importlib.import_module(f"skillsleep.slash_commands.{module}"), attr)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self._where[name]} is not a click command: fix the verb {name!r} in cli.py")
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._where and name not in self._loaded:
            raise KeyError(name)
        self._where.pop(name, None)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._where, *self._loaded]))

    def __len__(self) -> int:
        return len(set(self._where) | set(self._loaded))

    def short_help(self, name: str, limit: int) -> str:
        """The verb's one-line help as click makes it, read from the source unless already imported."""
        if name in self._loaded or name not in self._where:
            return self[name].get_short_help_str(limit)
        module, attr = self._where[name].split(":")
        return click.Command(name, help=_docstring(module, attr)).get_short_help_str(limit)


def _docstring(module: str, function: str) -> str | None:
    """The docstring of a top-level function in a module of skillsleep.slash_commands, from its source."""
    spec = importlib.util.find_spec(f"skillsleep.slash_commands.{module}")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"skillsleep.slash_commands.{module}: fix the verb table in cli.py")
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read(), filename=spec.origin)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return ast.get_docstring(node, clean=False)
    raise LookupError(f"{module}.py has no function {function!r}: fix the verb table in cli.py")


class VerbGroup(click.Group):
    """A click group over `Verbs`: its help lists the verbs without importing them."""

    commands: Verbs

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The Commands section as click writes it, each line from `Verbs.short_help`."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, self.commands.short_help(name, limit)) for name in names]
        with formatter.section(_("Commands")):
            formatter.write_dl(rows)
