"""What `skillsleep redact FILE|-` does (redact_cmd.py is its click command): what harvest would
redact in a file, before anything is harvested."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from skillsleep.core.errors import ConfigError
from skillsleep.core.redact import Redactor

_MARKER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


class RedactedLine(BaseModel):
    """A line of the redacted text that holds at least one redaction, and their kinds in order."""

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
    lines = [
        RedactedLine(line=n, kinds=kinds)
        for n, row in enumerate(out.splitlines(), start=1)
        if (kinds := _MARKER.findall(row))
    ]
    return RedactionReport(source=source, redactions=dict(sorted(redactor.counts.items())), lines=lines, text=out)


def summary_line(report: RedactionReport) -> str:
    """One line for stderr: how many of each kind, on which lines."""
    if not report.redactions:
        return f"{report.source}: nothing to redact"
    kinds = ", ".join(f"{kind} {n}" for kind, n in report.redactions.items())
    where = ", ".join(str(r.line) for r in report.lines[:20]) + (" …" if len(report.lines) > 20 else "")
    return f"{report.source}: redacted {kinds} (line {where})"
