"""What a secret's value looks like (placeholders, code expressions, generated strings), and the
shape of one redaction rule."""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
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
        "foo",
        "bar",
        "baz",
        "example",
        "changeme",
        "changeit",
    ]
)
_PLACEHOLDER = re.compile(
    r"\[[^\]]*\]|\{[A-Za-z_][\w.]*\}|[A-Z][A-Z_]*_[A-Z]+|\$\{[^}]*\}?|\$\(.*|\$[A-Za-z_]\w*|<[^<>]*>|\{\{.*\}\}|%[A-Za-z_]\w*%|[*xX•.#_-]{3,}|\.\.\.|…"
)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


# a run of one filler character: `ghp_xxxx…`, `AKIAXXXX…`, `####`; no generated token holds one
FILLER = re.compile(r"([xX*#•])\1{5}")


def placeholder(value: str) -> bool:
    v = value.strip().strip("\"'`")
    if not v or v.lower() in _STOP_VALUES or v.endswith(("EXAMPLE", "EXAMPLEKEY")):  # AWS's documented keys
        return True
    return _PLACEHOLDER.fullmatch(v) is not None or FILLER.search(v) is not None


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


# --- a generated token standing alone on a line of tool output ------------------------------------

# the whole line is one token (quotes and a trailing comma allowed): `cat credentials` prints this
STANDALONE = re.compile(r"^[ \t]*[\"'`]?([A-Za-z0-9+/=_~.-]{24,512})[\"'`]?[ \t,;]*$", re.MULTILINE)
STANDALONE_GATE = r"(?:^|\n)[ \t]*[\"'`]?[A-Za-z0-9+/=_~.-]{24,}[\"'`]?[ \t,;]*(?:\n|$)"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TYPED_ID = re.compile(r"[a-z]{2,12}(?:[_-][a-z]{2,12})?[_-]")  # msg_01…, req_…, toolu_…: an id with its type


# armoured blocks that hold no secret: their base64 lines are not tokens standing alone
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN (?:[A-Z0-9 ]*PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?|PGP (?:MESSAGE|SIGNATURE)|X509 CRL)-----"
    # its lines: base64, `Header: value` or blank, up to the END line or, cut off, the first other line
    r"[ \t]*\n(?:[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\n]*)?[ \t]*\n)*"
)


def public_blocks(s: str) -> list[tuple[int, int]]:
    """The spans of `s` that a public key, a certificate, a PGP message or signature fills."""
    return [m.span() for m in _PUBLIC_BLOCK.finditer(s)] if "-----BEGIN " in s else []


def _entropy(v: str) -> float:
    n = len(v)
    return -sum(k / n * math.log2(k / n) for k in Counter(v).values())


def _base64_of_text(v: str) -> bool:
    """Base64 (standard or URL-safe) that decodes to mostly printable text: encoded prose, not a key."""
    body = v.rstrip("=")
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if "-" in v or "_" in v else None)
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= 12 and sum(32 <= b < 127 or b in (9, 10, 13) for b in raw) / len(raw) > 0.85


def looks_generated(v: str) -> bool:
    """A random token rather than a hash (hex), a UUID, a typed id (`msg_01…`), base64 of text, a path
    or an identifier: mixed case and digits, and close to the entropy of random characters."""
    if _UUID.search(v) or _TYPED_ID.match(v) or v.count("/") > 2 or "=" in v.rstrip("="):  # `=`: padding, or a setting
        return False
    lower, upper, digits = (sum(map(f, v)) for f in (str.islower, str.isupper, str.isdigit))
    if lower < 2 or upper < 2 or digits < 2 or _entropy(v) < 0.85 * math.log2(len(v)):
        return False
    return not _base64_of_text(v)
