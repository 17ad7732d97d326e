"""Options that several verbs share, with one definition each; a verb says only what differs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["chat_dir_option", "executor_option", "redact_pattern_option"]

F = TypeVar("F", bound=Callable[..., Any])


def chat_dir_option(what: str) -> Callable[[F], F]:
    """`--chat-dir` (repeatable): `what` the verb does with the folder, then what the option replaces."""
    return click.option(
        "--chat-dir",
        "chat_dirs",
        multiple=True,
        type=click.Path(path_type=Path, readable=False),
        help=f"{what} (repeatable; replaces SKILLSLEEP_CHAT_DIRS and the config file's chat_dirs).",
    )


def redact_pattern_option(fn: F) -> F:
    """`--redact-pattern` (repeatable): extra regexes to redact, added to the env's and config file's."""
    return click.option(
        "--redact-pattern",
        "redact_patterns",
        multiple=True,
        help="Extra regex to redact (repeatable; added to SKILLSLEEP_REDACT_PATTERNS and the config file's).",
    )(fn)


def executor_option(fn: F) -> F:
    """`--executor local|ray`: where rollouts run (over `[executor] kind` in config.toml)."""
    return click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        help="Where rollouts run: local (this process) or ray (the cluster of [executor] in config.toml).",
    )(fn)
