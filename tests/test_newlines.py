"""core/document/newlines.py: a trained (LF) text gets the live file's bytes back on every line it left alone."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from skillsleep.core.document.newlines import BOM, endings_note, restore, split_lines, style

_line = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)
_ending = st.sampled_from(["\n", "\r\n", "\r"])
_file = st.builds(
    lambda bom, body, last: (BOM if bom else "") + "".join(text + end for text, end in body) + last,
    st.booleans(),
    st.lists(st.tuples(_line, _ending), max_size=8),
    _line,
)


def lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


@given(_file)
def test_an_unedited_text_gets_the_file_back_byte_for_byte(base: str) -> None:
    assert restore(base, lf(base)) == base
    assert restore(base, base) == base


@given(_file, st.integers(min_value=0, max_value=20), _line)
def test_an_added_line_changes_no_other_line(base: str, where: int, added: str) -> None:
    original = split_lines(base.removeprefix(BOM))
    assume(original)  # an empty file is a new one: nothing to keep
    bare = [line.rstrip("\r\n") for line in original]
    where = min(where, len(bare))
    marker = "ADDED " + added
    mark = BOM if base.startswith(BOM) else ""  # the trained text starts as the file does
    out = restore(base, mark + "\n".join([*bare[:where], marker, *bare[where:]]) + "\n")
    assert out.startswith(BOM) == base.startswith(BOM)
    kept = [line for line in split_lines(out.removeprefix(BOM)) if not line.startswith(marker)]
    assert [line.rstrip("\r\n") for line in kept] == bare
    # every line keeps its own ending, except that a last line without one gains one when a
    # line is added after it; the file's final newline (or its absence) stays
    assert all(a == b for a, b in zip(kept, original, strict=True) if b.endswith(("\n", "\r")))
    assert out.endswith(("\n", "\r")) == base.endswith(("\n", "\r"))


def test_examples() -> None:
    crlf = "a\r\nb\r\n"
    assert restore(crlf, "a\nx\nb\n") == "a\r\nx\r\nb\r\n"
    assert restore("a\r\nb\nc\r\n", "a\nb\nc\nd\n") == "a\r\nb\nc\r\nd\r\n"  # the usual ending: CRLF
    assert restore("a\nb", "a\nb\nc\n") == "a\nb\nc"  # still no final newline
    assert restore(BOM + "a\r\n", "z\n") == BOM + "z\r\n"  # the BOM stays when the first line changes
    assert restore("a\nb\n", "b\n") == "b\n"
    assert restore("", "new\n") == "new\n"
    assert style("a\r\nb\r\n") == "CRLF" and style("a\nb\r\n") == "mixed" and style("a") == "none"
    assert endings_note("CRLF", "LF", "the live file", "the proposal") == (
        "line endings differ: the live file has CRLF, the proposal LF"
    )
    assert endings_note("LF", "LF", "x", "y") == "" == endings_note("none", "LF", "x", "y")
