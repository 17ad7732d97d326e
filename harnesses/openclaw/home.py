"""Where OpenClaw keeps its state, found as OpenClaw finds it (docs/agents.md, "OpenClaw").

state dir   $OPENCLAW_STATE_DIR, else ~/.openclaw (~/.openclaw-<profile> with $OPENCLAW_PROFILE)
~           $OPENCLAW_HOME, else $HOME ("undefined" and "null", as Node passes an unset
            value on, count as unset)
config      $OPENCLAW_CONFIG_PATH, else <state dir>/openclaw.json
workspace   ~/.openclaw/workspace (workspace-<profile> with a profile)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from skillsleep.harnesses.agent import Env
from skillsleep.harnesses.home import env_path, user_home
from skillsleep.harnesses.skill_roots import SkillRoot, children

__all__ = [
    "config_path",
    "instruction_files",
    "managed_skills",
    "read_only_skills",
    "skill_dirs",
    "state_dir",
    "state_dirs",
]

_UNSET = ("undefined", "null")
_OLD_NAMES = (".clawdbot", ".moltbot")  # OpenClaw's earlier names: their state holds transcripts too


def _home(env: Env) -> Path:
    for key in ("OPENCLAW_HOME", "HOME"):
        if (env.get(key) or "").strip() not in _UNSET and (path := env_path(env, key)):
            return path
    return user_home(env)


def _profile(env: Env) -> str:
    profile = (env.get("OPENCLAW_PROFILE") or "").strip()
    return "" if profile.lower() == "default" else profile


def state_dir(env: Env) -> Path:
    """OpenClaw's state dir, its home."""
    explicit = env_path(env, "OPENCLAW_STATE_DIR")
    if explicit:
        return explicit
    profile = _profile(env)
    return _home(env) / (f".openclaw-{profile}" if profile else ".openclaw")


def state_dirs(env: Env) -> list[Path]:
    """The state dir, and the state of OpenClaw's earlier names when no $OPENCLAW_STATE_DIR is set."""
    old = [] if env_path(env, "OPENCLAW_STATE_DIR") else [_home(env) / name for name in _OLD_NAMES]
    return [state_dir(env), *old]


def config_path(env: Env) -> Path:
    """The user's OpenClaw config file (it may not exist)."""
    return env_path(env, "OPENCLAW_CONFIG_PATH") or state_dir(env) / "openclaw.json"


def _workspace(env: Env) -> Path:
    profile = _profile(env)
    return _home(env) / ".openclaw" / (f"workspace-{profile}" if profile else "workspace")


def skill_dirs(env: Env, cwd: Path) -> list[Path]:
    """`skills` and `.agents/skills` of the workspace (`cwd`, then the default workspace), then
    `~/.agents/skills` and the state dir's `skills`."""
    default = _workspace(env)
    dirs = [d for ws in (cwd, default) for d in (ws / "skills", ws / ".agents" / "skills")]
    return [*dirs, user_home(env) / ".agents" / "skills", state_dir(env) / "skills"]


def managed_skills(env: Env) -> Path:
    """The skill folder skillsleep's managed skill goes in: the state dir's `skills`."""
    return state_dir(env) / "skills"


def read_only_skills(env: Env) -> list[SkillRoot]:
    """The skill folders its installed plugins list (`skills` of `extensions/<id>/openclaw.plugin.json`),
    then the skills OpenClaw ships in its own package (`bundled_skills`)."""
    roots = []
    for plugin in children(state_dir(env) / "extensions"):
        try:
            listed = json.loads((plugin / "openclaw.plugin.json").read_text(encoding="utf-8")).get("skills")
        except (OSError, ValueError, AttributeError):
            continue
        for rel in listed if isinstance(listed, list) else []:
            if isinstance(rel, str):
                roots.append(SkillRoot(folder=plugin / rel, kind="plugin"))
    return [*roots, *bundled_skills(env)]


def bundled_skills(env: Env) -> list[SkillRoot]:
    """The `skills/` folder of the OpenClaw package whose `openclaw` is first on PATH (its bin entry
    links to the package's `openclaw.mjs`): skills OpenClaw ships and updates, read-only."""
    found = shutil.which("openclaw", path=env.get("PATH"))
    if found is None:
        return []
    package = Path(found).resolve().parent
    if not (package / "package.json").is_file() or not (package / "skills").is_dir():
        return []
    return [SkillRoot(folder=package / "skills", kind="system")]


def instruction_files(env: Env, cwd: Path) -> list[Path]:
    """`AGENTS.md` of the workspace: `cwd`, then the default workspace."""
    return [cwd / "AGENTS.md", _workspace(env) / "AGENTS.md"]
