"""`skillsleep skills`: the click command and the skills as text or markdown; what it reports is
skills_report.py's `SkillsResult`. Reads only: no config, backend or lock; an empty data folder is
not created. Skill names, descriptions and paths come from the user's files: shown as one line,
escaped for markdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from skillsleep.core.shared.display import counted, md_line, plain_line
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import Inline, output_options, resolve, show

if TYPE_CHECKING:
    from skillsleep.slash_commands.skills_report import SkillsResult

__all__ = ["skills_", "skills_text"]

_EDIT = {True: "writable", False: "read-only"}


def _heading(r: SkillsResult) -> str:
    agents = ", ".join(r.agents) or "none installed"
    found = counted(sum(s.kind not in ("instructions", "section") for s in r.skills), "skill")
    return f"{found} of {agents}; use: harvested sessions of the last {r.days} days (since {r.since[:10]})"


def _notes(r: SkillsResult, show: Inline = plain_line) -> list[str]:
    out = []
    if r.not_found:
        used = ", ".join(f"{show(u.name)} ({u.agent}) {u.uses}" for u in r.not_found)
        out.append(f"used but in no skill folder now: {used}")
    if not r.harvested:
        out.append("no use counted yet: `skillsleep harvest` reads your agents' sessions into the state database")
    if not r.agents:
        out.append("no agent found here: install Claude Code, Codex or OpenClaw (`skillsleep harnesses` lists them)")
    return out


def skills_text(r: SkillsResult, plain: bool) -> str:
    """The skills as aligned plain lines (for a terminal), or as the markdown table when not `plain`."""
    if not plain:
        return skills_md(r)
    rows = [
        f"{s.agent:<12} {plain_line(s.name):<28} {s.kind:<12} {_EDIT[s.writable]:<9} {s.uses:>4}  {plain_line(s.path)}"
        for s in r.skills
    ]
    header = f"{'agent':<12} {'name':<28} {'kind':<12} {'edit':<9} {'uses':>4}  path"
    return "\n".join([_heading(r), "", header, *rows, *(["", *_notes(r)] if _notes(r) else [])])


def skills_md(r: SkillsResult) -> str:
    """The skills as one markdown table."""
    rows = [
        f"| {s.agent} | {md_line(s.name)} | {s.kind} | {_EDIT[s.writable]} | {s.uses} | {md_line(s.path)} |"
        for s in r.skills
    ]
    notes = _notes(r, md_line)
    table = ["| agent | name | kind | edit | uses | path |", "|---|---|---|---|---|---|", *rows] if rows else []
    return "\n".join([f"## skillsleep skills — {_heading(r)}", "", *table, *(["", *notes] if notes else [])])


@click.command("skills")
@click.option(
    "--days",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="Count the use by the harvested sessions that ended in these last days.",
)
@output_options("Print the skills as one JSON object.")
@guard(state="read")
def skills_(days: int, as_json: bool, fmt: str | None) -> None:
    """The skills of your agents: user, project, plugin and system skills, instruction files and their
    sections, whether a night may edit each, and how often your harvested sessions used it.

    Project skills and instruction files are those of a session in this folder. Reads only."""
    from skillsleep.slash_commands.skills_report import list_skills

    show(list_skills(days), resolve(fmt, as_json), skills_text, lambda r, _prefix: skills_md(r))
