"""What `skillsleep redact FILE|-` does (redact_cmd.py is its click command): what harvest would
redact in a file, before anything is harvested."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import ConfigError

_MARKER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


class RedactedLine(BaseModel):
    """A line of the file (numbered from 1) where at least one redaction starts, and their kinds in
    order."""

    line: int
    kinds: list[str]


class RedactionReport(BaseModel):
    """What `skillsleep redact` found: the redacted text, the count per kind, and where."""

    source: str
    redactions: dict[str, int]
    lines: list[RedactedLine]
    text: str


def read_input(source: str) -> str:
    """The text of FILE, or of standard input for `-`; bytes that are not UTF-8 become U+FFFD."""
    if source == "-":
        return sys.stdin.buffer.read().decode("utf-8", "replace")
    path = Path(source)
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such file; give a file to check, or - for standard input") from None
    except IsADirectoryError:
        raise ConfigError(f"{source} is a folder; give one file (or - for standard input)") from None
    except OSError as exc:
        raise ConfigError(f"{source} cannot be read ({exc.strerror}); check its permissions") from None


def redact_text(source: str, text: str, patterns: Sequence[str]) -> RedactionReport:
    """Redact `text` as harvest would, with the user's own patterns too."""
    redactor = Redactor(patterns)
    out = redactor.text(text)
    by_line: dict[int, list[str]] = {}
    for line, kind in _marker_lines(text, out):
        by_line.setdefault(line, []).append(kind)
    lines = [RedactedLine(line=n, kinds=kinds) for n, kinds in sorted(by_line.items())]
    return RedactionReport(source=source, redactions=dict(sorted(redactor.counts.items())), lines=lines, text=out)


def _marker_lines(text: str, out: str) -> list[tuple[int, str]]:
    """The line of `text` where each marker of `out` (its redaction) starts, and its kind.

    `out` is `text` with some spans replaced by markers (a private key's body spans many lines), so
    the text between two markers of `out` occurs in `text` in order: each is found at the first
    place after the span the marker before it replaced (at least one character), the last one at the
    end. A marker that `text` already held is its own text, not a redaction."""
    parts = _MARKER.split(out)  # text, kind, text, kind, …, text
    pos, line, counted, found = len(parts[0]), 1, 0, []
    for i in range(1, len(parts), 2):
        marker, after = f"[REDACTED:{parts[i]}]", parts[i + 1]
        if text.startswith(marker, pos):  # already redacted in the file
            pos += len(marker) + len(after)
            continue
        line, counted = line + text.count("\n", counted, pos), pos
        found.append((line, parts[i]))
        at = len(text) - len(after) if i + 2 == len(parts) else text.find(after, pos + 1)
        pos = (at if at > pos else pos + 1) + len(after)
    return found


def summary_line(report: RedactionReport) -> str:
    """One line for stderr: how many of each kind, on which lines."""
    if not report.redactions:
        return f"{report.source}: nothing to redact"
    kinds = ", ".join(f"{kind} {n}" for kind, n in report.redactions.items())
    where = ", ".join(str(r.line) for r in report.lines[:20]) + (" …" if len(report.lines) > 20 else "")
    return f"{report.source}: redacted {kinds} (line {where})"
