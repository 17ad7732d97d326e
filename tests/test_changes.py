"""core/report/changes.py: the numbered changes of a proposal, a chosen subset applied byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillsleep.core.report.changes import apply, changes, parse_numbers, render
from skillsleep.core.shared.errors import ConfigError

BASE = "---\nname: fmt\n---\n- one\n- two\n- three\n- four\n"
# replace line two, add a line after three: two edits a line apart are two changes
CAND = "---\nname: fmt\n---\n- one\n- TWO\n- three\n- three and a half\n- four\n"


def test_two_edits_a_line_apart_are_two_numbered_changes() -> None:
    found = changes(BASE, CAND)
    assert [(c.number, c.removed, c.added) for c in found] == [
        (1, ["- two\n"], ["- TWO\n"]),
        (2, [], ["- three and a half\n"]),
    ]
    assert found[0].before == ["---\n", "- one\n"] and found[0].after == ["- three\n"]  # never the next change's lines
    assert found[1].before == ["- three\n"] and found[1].after == ["- four\n"]
    assert apply(BASE, CAND, [1]) == BASE.replace("- two", "- TWO")
    assert apply(BASE, CAND, [2]) == BASE.replace("- three\n", "- three\n- three and a half\n")
    assert apply(BASE, CAND, [1, 2]) == CAND and apply(BASE, CAND, []) == BASE


def test_the_rendering_is_a_diff_with_one_hunk_per_change() -> None:
    text = render(changes(BASE, CAND), "a/SKILL.md", "b/SKILL.md")
    assert text == (
        "--- a/SKILL.md\n+++ b/SKILL.md\n"
        "@@ -3,4 +3,4 @@ change 1\n ---\n - one\n-- two\n+- TWO\n - three\n"
        "@@ -6,2 +6,3 @@ change 2\n - three\n+- three and a half\n - four\n"
    )
    assert render([], "a", "b") == ""


def test_line_endings_a_bom_and_a_missing_final_newline_are_kept() -> None:
    base = "\ufeff- one\r\n- two\r\n- three"
    cand = "\ufeff- one\r\n- new\r\n- two\r\n- three\r\n- four"
    found = changes(base, cand)
    assert len(found) == 2
    assert apply(base, cand, [1]) == "\ufeff- one\r\n- new\r\n- two\r\n- three"
    assert apply(base, cand, [2]) == "\ufeff- one\r\n- two\r\n- three\r\n- four"
    text = render(found, "a", "b")
    assert "-- three\n\\ No newline at end of file\n+- three\r\n+- four\n\\ No newline at end of file\n" in text


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\r\n", "d", "\n"]), max_size=12)


@given(lines, lines, st.data())
def test_any_subset_applies_and_all_of_them_give_the_candidate(
    old: list[str], new: list[str], data: st.DataObject
) -> None:
    base, cand = "".join(old), "".join(new)
    found = changes(base, cand)
    assert [c.number for c in found] == list(range(1, len(found) + 1))
    assert apply(base, cand, range(1, len(found) + 1)) == cand and apply(base, cand, []) == base
    a, b = base.splitlines(keepends=True), cand.splitlines(keepends=True)
    for c in found:  # each change says truly what it removes from the base and adds from the candidate
        assert (
            a[c.start : c.start + len(c.removed)] == c.removed
            and b[c.new_start : c.new_start + len(c.added)] == c.added
        )
    chosen = data.draw(st.sets(st.sampled_from([c.number for c in found]))) if found else set()
    expected, at = [], 0
    for c in found:
        expected += a[at : c.start] + (c.added if c.number in chosen else c.removed)
        at = c.start + len(c.removed)
    assert apply(base, cand, chosen) == "".join(expected + a[at:])


@pytest.mark.parametrize(
    "spec, words",
    [
        ("0", "there is no change 0"),
        ("4", "there is no change 4"),
        ("1,1", "names a change twice"),
        ("a,b", "is not a list of change numbers"),
        ("", "is not a list of change numbers"),
        ("1,,2", "is not a list of change numbers"),
        ("-1", "is not a list of change numbers"),
    ],
)
def test_bad_numbers_name_the_valid_ones(spec: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as err:
        parse_numbers(spec, 3)
    assert "numbered 1 to 3 as `diff` shows them" in str(err.value)


def test_numbers_are_read_with_spaces_and_sorted() -> None:
    assert parse_numbers(" 3, 1 ", 3) == [1, 3]
    with pytest.raises(ConfigError, match="has no changes"):
        parse_numbers("1", 0)
