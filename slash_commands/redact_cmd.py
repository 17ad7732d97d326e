"""`skillsleep redact FILE|-`: the click command. What harvest would redact in a file, before
anything is harvested, is redaction.redact_text, imported when the verb runs."""

from __future__ import annotations

import click

from skillsleep.core.shared.display import visible
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import redact_pattern_option
from skillsleep.slash_commands.output import terminal

__all__ = ["redact_"]


@click.command("redact")
@click.argument("source", metavar="FILE|-")
@redact_pattern_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts, the lines and the redacted text as JSON.")
@guard(state=False)
def redact_(source: str, redact_patterns: tuple[str, ...], as_json: bool) -> None:
    """Show what harvest would redact in FILE (- reads standard input): the redacted text on stdout,
    what was redacted on which line on stderr. Nothing is stored."""
    from skillsleep.slash_commands.redaction import read_input, redact_text, summary_line
    from skillsleep.slash_commands.wiring import effective_settings

    text = read_input(source)
    patterns = tuple(effective_settings((), redact_patterns).harvest.redact_patterns.value)
    report = redact_text(source, text, patterns)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    click.echo(visible(report.text) if terminal() else report.text, nl=False)
    click.echo(visible(summary_line(report)), err=True)
