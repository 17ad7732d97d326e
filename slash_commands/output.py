"""How a verb prints its result: `--json`, `--format md|text|json`, and who typed it (`/sleep` or
`skillsleep`). A verb's result is a typed record (a pydantic model); its JSON is the record's fields
in their order, its text and markdown are rendered from the record. Untrusted text never reaches a
terminal as an escape sequence."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import click

from skillsleep.core.shared.display import visible
from skillsleep.slash_commands.progress import progress

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "FORMATS",
    "Caller",
    "Inline",
    "Output",
    "emit",
    "json_text",
    "output_options",
    "resolve",
    "show",
    "terminal",
]

FORMATS = ("md", "text", "json")

Result = TypeVar("Result", bound="BaseModel")  # a verb's result: its record
F = TypeVar("F", bound=Callable[..., object])  # a click command's function
Inline = Callable[[object], str]  # how one piece of untrusted text is shown: md_line or plain_line


@dataclass(frozen=True)
class Caller:
    """How the user types a verb where they read its output: `/sleep` inside an agent (`skillsleep
    sleep` passes this as the context object), `skillsleep` on a command line."""

    prefix: str = "skillsleep"


@dataclass(frozen=True)
class Output:
    """How a verb prints its result: `fmt` md | text | json, or None for the default (markdown, or
    plain text when stdout is a terminal); `prefix` as in Caller."""

    fmt: str | None
    prefix: str

    @property
    def plain(self) -> bool:
        """Untrusted text shown as it is (for a person) rather than escaped as markdown."""
        return self.fmt == "text" or (self.fmt is None and terminal())


def output_options(json_help: str) -> Callable[[F], F]:
    """`--json` (what it prints: `json_help`) and `--format md|text|json`, the options of a /sleep verb."""

    def add(fn: F) -> F:
        fn = click.option(
            "--format",
            "fmt",
            type=click.Choice(FORMATS),
            help="md: concise markdown for an agent to show as it is; text: plain text; json: as "
            "--json (default: markdown, or plain text on a terminal).",
        )(fn)
        return click.option("--json", "as_json", is_flag=True, help=json_help)(fn)

    return add


def resolve(fmt: str | None, as_json: bool) -> Output:
    """The Output that `--format` and `--json` ask for, with the caller's prefix."""
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json is the same as --format json; use one of --json and --format {fmt}")
    ctx = click.get_current_context(silent=True)
    caller = ctx.find_object(Caller) if ctx is not None else None
    return Output("json" if as_json else fmt, caller.prefix if caller else Caller().prefix)


def show(result: Result, out: Output, text: Callable[[Result, bool], str], md: Callable[[Result, str], str]) -> None:
    """Print a verb's result as `out` asks: JSON, `md(result, prefix)` or `text(result, plain)`."""
    emit(result, out.fmt == "json", lambda r: md(r, out.prefix) if out.fmt == "md" else text(r, out.plain))


def emit(result: Result, as_json: bool, text: Callable[[Result], str]) -> None:
    """Print `result` as JSON, or `text(result)` with its control characters made visible."""
    progress.stop()
    if as_json:
        click.echo(json_text(result))
    else:  # untrusted text in it never reaches a terminal as an escape sequence
        click.echo(visible(text(result)))


def json_text(result: BaseModel) -> str:
    """A verb's result as `--json` prints it: its fields in their order, indented, UTF-8 as it is."""
    return json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False)


def terminal() -> bool:
    """Whether stdout is a terminal (a person reads plain text) rather than an agent or a pipe (markdown)."""
    return sys.stdout.isatty()
