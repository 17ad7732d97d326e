"""The CLI's boundary: skillsleep errors become a clean message and an exit code (0 ok, 1 error,
2 usage), shown as markdown too where an agent reads the output."""

from __future__ import annotations

import errno
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, overload

import click

from skillsleep.core.shared.display import visible
from skillsleep.core.shared.errors import ConfigError, SkillsleepError
from skillsleep.slash_commands.output import Caller
from skillsleep.slash_commands.progress import progress

__all__ = ["Fail", "guard", "via_sleep"]

P = ParamSpec("P")
R = TypeVar("R")


class Fail(click.ClickException):
    """An error with a chosen exit code (1 runtime, 2 usage); with `md` (`--format md`) it is also
    printed as markdown on stdout, since an agent may show the user only that. Run through `skillsleep
    sleep` (`agent`), it is printed there only: agents read stdout and stderr together (`2>&1`), and
    would show it twice."""

    def __init__(self, message: str, code: int, *, md: bool = False, agent: bool = False) -> None:
        super().__init__(message)
        self.exit_code = code  # type: ignore[misc]  # click sets it per class; this error is 1 or 2 per instance
        self.md = md
        self.agent = agent

    def show(self, file: Any = None) -> None:
        if self.md:
            from skillsleep.slash_commands.agent_md import error_md

            click.echo(error_md(self.message))
        if not (self.md and self.agent):
            super().show(file)


def via_sleep() -> bool:
    """Whether the verb runs through `skillsleep sleep` (inside an agent)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.find_object(Caller) is not None


State = bool | Literal["read"]


@overload
def guard(fn: Callable[P, R], *, state: State = True) -> Callable[P, R]: ...


@overload
def guard(*, state: State = True) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def guard(fn: Callable[P, R] | None = None, *, state: State = True) -> Any:
    """Turn skillsleep errors into clean messages and exit codes (the CLI is the boundary); with
    `state` (`@guard`), the data folder is checked first, before any work (`@guard(state="read")`
    for the verbs that only read it, so a read-only one will do; `@guard(state=False)` for the
    verbs that never touch it)."""
    if fn is None:
        return lambda f: guard(f, state=state)
    verb = fn

    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        md = kwargs.get("fmt") == "md"
        try:
            from skillsleep.harnesses.providers import register_providers

            register_providers()  # `claude-code`, `codex` as backends: every verb may resolve a spec
            if state:
                from skillsleep.slash_commands.wiring import check_data_dir

                check_data_dir(write=state is True)
            return verb(*args, **kwargs)
        except ConfigError as exc:
            raise Fail(visible(str(exc)), 2, md=md, agent=via_sleep()) from exc
        except SkillsleepError as exc:
            raise Fail(visible(str(exc)), 1, md=md, agent=via_sleep()) from exc
        except OSError as exc:  # a file the system refused (a read-only sandbox, a full disk): a message, no traceback
            raise Fail(visible(_refused(exc)), 1, md=md, agent=via_sleep()) from exc
        except KeyboardInterrupt:
            progress.stop()
            click.echo("interrupted; run the same command again to resume where it stopped.", err=True)
            sys.exit(130)
        finally:
            progress.stop()  # the error message (printed by click after this) starts on a clean line

    return functools.update_wrapper(wrapper, verb, assigned=("__name__", "__doc__"), updated=())


def _refused(exc: OSError) -> str:
    """What the system refused, in words; a read-only place names its folder and the way out."""
    if exc.errno == errno.EROFS and exc.filename:
        return (
            f"could not write {Path(exc.filename).parent}: Read-only file system here (an agent's sandbox makes "
            "it so); run this with permission to write there"
        )
    return (
        f"could not use {exc.filename or 'a file'}: {exc.strerror or exc}; check that it exists and that you may "
        "write there"
    )
