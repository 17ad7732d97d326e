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

from skillsleep.core.document.regions import REGIONS, RegionName, begin_marker, end_marker, refusal, scan

__all__ = ["REGIONS", "RegionName", "Skill", "begin_marker", "end_marker", "frontmatter_value"]

_TITLE_TEXTS: dict[RegionName, str] = {"slow-update": "Guidance from earlier epochs", "appendix": "Reminders"}
_TITLE_LEVEL = 2  # a region's title in a whole file: `## Guidance from earlier epochs`


def _title_match(line: str, name: RegionName) -> re.Match[str] | None:
    """A region's title line as written: a heading of any level (`### Reminders`) or bold text
    (`**Reminders**`, in a section too deep for a heading below it)."""
    text = re.escape(_TITLE_TEXTS[name])
    return re.fullmatch(rf"[ ]{{0,3}}(#{{1,6}})[ \t]+{text}[ \t]*|\*\*{text}\*\*[ \t]*", line)


def _title(name: RegionName, level: int) -> str:
    return f"{'#' * level} {_TITLE_TEXTS[name]}" if level <= 6 else f"**{_TITLE_TEXTS[name]}**"


def frontmatter_value(frontmatter: str, key: str) -> str | None:
    """The value of `key:` in a skill's frontmatter block (quotes stripped), or None."""
    m = re.search(rf"^{re.escape(key)}:[ \t]*(.*?)[ \t]*$", frontmatter, re.M)
    return m.group(1).strip().strip("\"'") if m else None


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

    def _lines(self) -> list[str]:
        return self.body.split("\n")

    def region_problems(self, first_line: int = 1) -> list[str]:
        """Why the region markers do not pair up (`line N: …`, N counted from `first_line` for the
        text's first line, frontmatter included); empty when they do."""
        offset = first_line + self.frontmatter.count("\n")
        return [p.text(offset) for p in scan(self._lines()).problems]

    def check_regions(self, source: str, first_line: int = 1) -> None:
        """Raise `RegionError` naming `source` and the lines when the region markers do not pair up."""
        problems = self.region_problems(first_line)
        if problems:
            raise refusal(source, problems)

    def region_span(self, name: RegionName) -> tuple[int, int] | None:
        """Body line indexes (begin marker, end marker) of a region, or None when absent — or when
        the markers do not pair up (`regions.scan`): a stray marker never makes a region."""
        return scan(self._lines()).spans.get(name)

    def region(self, name: RegionName) -> str:
        """Content of a protected region ('' when absent), without its title line."""
        span = self.region_span(name)
        if span is None:
            return ""
        inner = self._lines()[span[0] + 1 : span[1]]
        if inner and _title_match(inner[0], name):
            inner = inner[1:]
        return "\n".join(inner).strip("\n")

    def with_region(self, name: RegionName, content: str) -> Skill:
        """A copy whose region `name` holds `content`: updated in place (its title line kept as
        written), or appended after the last non-blank line (the body's trailing blank lines stay
        after it). A text whose markers do not pair up is refused (`RegionError`), never widened."""
        self.check_regions("the skill")
        lines = self._lines()
        new = content.strip("\n").split("\n") if content.strip() else []
        span = self.region_span(name)
        if span is not None:
            inner = lines[span[0] + 1 : span[1]]
            title = inner[0] if inner and _title_match(inner[0], name) else _title(name, _TITLE_LEVEL)
            lines[span[0] + 1 : span[1]] = [title, *new]
            return Skill(self.frontmatter + "\n".join(lines))
        body = self.body.rstrip("\n")
        trailing = self.body[len(body) :] or "\n"
        block = [begin_marker(name), _title(name, _TITLE_LEVEL), *new, end_marker(name)]
        sep = "\n\n" if body else ""
        return Skill(self.frontmatter + body + sep + "\n".join(block) + trailing)

    def with_titles_below(self, level: int) -> Skill:
        """A copy whose region titles are headings deeper than `level` (bold text below `######`),
        so that a region written into a section of that level stays inside it."""
        lines = self._lines()
        for name, (start, end) in scan(lines).spans.items():
            found = _title_match(lines[start + 1], name) if start + 1 < end else None
            if found is not None and found.group(1) is not None and len(found.group(1)) <= level:
                lines[start + 1] = _title(name, level + 1)
        return Skill(self.frontmatter + "\n".join(lines))

    def frontmatter_lines(self) -> list[str]:
        """The frontmatter's lines between its `---` fences (none when there is no frontmatter)."""
        return self.frontmatter.split("\n")[1:-2]

    def frontmatter_index(self, line: str) -> int | None:
        """Index in `frontmatter_lines()` of the one line equal to `line` (trailing spaces aside)."""
        found = [i for i, own in enumerate(self.frontmatter_lines()) if line and own.rstrip() == line.rstrip()]
        return found[0] if len(found) == 1 else None

    def with_frontmatter_line(self, index: int, line: str | None) -> Skill:
        """A copy whose frontmatter line `index` is `line`, or deleted when `line` is None."""
        inner = self.frontmatter_lines()
        inner[index : index + 1] = [] if line is None else [line]
        front = self.frontmatter.split("\n")
        return Skill("\n".join([front[0], *inner, *front[-2:]]) + self.body)

    def protected_line_indexes(self) -> set[int]:
        """Body line indexes inside (and including the markers of) any protected region."""
        regions = scan(self._lines())
        out = set(regions.markers)  # a stray marker line is never edited either
        for start, end in regions.spans.values():
            out.update(range(start, end + 1))
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
