"""What a secret's value looks like (placeholders, code expressions, generated strings), and the
shape of one redaction rule."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

# --- what a value must look like -----------------------------------------------------------------

_STOP_VALUES = frozenset(
    [
        "true",
        "false",
        "null",
        "none",
        "nil",
        "yes",
        "no",
        "on",
        "off",
        "undefined",
        "required",
        "optional",
        "str",
        "string",
        "bytes",
        "int",
        "integer",
        "number",
        "bool",
        "boolean",
        "any",
        "object",
        "secretstr",
        "bearer",
        "basic",
        "token",
        "digest",
    ]
)
_PLACEHOLDER = re.compile(
    r"\[[^\]]*\]|\$\{[^}]*\}?|\$\(.*|\$[A-Za-z_]\w*|<[^<>]*>|\{\{.*\}\}|%[A-Za-z_]\w*%|[*xX•.#_-]{3,}|\.\.\.|…"
)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def placeholder(value: str) -> bool:
    v = value.strip().strip("\"'`")
    return not v or v.lower() in _STOP_VALUES or _PLACEHOLDER.fullmatch(v) is not None


def code_like(value: str, name: str) -> bool:
    """An expression rather than a literal: `os.environ["X"]`, `get_token()`, `self.password`."""
    return (
        "(" in value or "[" in value or value.startswith("{") or _DOTTED.fullmatch(value) is not None or value == name
    )


def random_enough(value: str, min_len: int) -> bool:
    """Looks generated rather than a word: long enough, letters and digits or mixed case."""
    if len(value) < min_len or value.startswith(("/", "./", "~", "$")) or "://" in value:
        return False
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() for c in value)
    return ((lower or upper) and digit) or (lower and upper and symbol and len(value) >= 12)


@dataclass(frozen=True)
class Rule:
    """One regex rule: `group` of each match is replaced unless `check` rejects the value.

    Patterns start with a literal where they can: the regex engine then jumps from one occurrence
    to the next (a case-insensitive regex or a leading alternation is ten times slower, hence
    `fold`: search the lower-cased text instead)."""

    kind: str
    gate: str  # a literal every match contains: a text without it is never searched
    pattern: re.Pattern[str]
    fallback: re.Pattern[str]  # the same pattern, case-insensitive, for texts whose lower() changes length
    group: int = 0
    boundary: frozenset[str] = ALNUM  # the match must not follow one of these characters
    check: Callable[[str], bool] | None = None
    fold: bool = False  # gate and pattern are lower case and run over the lower-cased text
    gate_is_regex: bool = False  # the gate is a regex (for formats with no literal of their own)


def rule(
    kind: str,
    prefix: str,
    rest: str,
    *,
    gate: str = "",
    group: int = 0,
    boundary: frozenset[str] = ALNUM,
    check: Callable[[str], bool] | None = None,
    fold: bool = False,
    gate_regex: str = "",
) -> Rule:
    """A rule matching the literal `prefix` then the regex `rest`, run when `gate` (default: the
    prefix) occurs in the text."""
    pattern = re.escape(prefix) + rest
    compiled, fallback = re.compile(pattern), re.compile(pattern, re.IGNORECASE)
    if gate_regex:
        return Rule(kind, gate_regex, compiled, fallback, group, boundary, check, fold, gate_is_regex=True)
    return Rule(kind, gate or prefix, compiled, fallback, group, boundary, check, fold)
