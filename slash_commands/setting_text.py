"""A `[sleep]` value from the text of an environment variable or a flag, and what each key accepts,
in words, for the errors that name a bad value (slash_commands/wiring.py layers the settings)."""

from __future__ import annotations

import typing
from typing import Literal

import annotated_types

from skillsleep.core.night.user_config import SleepSection

Scalar = bool | int | float | str | list[str]  # bool first: a JSON true stays a bool; a list: `skills`

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def expected(key: str) -> str:
    """What `[sleep] key` accepts, in words: "a whole number ≥ 1", "'on' or 'off'", …"""
    if key == "skills":
        return "'used', 'managed' or skill names separated by commas"
    field = SleepSection.model_fields[key]
    kind = field.annotation
    low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    above = next((m.gt for m in field.metadata if isinstance(m, annotated_types.Gt)), None)
    bound = f" ≥ {low:g}" if low is not None else f" > {above:g}" if above is not None else ""
    if kind is bool:
        return "true or false (also 1/0, yes/no, on/off)"
    if kind is int:
        return f"a whole number{bound}"
    if kind is float:
        return f"a number{bound}"
    choices = typing.get_args(kind) if typing.get_origin(kind) is Literal else named_choices(key)
    if choices:
        return "one of " + ", ".join(repr(c) for c in choices)
    return "a string"


def named_choices(key: str) -> tuple[str, ...]:
    """The values of a text key that the registry knows, not its type: the harness names."""
    if key != "harness":
        return ()
    from skillsleep.harnesses import registry

    return registry.names()


def from_text(key: str, text: str) -> Scalar:
    """The text of an env var (or a string flag) as `[sleep] key`'s type; ValueError when it is not one."""
    kind = SleepSection.model_fields[key].annotation
    if key == "skills":  # "used", "managed", or names: "review-pr,release-notes"
        word = text.strip()
        names = [n.strip() for n in word.split(",")]
        if word in ("used", "managed") or all(names):
            return word if word in ("used", "managed") else names
        raise ValueError(text)
    if kind is bool:
        word = text.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ValueError(text)
    if kind is int:
        return int(text.strip())
    if kind is float:
        return float(text.strip())
    return text


def is_text_typed(key: str) -> bool:
    kind = SleepSection.model_fields[key].annotation
    return kind is str or typing.get_origin(kind) is Literal
