"""How text is shown: untrusted text (a model's words, a transcript's, a user's file), and counts.

    md_line(x)      one line of markdown an agent renders: markup, links and table breaks escaped
    plain_line(x)   one line for a person at a terminal: the text as it is, no escapes
    visible(text)   many lines (a diff, an error message): the line breaks and tabs kept
    fence(text)     a code fence longer than any run of backticks in `text`
    counted(n, noun)  a count with its noun in the right number: "1 call", "2 calls"

In the first three, control characters are shown as visible symbols (ESC as ␛, CR as ␍, a C1 or a
bidirectional control as <U+…>), so untrusted text can never send an escape sequence to a
terminal, retitle its window, or reorder what is shown.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`|\[\]]|<(?=[A-Za-z/!?]))")  # `<` only where it would open a tag or autolink


def _symbol(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␛ ␍ ␇ …
    return "\u2421" if code == 0x7F else f"<U+{code:04X}>"


def visible(text: str) -> str:
    """`text` with every control character but the line feed and the tab shown as a symbol."""
    return _CONTROL.sub(_symbol, text)


def plain_line(text: object) -> str:
    """Untrusted text as one plain line (whitespace runs, line breaks included, become one space)."""
    return visible(" ".join(str(text).split()))


def md_line(text: object) -> str:
    """Untrusted text as one line of markdown that cannot become markup, a link or a table cell break."""
    return _MD_SPECIAL.sub(r"\\\1", plain_line(text))


def fence(text: str) -> str:
    """A markdown code fence that `text` cannot close: longer than any run of backticks in it."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    return "`" * max(3, max(runs, default=0) + 1)


def counted(n: int, noun: str, plural: str = "") -> str:
    """`n` (thousands separated) and `noun`, plural unless `n` is 1 (`plural`, else `noun` + "s")."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
