"""`skillsleep redact FILE|-`: what harvest would redact in a file, before anything is harvested."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from pydantic import BaseModel

from skillsleep.core.display import visible
from skillsleep.core.errors import ConfigError
from skillsleep.core.redact import Redactor
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import redact_pattern_option
from skillsleep.slash_commands.output import terminal
from skillsleep.slash_commands.wiring import effective_settings

__all__ = ["redact_"]

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


@click.command("redact")
@click.argument("source", metavar="FILE|-")
@redact_pattern_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts, the lines and the redacted text as JSON.")
@guard(state=False)
def redact_(source: str, redact_patterns: tuple[str, ...], as_json: bool) -> None:
    """Show what harvest would redact in FILE (- reads standard input): the redacted text on stdout,
    what was redacted on which line on stderr. Nothing is stored."""
    text = read_input(source)
    patterns = tuple(effective_settings((), redact_patterns).harvest.redact_patterns.value)
    report = redact_text(source, text, patterns)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    click.echo(visible(report.text) if terminal() else report.text, nl=False)
    click.echo(visible(summary_line(report)), err=True)
