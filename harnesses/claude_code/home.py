"""Where Claude Code keeps its state: `$CLAUDE_CONFIG_DIR`, else `~/.claude` (docs/agents.md)."""

from __future__ import annotations

from pathlib import Path

from skillsleep.harnesses.agent import Env
from skillsleep.harnesses.home import env_path, project_dirs, user_home

__all__ = ["config_dir", "global_config", "managed_skills", "skill_dirs"]


def config_dir(env: Env) -> Path:
    """Claude Code's config dir, its home: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    return env_path(env, "CLAUDE_CONFIG_DIR") or user_home(env) / ".claude"


def global_config(env: Env) -> Path:
    """Claude Code's global config file: `.claude.json` in `$CLAUDE_CONFIG_DIR`, else `~/.claude.json`."""
    explicit = env_path(env, "CLAUDE_CONFIG_DIR")
    return explicit / ".claude.json" if explicit else user_home(env) / ".claude.json"


def skill_dirs(env: Env, cwd: Path) -> list[Path]:
    """Personal skills, then `<dir>/.claude/skills` from `cwd` up to the repository root."""
    return [config_dir(env) / "skills", *(p / ".claude" / "skills" for p in project_dirs(cwd))]


def managed_skills(env: Env) -> Path:
    """The skill folder skillsleep's managed skill goes in: the personal skills."""
    return config_dir(env) / "skills"
