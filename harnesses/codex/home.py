"""Where Codex keeps its state: `$CODEX_HOME`, else `~/.codex` (docs/agents.md)."""

from __future__ import annotations

from pathlib import Path

from skillsleep.harnesses.agent import Env
from skillsleep.harnesses.home import env_path, project_dirs, user_home
from skillsleep.harnesses.skill_roots import SkillRoot

__all__ = ["codex_home", "instruction_files", "managed_skills", "read_only_skills", "skill_dirs"]


def codex_home(env: Env) -> Path:
    """The Codex home: `$CODEX_HOME`, else `~/.codex`."""
    return env_path(env, "CODEX_HOME") or user_home(env) / ".codex"


def skill_dirs(env: Env, cwd: Path) -> list[Path]:
    """`<dir>/.agents/skills` from `cwd` up to the repository root (nearest first), then
    `~/.agents/skills`, then the Codex home's `skills`."""
    return [
        *(p / ".agents" / "skills" for p in project_dirs(cwd)),
        user_home(env) / ".agents" / "skills",
        codex_home(env) / "skills",
    ]


def managed_skills(env: Env) -> Path:
    """The skill folder skillsleep's managed skill goes in: `~/.agents/skills`."""
    return user_home(env) / ".agents" / "skills"


def read_only_skills(env: Env) -> list[SkillRoot]:
    """The skills Codex ships and keeps up to date itself: the Codex home's `skills/.system`."""
    return [SkillRoot(folder=codex_home(env) / "skills" / ".system", kind="system")]


def instruction_files(env: Env, cwd: Path) -> list[Path]:
    """The Codex home's `AGENTS.md`, then `AGENTS.md` from the repository root down to `cwd`."""
    return [codex_home(env) / "AGENTS.md", *(d / "AGENTS.md" for d in reversed(project_dirs(cwd)))]
