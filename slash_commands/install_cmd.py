"""`skillsleep install` / `uninstall`: the click commands and what they did as text or markdown;
the work, and the `InstallResult` / `AgentsChanged` they return, are agent_installs.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from skillsleep.core.shared.display import md_line
from skillsleep.slash_commands import choices
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import output_options, resolve, show

if TYPE_CHECKING:
    from skillsleep.slash_commands.agent_installs import AgentsChanged

__all__ = ["install_", "install_md", "install_text", "uninstall_"]


def install_text(r: AgentsChanged, plain: bool = True) -> str:
    lines: list[str] = []
    for o in r.agents:
        verb = "installed into" if r.action == "install" else "uninstalled from"
        changed = o.written or o.removed or o.ran
        lines.append(f"{verb} {o.agent}" + ("" if changed else ": nothing to do, it was already so"))
        lines += [f"  wrote {p}" for p in o.written]
        lines += [f"  removed {p}" for p in o.removed]
        lines += [f"  ran: {what}" for what in o.ran]
        lines += [f"  your own version was kept at {p}" for p in o.backed_up]
        lines += [f"  {note}" for note in o.notes]
    if not r.agents:
        lines.append("no agent to act on" + ("; none was installed" if r.action == "uninstall" else ""))
    lines += [f"skipped {s}" for s in r.skipped]
    return "\n".join(lines)


def install_md(r: AgentsChanged, prefix: str = "skillsleep") -> str:
    """One line per agent, for an agent to show."""
    del prefix
    out = []
    for o in r.agents:
        n = len(o.written) + len(o.removed)
        what = "installed" if r.action == "install" else "uninstalled"
        out.append(
            f"- **{md_line(o.agent)}**: {what} ({n} file(s) changed, {len(o.unchanged)} already so)"
            + "".join(f"; {md_line(note)}" for note in o.notes)
        )
    out += [f"- skipped {md_line(s)}" for s in r.skipped]
    return "\n".join(out) or "nothing to do"


@click.command("install")
@click.argument("agents", nargs=-1, type=choices.NamesMetavar(choices.agents_or_all))
@click.option("--force", is_flag=True, help="Replace files you changed (your versions are backed up first).")
@output_options("Print what was written and run, per agent, as JSON.")
@guard
def install_(agents: tuple[str, ...], force: bool, as_json: bool, fmt: str | None) -> None:
    """Put skillsleep into your agents (/sleep, its skill, hooks): every agent on PATH, or the ones named.

    Idempotent; a file you changed is never replaced without --force; `skillsleep uninstall` removes
    exactly what this wrote."""
    from skillsleep.slash_commands.agent_installs import install

    show(
        install(agents, force=force),
        resolve(fmt, as_json),
        install_text,
        install_md,
    )


@click.command("uninstall")
@click.argument("agents", nargs=-1, type=choices.NamesMetavar(choices.agents_or_all))
@click.option("--force", is_flag=True, help="Remove files you changed since install (backed up first).")
@output_options("Print what was removed and undone, per agent, as JSON.")
@guard
def uninstall_(agents: tuple[str, ...], force: bool, as_json: bool, fmt: str | None) -> None:
    """Take out what `skillsleep install` put into your agents, and only that (default: every agent)."""
    from skillsleep.slash_commands.agent_installs import uninstall

    show(
        uninstall(agents, force=force),
        resolve(fmt, as_json),
        install_text,
        install_md,
    )
