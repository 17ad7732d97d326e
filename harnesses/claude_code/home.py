"""Where Claude Code keeps its state: `$CLAUDE_CONFIG_DIR`, else `~/.claude` (docs/agents.md)."""

from __future__ import annotations

from pathlib import Path

from skillsleep.harnesses.agent import Env
from skillsleep.harnesses.home import env_path, project_dirs, user_home
from skillsleep.harnesses.skill_roots import SkillRoot, children

__all__ = ["config_dir", "global_config", "instruction_files", "managed_skills", "read_only_skills", "skill_dirs"]


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


def read_only_skills(env: Env) -> list[SkillRoot]:
    """The skills of the plugins it installed (`plugins/cache/<marketplace>/<plugin>/<version>/skills`)
    and of a plugin kept in the personal skills (`skills/<plugin>/.claude-plugin/` beside its
    `skills/`), named `<plugin>:<skill>` as Claude Code names them."""
    cache = config_dir(env) / "plugins" / "cache"
    installed = [v / "skills" for m in children(cache) for p in children(m) for v in children(p)]
    bundled = [p / "skills" for p in children(config_dir(env) / "skills") if (p / ".claude-plugin").is_dir()]
    return [
        SkillRoot(folder=f, kind="plugin", prefix=_plugin_name(f.parent)) for f in [*installed, *bundled] if f.is_dir()
    ]


def _plugin_name(root: Path) -> str:
    """A plugin's name: its folder's, or its parent's when the folder is a version (`1.0.2`)."""
    return root.parent.name if root.name[:1].isdigit() else root.name


def instruction_files(env: Env, cwd: Path) -> list[Path]:
    """The user's `CLAUDE.md`, then each project folder's `CLAUDE.md` and `.claude/CLAUDE.md` (nearest first)."""
    project = [f for d in project_dirs(cwd) for f in (d / "CLAUDE.md", d / ".claude" / "CLAUDE.md")]
    return [config_dir(env) / "CLAUDE.md", *project]
