"""One section of a markdown file (an `AGENTS.md` section) as the text a night trains.

A section is an ATX heading (`#` … `######`) and its body: the lines after the heading up to
the next heading of the same or a higher level (as many `#`'s or fewer), or the end of the
file. Headings inside fenced code blocks (``` or ~~~) do not count. Pure text, no IO.

`replace_section` changes only that body: every other byte of the file — line endings, a
missing final newline — stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from skillsleep.core.document.newlines import first_ending, split_lines
from skillsleep.core.shared.errors import ConfigError

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*")
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")  # an ATX heading's optional closing #'s
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_NEWLINE = re.compile(r"\r\n|\r|\n")


class Section(BaseModel):
    """Where one section sits in a text. Line indexes are 0-based; the body is lines
    `start` .. `end - 1` (`start == end` for an empty body)."""

    model_config = ConfigDict(frozen=True)

    heading: str  # the heading line as written, without its line ending
    title: str  # the heading's text (no #'s, whitespace collapsed)
    level: int  # 1 for `#`, 6 for `######`
    line: int  # index of the heading line
    start: int  # first body line
    end: int  # one past the last body line
    body: str  # the body text, line endings as in the file


def _title(raw: str) -> str:
    return " ".join(_CLOSING.sub("", raw.strip()).split())


def _key(title: str) -> str:
    return title.casefold()


def headings(text: str) -> list[tuple[int, int, str]]:
    """Every ATX heading outside fenced code blocks: (line index, level, title)."""
    out: list[tuple[int, int, str]] = []
    for i, bare in _outside_fences(text)[0]:
        m = _ATX.fullmatch(bare)
        if m:
            out.append((i, len(m.group(1)), _title(m.group(2) or "")))
    return out


def unclosed_fence(text: str) -> bool:
    """Whether a fenced code block (``` or ~~~) opened in `text` is still open at its end."""
    return _outside_fences(text)[1]


def _outside_fences(text: str) -> tuple[list[tuple[int, str]], bool]:
    bare = [line.rstrip("\r\n") for line in split_lines(text.removeprefix("\ufeff"))]  # a byte order mark is no text
    return outside_fences(bare)


def outside_fences(lines: Sequence[str]) -> tuple[list[tuple[int, str]], bool]:
    """The lines (without their endings) outside fenced code blocks, as (index, text), fence lines
    left out, and whether a fence is left open at the end."""
    opener, still_open = _fence_openers(lines)
    return [(i, bare) for i, bare in enumerate(lines) if opener[i] is None], still_open is not None


def in_closed_fences(lines: Sequence[str]) -> set[int]:
    """Indexes of the lines of fenced code blocks that close (fence lines included); a fence left
    open at the end counts for nothing here."""
    opener, still_open = _fence_openers(lines)
    return {i for i, o in enumerate(opener) if o is not None and o != still_open}


def _fence_openers(lines: Sequence[str]) -> tuple[list[int | None], int | None]:
    """For each line, the index of the fence line that opened the code block it is part of (the
    opening and closing fence lines included) or None outside code blocks; and the index of the
    fence left open at the end (None when every fence closes)."""
    out: list[int | None] = []
    at: int | None = None
    for i, bare in enumerate(lines):
        if at is not None:
            out.append(at)
            if _closes(bare, lines[at]):
                at = None
            continue
        if _FENCE.match(bare):
            at = i
        out.append(at)
    return out, at


def _closes(bare: str, opening: str) -> bool:
    """Whether `bare` closes the code block opened by the fence line `opening`."""
    m = _FENCE.match(opening)
    fence = m.group(1) if m else "```"
    stripped = bare.strip()
    return len(bare) - len(bare.lstrip(" ")) < 4 and stripped.startswith(fence) and stripped == fence[0] * len(stripped)


def _wanted(heading: str) -> tuple[str, int | None]:
    """The title asked for and the level its leading #'s name (None without #'s)."""
    m = re.match(r"\s*(#{1,6})(?!#)", heading)
    level = len(m.group(1)) if m else None
    rest = heading[m.end() :] if m else heading
    return _title(rest), level


def find_section(text: str, heading: str, *, source: str = "the file") -> Section:
    """The one section whose heading is `heading` (case-insensitive, whitespace collapsed;
    leading #'s are allowed and, when several headings match, pick the level)."""
    title, level = _wanted(heading)
    if not title:
        raise ConfigError(f"no heading given for a section of {source}; write it after the #, e.g. `AGENTS.md#Testing`")
    found = headings(text)
    hits = [h for h in found if _key(h[2]) == _key(title)]
    if not hits and level is not None:  # a title that itself starts with # ("#1 rule")
        literal = _title(heading)
        hits = [h for h in found if _key(h[2]) == _key(literal)]
        title, level = (literal, None) if hits else (title, level)
    if len(hits) > 1 and level is not None:
        hits = [h for h in hits if h[1] == level] or hits
    if not hits:
        known = ", ".join(f"{'#' * lvl} {t}" for _, lvl, t in found) or "none"
        raise ConfigError(
            f"{source} has no heading {title!r}; its headings are: {known}. "
            f"Pass one of them after the # (case does not matter)."
        )
    if len(hits) > 1:
        where = ", ".join(str(i + 1) for i, _, _ in hits)
        levels = {lvl for _, lvl, _ in hits}
        hint = (
            f"include the #'s to pick one level (e.g. `{'#' * min(levels)} {title}`), or rename one"
            if len(levels) > 1
            else "rename one of them in the file so the heading is unique"
        )
        raise ConfigError(
            f"{source} has the heading {title!r} {len(hits)} times (lines {where}); use a more "
            f"specific heading: {hint}."
        )
    line, lvl, name = hits[0]
    end = next((i for i, other, _ in found if i > line and other <= lvl), None)
    lines = split_lines(text)
    end = len(lines) if end is None else end
    return Section(
        heading=lines[line].rstrip("\r\n"),
        title=name,
        level=lvl,
        line=line,
        start=line + 1,
        end=end,
        body="".join(lines[line + 1 : end]),
    )


def replace_section(text: str, heading: str, new_body: str, *, source: str = "the file") -> str:
    """`text` with only the body of section `heading` replaced by `new_body`.

    The new body takes the heading line's line ending (CRLF stays CRLF), ends with one so the
    next heading stays on its own line — except at the end of a file that had no final newline,
    which keeps having none."""
    sec = find_section(text, heading, source=source)
    lines = split_lines(text)
    head = lines[sec.line]
    ending = head[len(head.rstrip("\r\n")) :]
    nl = ending or first_ending(text)
    body = _NEWLINE.sub(nl, new_body)
    at_eof = sec.end == len(lines)
    keeps_no_final_newline = at_eof and not text.endswith(("\n", "\r"))
    if body and not body.endswith(nl):
        body += nl
    if keeps_no_final_newline:
        body = body.removesuffix(nl)
    if body and not ending:  # the heading was the file's last line, without an ending
        head += nl
    return "".join(lines[: sec.line]) + head + body + "".join(lines[sec.end :])
