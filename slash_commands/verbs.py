"""The /sleep verb set: one set for every agent, each verb the `skillsleep` command of its name.

`skillsleep sleep [ARGS…]` runs the verb ARGS[0] (`status` when ARGS is empty or starts with an
option) with the rest of ARGS; `skillsleep sleep --line TEXT` takes the raw text the user typed
after `/sleep` and splits it like a shell. The output is markdown (`--format md`) unless the
user's arguments ask for `--json` or another `--format`. This module only parses: the verbs
themselves are the click commands, run as they are.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from pydantic import BaseModel

from skillsleep.core.shared.errors import ConfigError, UnknownNameError


class Verb(BaseModel):
    """One /sleep verb: its arguments as the user types them, and what it does."""

    name: str
    args: str
    summary: str

    def usage(self, prefix: str) -> str:
        return f"{prefix} {self.name} {self.args}".rstrip()


VERBS: dict[str, Verb] = {
    v.name: v
    for v in (
        Verb(
            name="status",
            args="[SKILL]",
            summary="nights with their gate verdicts, pending proposals with what to type next, spend (SKILL: that "
            "skill's only)",
        ),
        Verb(
            name="diff",
            args="[ID|SKILL]",
            summary="the numbered changes of a proposal (default: the newest pending one; SKILL: that skill's)",
        ),
        Verb(
            name="adopt",
            args="[ID|SKILL|--all] [--edits N,M] [--force]",
            summary="put a proposal live (default: the newest accepted one; SKILL: that skill's; --all: each "
            "skill's), or only the changes N,M of it; the old file is backed up first",
        ),
        Verb(
            name="reject",
            args="[ID|SKILL]",
            summary="drop a pending proposal (SKILL: that skill's newest); the live file is not touched",
        ),
        Verb(
            name="rollback",
            args="[SKILL] [N] [--force]",
            summary="undo the last N adopts or rollbacks (default 1) of the skill changed last, or of SKILL",
        ),
        Verb(
            name="run",
            args="[--detach] [flags…]",
            summary="one night of the sleep cycle, a proposal for each skill it trained (then `adopt SKILL`, or "
            "`adopt --all` for each skill's); --detach (always, inside an agent) runs it in the background and "
            "returns at once (`skillsleep run --help` lists the flags)",
        ),
        Verb(name="cost", args="", summary="what the nights spent: by night, this month and by role"),
        Verb(name="help", args="", summary="this list"),
    )
}


def split_line(text: str) -> list[str]:
    """What the user typed after /sleep, split like a shell (quotes group, backslashes escape)."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ConfigError(
            f"cannot split the /sleep line {text!r}: {str(exc).lower()}; close the quote, or put a "
            "backslash before a quote that is part of a word"
        ) from None


def _format_asked(args: Sequence[str]) -> str | None:
    """The output format the user's own arguments ask for ("json" for --json), or None."""
    for i, arg in enumerate(args):
        if arg == "--json":
            return "json"
        if arg == "--format" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--format="):
            return arg.partition("=")[2]
    return None


def markdown(args: Sequence[str]) -> bool:
    """Whether what the user typed after /sleep gets markdown output (errors included)."""
    return _format_asked(args) in (None, "md")


def command_line(args: Sequence[str], prefix: str = "/sleep") -> list[str]:
    """The `skillsleep` arguments that run what the user typed after /sleep (`prefix`): markdown
    unless they ask for another format, and `run` in the background (`--detach`: a night never
    blocks the agent's turn). An unknown verb is a ConfigError listing the known ones."""
    verb, rest = ("status", list(args)) if not args or args[0].startswith("-") else (args[0], list(args[1:]))
    if verb not in VERBS:
        raise UnknownNameError(f"{prefix} verb", verb, list(VERBS))
    if verb == "run" and not {"--detach", "--help", "-h"} & set(rest):
        rest.insert(0, "--detach")
    return [verb, *rest, *(["--format", "md"] if _format_asked(rest) is None else [])]


def check_prefix(prefix: str) -> str:
    """How the user types the verbs in an agent (`/sleep`, `$sleep`), once it is one word."""
    if not re.fullmatch(r"[/$]?[A-Za-z][\w:.-]*", prefix):
        raise ConfigError(f"--prefix {prefix!r}: give the word the user types before a verb, such as /sleep or $sleep")
    return prefix


class VerbHelp(BaseModel):
    """One verb as `help` lists it: `usage` as the user types it where they read it."""

    verb: str
    args: str
    summary: str
    usage: str


class HelpResult(BaseModel):
    """What `help --json` prints: how the user types the verbs here, and the verbs."""

    prefix: str
    verbs: list[VerbHelp]


def help_result(prefix: str) -> HelpResult:
    """The verbs as the user types them with `prefix` (`skillsleep`, `/sleep`, `$sleep`)."""
    return HelpResult(
        prefix=prefix,
        verbs=[VerbHelp(verb=v.name, args=v.args, summary=v.summary, usage=v.usage(prefix)) for v in VERBS.values()],
    )


def help_text(d: HelpResult, plain: bool) -> str:
    """The verbs, one line each; markdown unless `plain`."""
    alone = f"`{d.prefix}` alone is `{d.prefix} status`; " if d.prefix == "/sleep" else ""
    head = (
        f"The /sleep verbs, the same in every agent and as `skillsleep VERB` ({alone}add `--json` or "
        "`--format md|text|json` to any of them):"
    )
    if plain:
        width = max(len(v.usage) for v in d.verbs)
        return "\n".join([head.replace("`", ""), *(f"  {v.usage:<{width}}  {v.summary}" for v in d.verbs)])
    return "\n".join([head, "", *(f"- `{v.usage}` — {v.summary}" for v in d.verbs)])


def usage_md(verb: str, prefix: str) -> str:
    """How to type `verb` (when it is one), and where the others are listed."""
    known = VERBS.get(verb)
    typed = f"Usage: `{known.usage(prefix)}`; " if known else ""
    return f"{typed}`{prefix} help` lists the verbs."
