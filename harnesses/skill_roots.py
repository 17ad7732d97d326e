"""The folders of skills an agent loads but the user does not write (its plugins', its own bundled
ones), and the instruction files it reads: what an `Agent` record names besides its user and project
skill folders (`skill_dirs`), for `skillsleep skills` (harnesses/user_skills.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ReadOnlyRoots", "SkillRoot", "children", "no_files", "no_roots"]

ReadOnlyKind = Literal["plugin", "system"]


class SkillRoot(BaseModel):
    """A folder of `<name>/SKILL.md` skills that are never proposed for edit: a plugin's (its skills
    named `<prefix>:<name>` where the agent namespaces them) or the agent's own bundled ones."""

    model_config = ConfigDict(frozen=True)

    folder: Path
    kind: ReadOnlyKind
    prefix: str = ""  # the plugin's name, for an agent that names its skills `plugin:skill`


ReadOnlyRoots = Callable[[Mapping[str, str]], list[SkillRoot]]


def no_roots(env: Mapping[str, str]) -> list[SkillRoot]:
    """For an agent with no plugin or bundled skills of its own."""
    return []


def no_files(env: Mapping[str, str], cwd: Path) -> list[Path]:
    """For an agent that reads no instruction file."""
    return []


def children(folder: Path) -> list[Path]:
    """The entries of `folder`, sorted; none when it is absent or unreadable."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []
