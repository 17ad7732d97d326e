"""The user's skills, as each agent finds them (`skillsleep skills`): its user and project skill
folders (writable), its plugins' and bundled skill folders (read-only: never proposed for edit),
skillsleep's managed skill, and the instruction files it reads (`CLAUDE.md`, `AGENTS.md`) with each of
their sections (a section is what `--skill PATH#Heading` trains). skillsleep's own skills (`sleep`,
its pack skill, its harvest hook) are not the user's and are left out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from skillsleep.core.document.sections import headings
from skillsleep.core.document.skill import Skill
from skillsleep.core.harvest.own import SLEEP_COMMANDS
from skillsleep.core.shared.records import Record
from skillsleep.harnesses.agent import Agent, Env
from skillsleep.harnesses.agent_cli import frontmatter_value
from skillsleep.harnesses.skill_roots import SkillRoot, children
from skillsleep.harnesses.skills import MANAGED_NAME, PACK_SKILL_NAME, SKILL_FILE

__all__ = ["FoundSkill", "SkillKind", "find_skills"]

SkillKind = Literal["user", "project", "managed", "plugin", "system", "instructions", "section"]
_OWN = {*SLEEP_COMMANDS, PACK_SKILL_NAME, "skillsleep-harvest"}  # skillsleep's own: not the user's
_NO_PROJECT = Path("/nonexistent/skillsleep-no-project")  # a cwd whose folders are no user's
_SECTION_LEVEL = 2  # the sections listed: `## Heading` (deeper ones are parts of them)


class FoundSkill(Record):
    """One skill (or instruction file, or section of one) an agent finds."""

    agent: str
    name: str  # as the agent names it (a plugin's `plugin:skill`); a section: `FILE#Heading`
    kind: SkillKind
    path: str  # its SKILL.md or instruction file (a section: `PATH#Heading`, as `--skill` takes it)
    writable: bool  # whether a night may propose an edit of it (plugin and system skills: never)
    description: str = ""  # its frontmatter's `description`


def find_skills(agent: Agent, env: Env, cwd: Path) -> list[FoundSkill]:
    """Every skill `agent` finds for a session in `cwd`, in its lookup order (a name found twice is
    listed where the agent takes it from: the first), then its instruction files and their sections."""
    found: dict[str, FoundSkill] = {}
    managed = agent.managed_skills(env)
    users = set(agent.skill_dirs(env, _NO_PROJECT)) & set(
        agent.skill_dirs(env, _NO_PROJECT / "other")
    )  # no cwd in them
    for folder in dict.fromkeys(d if d.is_absolute() else cwd / d for d in agent.skill_dirs(env, cwd)):
        kind: SkillKind = "user" if folder in users else "project"
        for skill in _skills_in(agent.name, SkillRoot(folder=folder, kind="plugin"), kind, managed=managed):
            found.setdefault(skill.name, skill)
    for root in agent.read_only_skills(env):
        for skill in _skills_in(agent.name, root, root.kind, managed=managed):
            found.setdefault(skill.name, skill)
    return [*found.values(), *_instructions(agent, env, cwd)]


def _skills_in(agent: str, root: SkillRoot, kind: SkillKind, *, managed: Path) -> list[FoundSkill]:
    out = []
    for child in children(root.folder):
        file = child / SKILL_FILE
        if child.name.startswith(".") or not file.is_file():
            continue
        try:
            skill = Skill.parse(file.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        name = frontmatter_value(skill.frontmatter, "name") or child.name
        if name in _OWN:
            continue
        name = f"{root.prefix}:{name}" if root.prefix else name
        read_only = kind in ("plugin", "system")
        the_kind: SkillKind = "managed" if name == MANAGED_NAME and child.parent == managed else kind
        description = frontmatter_value(skill.frontmatter, "description") or ""
        writable = not read_only and os.access(file, os.W_OK)
        out.append(
            FoundSkill(
                agent=agent, name=name, kind=the_kind, path=str(file), writable=writable, description=description
            )
        )
    return out


def _instructions(agent: Agent, env: Env, cwd: Path) -> list[FoundSkill]:
    out = []
    for file in dict.fromkeys(agent.instruction_files(env, cwd)):
        try:
            text = file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        writable = os.access(file, os.W_OK)
        out.append(FoundSkill(agent=agent.name, name=file.name, kind="instructions", path=str(file), writable=writable))
        for _, level, title in headings(text):
            if level == _SECTION_LEVEL and title:
                out.append(
                    FoundSkill(
                        agent=agent.name,
                        name=f"{file.name}#{title}",
                        kind="section",
                        path=f"{file}#{title}",
                        writable=writable,
                    )
                )
    return out
