"""Lines of a skill as a reader sees them: their list style, and when two of them say the same.

A new line should read like the lines around it: `in_style` gives it the list marker of its
neighbours (`- `, `* `, `+ ` or the next number of a numbered list) or takes a marker away where
they are plain. Two lines say the same when their `key` is equal: the text without its list
marker, with whitespace collapsed, case folded and a final full stop dropped. Lines that carry no
words (blank lines, fences, `---`) and lines inside fenced code never count as duplicates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from skillsleep.core.document.skill import RegionName, Skill

_MARKER = re.compile(r"^(?P<indent>\s*)(?:(?P<bullet>[-*+])|(?P<number>\d+)(?P<close>[.)]))(?P<space>\s+)")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_WORD = re.compile(r"\w")

__all__ = ["countable_lines", "in_style", "key", "neighbours", "repeated", "unstated"]


def key(line: str) -> str:
    """What a line says, for comparison: no list marker, whitespace collapsed, case folded, no final '.'."""
    return " ".join(_MARKER.sub("", line, count=1).split()).casefold().rstrip(".").rstrip()


def countable_lines(lines: Sequence[str]) -> list[int]:
    """Indexes of the lines that may not repeat: lines with words, outside fenced code."""
    out: list[int] = []
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and _WORD.search(line):
            out.append(i)
    return out


def repeated(lines: Sequence[str]) -> list[str]:
    """The lines (as written, first occurrence) whose key an earlier countable line already has."""
    seen: set[str] = set()
    out: list[str] = []
    for i in countable_lines(lines):
        k = key(lines[i])
        if k in seen:
            out.append(lines[i].strip())
        seen.add(k)
    return out


def in_style(new: list[str], before: str | None, after: str | None) -> list[str]:
    """`new` restyled like its neighbours (the nearest lines `before` and `after` where it goes, None
    when there is none): the list marker of the one before when it is a list item, else of the one
    after (a numbered list goes on from the number before, or starts at the number after), or no
    marker when the neighbours are plain. Content with fenced code or indented lines, or with no
    neighbour to follow, is kept as it is."""
    if (before is None and after is None) or any(_FENCE.match(line) or line[:1].isspace() for line in new):
        return new
    style = _MARKER.match(before or "") or _MARKER.match(after or "")
    number = 0
    if style is not None and style.group("number"):
        number = int(style.group("number")) + (1 if style.string == before else 0)
    out: list[str] = []
    for line in new:
        text = _MARKER.sub("", line, count=1).strip()
        if not text or style is None:
            out.append(text)
        elif style.group("bullet"):
            out.append(f"{style.group('indent')}{style.group('bullet')}{style.group('space')}{text}")
        else:
            out.append(f"{style.group('indent')}{number}{style.group('close')}{style.group('space')}{text}")
            number += 1
    return out


def neighbours(lines: Sequence[str], at: int, skip: set[int]) -> tuple[str | None, str | None]:
    """The nearest non-blank line before index `at` and the nearest at or after it, each within the
    section (a heading ends the search) and outside `skip` (protected lines), or None."""
    found: list[str | None] = []
    for indexes in (range(at - 1, -1, -1), range(at, len(lines))):
        found.append(None)
        for i in indexes:
            if i in skip or _HEADING.match(lines[i]):
                break
            if lines[i].strip():
                found[-1] = lines[i]
                break
    return found[0], found[1]


def unstated(skill: Skill, lines: str, *, region: RegionName) -> str:
    """`lines` (the new content of `region`) without the lines the rest of `skill` already states."""
    span = skill.region_span(region)
    body = skill.body.split("\n")
    others = [line for i, line in enumerate(body) if span is None or not span[0] <= i <= span[1]]
    stated = {key(others[i]) for i in countable_lines(others)}
    return "\n".join(line for line in lines.split("\n") if not line.strip() or key(line) not in stated)
