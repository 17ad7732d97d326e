"""The skill document: optional YAML frontmatter, a markdown body, and protected regions.

Protected regions are written only at epoch boundaries (slow-update guidance) or for
execution-lapse notes (the appendix); step edits never touch them:

    <!-- skillsleep:slow-update:begin -->
    ...guidance...
    <!-- skillsleep:slow-update:end -->
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

RegionName = Literal["slow-update", "appendix"]
REGIONS: tuple[RegionName, ...] = ("slow-update", "appendix")
_REGION_TITLES = {"slow-update": "## Guidance from earlier epochs", "appendix": "## Reminders"}


def begin_marker(name: RegionName) -> str:
    return f"<!-- skillsleep:{name}:begin -->"


def end_marker(name: RegionName) -> str:
    return f"<!-- skillsleep:{name}:end -->"


_FRONTMATTER = re.compile(r"\A---[ \t]*\n(?:.*?\n)?---[ \t]*(?:\n|\Z)", re.S)


class Skill:
    """An immutable skill document; every change returns a new `Skill`."""

    __slots__ = ("body", "frontmatter", "text")

    def __init__(self, text: str) -> None:
        self.text = text if text.endswith("\n") or not text else text + "\n"
        match = _FRONTMATTER.match(self.text)
        self.frontmatter = match.group(0) if match else ""
        self.body = self.text[len(self.frontmatter) :]

    @classmethod
    def parse(cls, text: str) -> Skill:
        return cls(text.replace("\r\n", "\n"))

    @property
    def hash(self) -> str:
        """Content hash (16 hex digits), the key of gate scores and rollouts."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Skill) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Skill({self.hash}, {len(self.text)} chars)"

    def region_span(self, name: RegionName) -> tuple[int, int] | None:
        """Body line indexes (begin marker, end marker) of a region, or None when absent."""
        lines = self.body.split("\n")
        try:
            start = lines.index(begin_marker(name))
            end = lines.index(end_marker(name), start + 1)
        except ValueError:
            return None
        return start, end

    def region(self, name: RegionName) -> str:
        """Content of a protected region ('' when absent)."""
        span = self.region_span(name)
        if span is None:
            return ""
        inner = self.body.split("\n")[span[0] + 1 : span[1]]
        if inner and inner[0] == _REGION_TITLES[name]:
            inner = inner[1:]
        return "\n".join(inner).strip("\n")

    def with_region(self, name: RegionName, content: str) -> Skill:
        """A copy whose region `name` holds `content` (the region is appended when absent)."""
        lines = self.body.split("\n")
        inner = [_REGION_TITLES[name], *(content.strip("\n").split("\n") if content.strip() else [])]
        span = self.region_span(name)
        if span is not None:
            lines[span[0] + 1 : span[1]] = inner
            return Skill(self.frontmatter + "\n".join(lines))
        body = self.body.rstrip("\n")
        block = [begin_marker(name), *inner, end_marker(name)]
        sep = "\n\n" if body else ""
        return Skill(self.frontmatter + body + sep + "\n".join(block) + "\n")

    def protected_line_indexes(self) -> set[int]:
        """Body line indexes inside (and including the markers of) any protected region."""
        out: set[int] = set()
        for name in REGIONS:
            span = self.region_span(name)
            if span is not None:
                out.update(range(span[0], span[1] + 1))
        return out

    def editable_lines(self) -> list[str]:
        """Body lines that step edits may touch (outside protected regions)."""
        protected = self.protected_line_indexes()
        return [line for i, line in enumerate(self.body.split("\n")) if i not in protected]

    def without_regions(self) -> Skill:
        """The document with its protected region content dropped (markers kept out too)."""
        lines = self.body.split("\n")
        protected = self.protected_line_indexes()
        return Skill(self.frontmatter + "\n".join(line for i, line in enumerate(lines) if i not in protected))
