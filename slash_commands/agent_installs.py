"""What `skillsleep install` / `uninstall` do (install_cmd.py holds their click commands and text):
skillsleep's bundles into the agents and out again, returned as `InstallResult` / `AgentsChanged`.

The agents' installers (each `Agent.installer` in the registry) say what install means for each;
this picks the agents, gives them the user's home and environment and the `skillsleep` command of
this installation, and says what was done.

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
from typing import Literal

from skillsleep.core.shared.records import Record
from skillsleep.harnesses import registry
from skillsleep.harnesses.install import Installs, Outcome, installer
from skillsleep.harnesses.install_plan import InstallContext

__all__ = ["AgentsChanged", "InstallResult", "install", "skillsleep_command", "uninstall"]


class AgentsChanged(Record):
    """What `uninstall --json` prints: what was done in each agent, and which were skipped and why."""

    action: Literal["install", "uninstall"]
    agents: list[Outcome]
    skipped: list[str]  # "agent: why"


class InstallResult(AgentsChanged):
    """What `install --json` prints: AgentsChanged, and the `skillsleep` command the agents call."""

    skillsleep: str


def skillsleep_command() -> Path:
    """This installation's `skillsleep` command (beside its Python), else the one on PATH."""
    beside = Path(sys.executable).parent / "skillsleep"
    if beside.is_file():
        return beside.absolute()
    found = shutil.which("skillsleep")
    return Path(found).absolute() if found else beside.absolute()


def _context() -> InstallContext:
    from skillsleep.slash_commands.wiring import data_dir

    env = dict(os.environ)
    return InstallContext(
        home=Path(env.get("HOME") or Path.home()), env=env, skillsleep=skillsleep_command(), data_dir=data_dir()
    )


def _agents(names: Sequence[str], env: dict[str, str]) -> tuple[list[str], list[str]]:
    """(agents to act on, notes on the ones skipped): no names or `all` → those on PATH."""
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


def install(names: Sequence[str], *, force: bool = False) -> InstallResult:
    """Install into each chosen agent; every agent's files are checked before the first write."""
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
    _note_default(done, ctx.data_dir)
    return InstallResult(action="install", agents=done, skipped=skipped, skillsleep=str(ctx.skillsleep))


def _note_default(done: list[Outcome], data: Path) -> None:
    """The agent just installed that a night now defaults to says so (harnesses/default_agent.py)."""
    from skillsleep.harnesses.default_agent import choose_agent, installed_agents
    from skillsleep.slash_commands.night_agent import agent_models

    models = agent_models()
    choice = choose_agent(installed_agents(data, list(models)), models)
    for outcome in done:
        if outcome.agent == choice.agent:
            outcome.notes.append(
                f"a night with nothing configured now replays in {choice.agent} and uses it as the model, under a "
                f"{choice.budget_tokens:,}-token cap (`skillsleep config` shows why; --backend local keeps the "
                "embedded model)"
            )


def uninstall(names: Sequence[str], *, force: bool = False) -> AgentsChanged:
    """Undo what install recorded, for each chosen agent (no names or `all`: every installed one)."""
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
    return AgentsChanged(action="uninstall", agents=done, skipped=[])
