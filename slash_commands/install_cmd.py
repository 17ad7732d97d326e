"""`skillsleep install` / `uninstall`: skillsleep's bundles into the agents and out again.

The agents' installers (each `Agent.installer` in the registry) say what install means for each; this
command picks the agents, gives them the user's home and environment and the `skillsleep`
command of this installation, and renders what was done.

    install                     every agent whose CLI is on PATH (the others are named, skipped)
    install all                 the same
    install claude-code codex   those agents, installed or not (a missing CLI is a note)
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from skillsleep.core.shared.display import md_line
from skillsleep.slash_commands import choices
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import output_options, resolve, show

if TYPE_CHECKING:
    from skillsleep.harnesses.install import Outcome
    from skillsleep.harnesses.install_plan import InstallContext

Data = dict[str, Any]


def skillsleep_command() -> Path:
    """This installation's `skillsleep` command (beside its Python), else the one on PATH."""
    beside = Path(sys.executable).parent / "skillsleep"
    if beside.is_file():
        return beside.absolute()
    found = shutil.which("skillsleep")
    return Path(found).absolute() if found else beside.absolute()


def _context() -> InstallContext:
    from skillsleep.harnesses.install_plan import InstallContext
    from skillsleep.slash_commands.wiring import data_dir

    env = dict(os.environ)
    return InstallContext(
        home=Path(env.get("HOME") or Path.home()), env=env, skillsleep=skillsleep_command(), data_dir=data_dir()
    )


def _agents(names: Sequence[str], env: dict[str, str]) -> tuple[list[str], list[str]]:
    """(agents to act on, notes on the ones skipped): no names or `all` → those on PATH."""
    from skillsleep.harnesses import registry
    from skillsleep.harnesses.install import installer

    if names and "all" not in names:
        for name in names:
            installer(name)  # an unknown name fails now, listing the known ones
        return list(dict.fromkeys(names)), []
    agents = registry.agents()
    here = [a.name for a in agents if shutil.which(a.command, path=env.get("PATH"))]
    skipped = [
        f"{a.name}: `{a.command}` is not on PATH, so it was skipped (name it to install anyway)"
        for a in agents
        if a.name not in here
    ]
    return here, skipped


def install(names: Sequence[str], *, force: bool = False) -> Data:
    """Install into each chosen agent; every agent's files are checked before the first write."""
    from skillsleep.harnesses import registry
    from skillsleep.harnesses.install import Installs, installer

    ctx = _context()
    agents, skipped = _agents(names, ctx.env)
    installs = Installs(ctx.data_dir, env=ctx.env)
    plans = [installer(agent)(ctx) for agent in agents]
    for plan in plans:  # one agent's refusal stops them all before anything is written
        installs.check(plan, force=force)
    done: list[Outcome] = []
    for agent, plan in zip(agents, plans, strict=True):
        outcome = installs.install(plan, force=force)
        command = registry.get(agent).command
        if not shutil.which(command, path=ctx.env.get("PATH")):
            outcome.notes.append(f"`{command}` is not on PATH here; the files are in place for when it is")
        done.append(outcome)
    return {
        "action": "install",
        "agents": [o.model_dump(mode="json") for o in done],
        "skipped": skipped,
        "skillsleep": str(ctx.skillsleep),
    }


def uninstall(names: Sequence[str], *, force: bool = False) -> Data:
    """Undo what install recorded, for each chosen agent (no names or `all`: every installed one)."""
    from skillsleep.harnesses import registry
    from skillsleep.harnesses.install import Installs, installer

    ctx = _context()
    installs = Installs(ctx.data_dir, env=ctx.env)
    if names and "all" not in names:
        for name in names:
            installer(name)
        agents = list(dict.fromkeys(names))
    else:
        agents = [a for a in registry.agent_names() if installs.manifest(a) is not None]
    for agent in agents:  # one agent's refusal stops them all before anything is removed
        installs.check_uninstall(agent, force=force)
    done = [installs.uninstall(agent, force=force) for agent in agents]
    return {"action": "uninstall", "agents": [o.model_dump(mode="json") for o in done], "skipped": []}


def install_text(r: Data, plain: bool = True) -> str:
    lines: list[str] = []
    for o in r["agents"]:
        verb = "installed into" if r["action"] == "install" else "uninstalled from"
        changed = o["written"] or o["removed"] or o["ran"]
        lines.append(f"{verb} {o['agent']}" + ("" if changed else ": nothing to do, it was already so"))
        lines += [f"  wrote {p}" for p in o["written"]]
        lines += [f"  removed {p}" for p in o["removed"]]
        lines += [f"  ran: {what}" for what in o["ran"]]
        lines += [f"  your own version was kept at {p}" for p in o["backed_up"]]
        lines += [f"  {note}" for note in o["notes"]]
    if not r["agents"]:
        lines.append("no agent to act on" + ("; none was installed" if r["action"] == "uninstall" else ""))
    lines += [f"skipped {s}" for s in r["skipped"]]
    return "\n".join(lines)


def install_md(r: Data, prefix: str = "skillsleep") -> str:
    """One line per agent, for an agent to show."""
    del prefix
    out = []
    for o in r["agents"]:
        n = len(o["written"]) + len(o["removed"])
        what = "installed" if r["action"] == "install" else "uninstalled"
        out.append(
            f"- **{md_line(o['agent'])}**: {what} ({n} file(s) changed, {len(o['unchanged'])} already so)"
            + "".join(f"; {md_line(note)}" for note in o["notes"])
        )
    out += [f"- skipped {md_line(s)}" for s in r["skipped"]]
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
    show(
        uninstall(agents, force=force),
        resolve(fmt, as_json),
        install_text,
        install_md,
    )
