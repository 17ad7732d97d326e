"""Options that several verbs share, with one definition each; a verb says only what differs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from skillsleep.slash_commands import choices

__all__ = ["agent_target_options", "chat_dir_option", "executor_option", "redact_pattern_option", "scoring_options"]

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


def _stacked(options: list[Callable[[F], F]]) -> Callable[[F], F]:
    """The options applied as if written one above the other, in this order (help lists them so)."""

    def apply(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


def scoring_options(split_help: str) -> Callable[[F], F]:
    """What scoring skills on a task file takes (eval, compare): the tasks, the config, the target
    and its server, the judge, the metric and the split (`split_help` says what is done on it)."""
    return _stacked(
        [
            click.option(
                "--tasks", "tasks_path", required=True, type=click.Path(path_type=Path), help="Task file (JSONL)."
            ),
            click.option(
                "--config",
                "config_path",
                type=click.Path(path_type=Path),
                help="Take backends and judge settings from this config.",
            ),
            click.option("--target", "target_spec", help="Target backend as provider:model (default: the config's)."),
            click.option(
                "--base-url", help="Base URL of the target's server (a backend's, or the agent's with --harness)."
            ),
            click.option("--judge", "judge_spec", help="Backend for rubric judges as provider:model."),
            click.option("--metric", type=click.Choice(["hard", "soft", "mixed"]), help="Score metric."),
            click.option(
                "--split",
                type=click.Choice(["all", "train", "val", "test"]),
                default="all",
                show_default=True,
                help=split_help,
            ),
        ]
    )


def agent_target_options(fn: F) -> F:
    """`--harness` (where tasks run) and `--target-model` (the agent's model for a CLI harness)."""
    return _stacked(
        [
            click.option(
                "--harness",
                "harness_name",
                cls=choices.NamesHelp,
                names=choices.harnesses,
                default="chat",
                show_default=True,
                help="Where tasks run: {names} (see `skillsleep harnesses`).",
            ),
            click.option("--target-model", help="The agent's model for a CLI harness (default: the agent's own)."),
        ]
    )(fn)
