"""`skillsleep sleep` (a /sleep verb as typed in an agent) and `skillsleep help` (the verbs); the verb
set itself and how a typed line is read are verbs.py."""

from __future__ import annotations

import sys

import click

from skillsleep.core.shared.display import visible
from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands.guard import Fail, guard
from skillsleep.slash_commands.output import Caller, output_options, resolve, show

__all__ = ["help_", "sleep_"]


@click.command("sleep", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--line", help="The text typed after /sleep, split like a shell (for an agent that passes one string).")
@click.option(
    "--prefix",
    default="/sleep",
    show_default=True,
    help="How the user types the verbs in this agent ($sleep in Codex): the commands the output suggests.",
)
@click.option(
    "--from-agent",
    metavar="AGENT",
    help="The agent this was typed in (its /sleep skill says so): a night the verb starts, and the one "
    "status describes, replays in that agent and uses it as the model unless a setting says otherwise.",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def sleep_(line: str | None, prefix: str, from_agent: str | None, args: tuple[str, ...]) -> None:
    """Run a /sleep verb as typed in an agent: `skillsleep sleep [VERB [ARGS...]]` (default: status).

    Prints markdown (as --format md), errors included, unless ARGS say --json or --format;
    `skillsleep sleep help` lists the verbs."""
    from skillsleep.slash_commands import agent_md, verbs
    from skillsleep.slash_commands.night_agent import typed_in

    md = True  # until the user's arguments are read: they may ask for another format
    try:
        if line is not None and args:
            raise ConfigError("give either --line or the verb and its arguments, not both")
        typed = verbs.split_line(line) if line is not None else list(args)
        md = verbs.markdown(typed)
        argv = verbs.command_line(typed, verbs.check_prefix(prefix))
        if from_agent is not None:
            typed_in(from_agent)
    except ConfigError as exc:
        raise Fail(visible(str(exc)), 2, md=md, agent=True) from exc
    try:
        root = click.get_current_context().find_root().command  # the skillsleep group, with every verb
        code = root.main(argv, prog_name="skillsleep", standalone_mode=False, obj=Caller(prefix))
    except click.ClickException as exc:  # click's own (a bad option or value): shown as markdown instead
        if not md or getattr(exc, "md", False):
            raise
        verb = (exc.ctx.info_name if isinstance(exc, click.UsageError) and exc.ctx else None) or argv[0]
        click.echo(agent_md.error_md(visible(exc.format_message())) + "\n\n" + verbs.usage_md(verb, prefix))
        sys.exit(exc.exit_code)
    if code:  # --help and the like
        sys.exit(code)


@click.command("help")
@output_options("Print the verbs as JSON.")
@guard(state=False)
def help_(as_json: bool, fmt: str | None) -> None:
    """List the /sleep verbs, one line each, with their arguments."""
    from skillsleep.slash_commands import verbs

    out = resolve(fmt, as_json)
    show(verbs.help_result(out.prefix), out, verbs.help_text, lambda d, _prefix: verbs.help_text(d, False))
