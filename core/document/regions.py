"""Where a skill's protected regions are: its marker lines, paired strictly. Pure text, no IO.

A region is one begin marker line and the next marker line, which must be its own end marker:

    <!-- skillsleep:slow-update:begin -->
    ...
    <!-- skillsleep:slow-update:end -->

A marker line is a whole line holding only a marker (spaces around it and inside the comment's
`<!--` `-->` allowed), outside a fenced code block (a marker quoted in a ``` block that closes is
text; a fence that never closes hides nothing). Markers that do not pair up — a begin without its
end, an end without its begin, a region begun inside another, a second region of the same name —
are `problems`, each naming its line; a text with problems has no regions at all: a stray marker
is never widened into a region that would take the user's lines with it (`Skill.region_span`),
and nothing is written into such a text (`Skill.with_region` raises `RegionError`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skillsleep.core.document.sections import in_closed_fences
from skillsleep.core.shared.errors import ConfigError

RegionName = Literal["slow-update", "appendix"]
REGIONS: tuple[RegionName, ...] = ("slow-update", "appendix")

_MARKER = re.compile(r"<!--[ \t]*skillsleep:(slow-update|appendix):(begin|end)[ \t]*-->")


class RegionError(ConfigError):
    """A text's region markers do not pair up; the message names the lines and the fix."""


def begin_marker(name: RegionName) -> str:
    return f"<!-- skillsleep:{name}:begin -->"


def end_marker(name: RegionName) -> str:
    return f"<!-- skillsleep:{name}:end -->"


class MarkerProblem(BaseModel):
    """A marker line that does not pair up: `line` is its index; `other` the begin marker it
    concerns (the region it is inside, or the first region of its name), as (name, index)."""

    model_config = ConfigDict(frozen=True)

    line: int
    kind: Literal["unclosed", "unopened", "nested", "second"]
    name: RegionName
    other: tuple[RegionName, int] | None = None

    def text(self, first_line: int) -> str:
        """`line N: why`, N counted from `first_line` (the number of the line of index 0)."""
        begin, end = f"`{begin_marker(self.name)}`", f"`{end_marker(self.name)}`"
        other = (self.other[0], self.other[1] + first_line) if self.other else ("", 0)
        why = {
            "unclosed": f"{begin} has no {end} after it",
            "unopened": f"{end} ends no {self.name} region begun before it",
            "nested": f"{begin} is inside the {other[0]} region begun on line {other[1]}",
            "second": f"{begin} begins a second {self.name} region (the first begins on line {other[1]})",
        }[self.kind]
        return f"line {self.line + first_line}: {why}"


class Regions(BaseModel):
    """The regions of a list of lines (line indexes of their begin and end markers, 0-based), the
    index of every marker line, and the markers that do not pair up (none when they do)."""

    model_config = ConfigDict(frozen=True)

    spans: dict[RegionName, tuple[int, int]]
    markers: list[int]
    problems: list[MarkerProblem]


def marker(line: str) -> tuple[RegionName, str] | None:
    """(region name, "begin" | "end") of a marker line, or None for any other line."""
    m = _MARKER.fullmatch(line.strip())
    if m is None:
        return None
    name: RegionName = "slow-update" if m.group(1) == "slow-update" else "appendix"
    return name, m.group(2)


def scan(lines: list[str]) -> Regions:
    """Pair the marker lines of `lines` (see the module's docstring)."""
    spans: dict[RegionName, tuple[int, int]] = {}
    markers: list[int] = []
    problems: list[MarkerProblem] = []
    open_at: tuple[RegionName, int] | None = None
    quoted = in_closed_fences(lines)
    for i, line in enumerate(lines):
        found = None if i in quoted else marker(line)
        if found is None:
            continue
        markers.append(i)
        name, edge = found
        if edge == "begin":
            if open_at is not None:
                problems.append(MarkerProblem(line=i, kind="nested", name=name, other=open_at))
            elif name in spans:
                problems.append(MarkerProblem(line=i, kind="second", name=name, other=(name, spans[name][0])))
            open_at = (name, i)
        elif open_at is None or open_at[0] != name:
            problems.append(MarkerProblem(line=i, kind="unopened", name=name))
            open_at = None
        else:
            spans[name] = spans.get(name, (open_at[1], i))
            open_at = None
    if open_at is not None:
        problems.append(MarkerProblem(line=open_at[1], kind="unclosed", name=open_at[0]))
    if problems:
        return Regions(spans={}, markers=markers, problems=sorted(problems, key=lambda p: p.line))
    return Regions(spans=spans, markers=markers, problems=[])


def refusal(source: str, problems: list[str]) -> RegionError:
    """The error for a file whose markers do not pair up: where, and what to do."""
    return RegionError(
        f"{source} has skillsleep region markers that do not pair up ({'; '.join(problems)}). skillsleep "
        "writes each region once, between its begin and end marker lines, and will not guess which lines "
        "belong to it: delete the stray marker lines (or put back the missing one), then run again."
    )
