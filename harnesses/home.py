"""Reading the folders an agent's home rule names from an environment mapping.

An agent's home rule (its package's `home.py`) is a function of an environment mapping only: the
user's home is that mapping's `HOME` (else this user's home), a variable that is empty or
blank counts as unset, and `~` in a variable is expanded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skillsleep.core.document.textfile import user_path

__all__ = ["env_path", "project_dirs", "user_home", "with_home"]


def user_home(env: Mapping[str, str]) -> Path:
    """The user's home: `$HOME` of `env`, else this user's."""
    return env_path(env, "HOME") or Path.home()


def env_path(env: Mapping[str, str], key: str) -> Path | None:
    """The folder variable `key` of `env` names (`~` expanded), or None when it is unset or blank."""
    value = (env.get(key) or "").strip()
    return user_path(value, key) if value else None


def with_home(env: Mapping[str, str], home: Path) -> dict[str, str]:
    """`env` with `HOME` set to `home`: for callers that know the user's home apart from the environment."""
    return {**env, "HOME": str(home)}


def project_dirs(cwd: Path) -> list[Path]:
    """`cwd` and its parents up to the repository root (the first one holding `.git`), nearest
    first; just `cwd` outside a repository."""
    chain = [cwd, *cwd.parents]
    for i, folder in enumerate(chain):
        if (folder / ".git").exists():
            return chain[: i + 1]
    return [cwd]
