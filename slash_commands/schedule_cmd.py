"""`skillsleep schedule` / `unschedule`: the click commands and what they did as text; what they do
(the NightJob, where it is installed, what the night will not see) is scheduling.py's, returned as
`ScheduleResult` / `UnscheduleResult`.

Every option of `schedule` but its own is a `run` flag, checked by `run`'s own parser now (a typo
fails here, not at 3 a.m.) and kept on the night's line.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import emit

if TYPE_CHECKING:
    from skillsleep.slash_commands.scheduling import ScheduleResult, UnscheduleResult

__all__ = ["schedule_", "schedule_text", "unschedule_", "unschedule_text"]

F = TypeVar("F", bound=Callable[..., object])  # a click command's function


def schedule_text(s: ScheduleResult) -> str:
    if s.installed:
        head = [
            f"scheduled the night {s.when} via {s.via} ({s.where})"
            + ("; it replaced the earlier one" if s.replaced else "")
        ]
    else:
        head = [
            f"would schedule the night {s.when} via {s.via} ({s.where}); --print installed nothing:",
            "",
            s.preview,
            "",
        ]
    lines = [
        *head,
        f"it runs: {shlex.join(s.run)}  (in {s.cwd})",
        f"logs: {s.log_dir}/cron-*.log; `skillsleep status` shows when it last ran",
        f"API keys: the night does not see this shell's environment; it reads NAME=value lines from "
        f"{s.env_file} when it exists (create it yourself, chmod 600; skillsleep never writes or copies a key)",
    ]
    lines += [f"note: {n}" for n in s.notes]
    return "\n".join(lines + _todo_lines(s.todo))


def unschedule_text(s: UnscheduleResult) -> str:
    if not s.removed:
        return f"nothing was scheduled via {s.via} (no skillsleep night in {s.where})"
    return "\n".join([f"removed the skillsleep night from {s.where}", *_todo_lines(s.todo)])


def _todo_lines(todo: list[str]) -> list[str]:
    return ["still to do, by hand (skillsleep could not do it here):", *(f"  {c}" for c in todo)] if todo else []


def _where(fn: F) -> F:
    """`--crontab` (default) / `--systemd` / `--openclaw`: where `schedule` and `unschedule` keep the
    night (one switch per place in schedulers.schedulers(); OpenClaw's is its agent record's cron)."""
    fn = click.option(
        "--openclaw",
        "via",
        flag_value="openclaw",
        help="An OpenClaw cron job (`openclaw cron add`; its gateway must be running).",
    )(fn)
    fn = click.option(
        "--systemd",
        "via",
        flag_value="systemd",
        help="A systemd user timer and service (~/.config/systemd/user) instead of the crontab.",
    )(fn)
    return click.option(
        "--crontab", "via", flag_value="crontab", default=True, help="The current user's crontab (the default)."
    )(fn)


@click.command("schedule", context_settings={"ignore_unknown_options": True})
@click.option("--at", metavar="HH:MM", help="Run the night every day at this time (the machine's local time).")
@click.option("--cron", "cron_expr", metavar="EXPR", help="Five cron fields instead of --at, e.g. '0 3 * * 1-5'.")
@_where
@click.option("--print", "preview", is_flag=True, help="Show what would be installed; install nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was scheduled as JSON.")
@click.argument("run_flags", nargs=-1, type=click.UNPROCESSED, metavar="[RUN FLAGS]...")
@guard
def schedule_(
    at: str | None, cron_expr: str | None, via: str, preview: bool, as_json: bool, run_flags: tuple[str, ...]
) -> None:
    """Run `skillsleep run [RUN FLAGS]` every night by itself: `skillsleep schedule --at 03:00 --backend deepseek`.

    Every option but these is a `run` flag, checked now by `run`'s own settings code and kept on
    the line; a second `schedule` replaces the first. API keys go in night.env beside config.toml."""
    from skillsleep.slash_commands.scheduling import schedule

    try:  # `run`'s own parser: a typo fails now, not at 3 a.m.
        params = _run_command().make_context("run", list(run_flags)).params
    except click.UsageError as exc:
        raise ConfigError(
            f"{exc.format_message()} (the flags after `schedule`'s own are `skillsleep run` "
            "flags: `skillsleep run --help` lists them)"
        ) from None
    result = schedule(at, cron_expr, via=via, run_flags=run_flags, params=params, preview=preview)
    emit(result, as_json, schedule_text)


@click.command("unschedule")
@_where
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@guard
def unschedule_(via: str, as_json: bool) -> None:
    """Remove the night `skillsleep schedule` installed (only its own lines or files)."""
    from skillsleep.slash_commands.scheduling import unschedule

    emit(unschedule(via), as_json, unschedule_text)


def _run_command() -> click.Command:
    """`skillsleep run` as the command group has it: its own options check the flags of the night."""
    ctx = click.get_current_context()
    group = ctx.find_root().command
    command = group.get_command(ctx, "run") if isinstance(group, click.Group) else None
    if command is None:
        raise RuntimeError("`schedule` runs only as a verb of the skillsleep command group, which has `run`")
    return command
