"""Plugins: what the entry points of a group name, registered the way built-ins are.

An entry point names either one thing to register (a backend class, an agent) or a hook that is
called with the `register` function and registers any number of them. A plugin that fails to
load, or names neither, is a ConfigError that names it: never a bare traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any

from skillsleep.core.shared.errors import ConfigError

__all__ = ["PluginKind", "register_plugins"]


@dataclass(frozen=True)
class PluginKind:
    """What a registry's plugins are: `kind` words the plugin ("backend"), `item` what an entry point
    may name besides a hook ("a backend class"), `is_item` tells the two apart."""

    kind: str
    item: str
    is_item: Callable[[Any], bool]


def register_plugins(found: Iterable[EntryPoint], plugins: PluginKind, register: Callable[..., None]) -> None:
    """Register what each entry point of `found` names, as `plugins` describes them."""
    kind, item = plugins.kind, plugins.item
    for ep in found:
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin: name it instead of a bare traceback
            raise ConfigError(
                f"the {kind} plugin {ep.name!r} ({ep.value}) failed to load: {exc}; fix or uninstall it"
            ) from exc
        if plugins.is_item(obj):
            register(obj)
        elif callable(obj):
            obj(register)
        else:
            raise ConfigError(f"the {kind} plugin {ep.name!r} ({ep.value}) is neither {item} nor a hook")
