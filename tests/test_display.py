"""core/shared/display.py: untrusted text as one markdown line, one plain line, or visible lines."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from skillsleep.core.shared.display import md_line, plain_line, visible


def _controls(text: str) -> list[str]:
    return [
        c for c in text if unicodedata.category(c) == "Cc" or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069
    ]


@given(st.text())
def test_no_control_character_survives_and_a_line_stays_one_line(text: str) -> None:
    for line in (plain_line(text), md_line(text)):
        assert _controls(line) == [] and "\n" not in line
    shown = visible(text)
    assert [c for c in _controls(shown) if c not in "\n\t"] == [] and shown.count("\n") == text.count("\n")


def test_examples() -> None:
    text = "a [link](http://x) `code` | cell\r\n\x1b[31mred\x1b[0m \x9b \u202eevil"
    assert plain_line(text) == "a [link](http://x) `code` | cell ␛[31mred␛[0m <U+009B> <U+202E>evil"
    assert md_line(text) == r"a \[link\](http://x) \`code\` \| cell ␛\[31mred␛\[0m \<U+009B> \<U+202E>evil"
    assert visible("x\r\ny\tz\x07") == "x␍\ny\tz␇"
