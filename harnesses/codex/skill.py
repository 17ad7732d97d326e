"""The candidate skill in a Codex run: installed into the working copy, and every other skill of
its name kept out (Codex injects nothing when two loaded skills share the mentioned name)."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skillsleep.core.document.skill import Skill
from skillsleep.harnesses.agent_cli import frontmatter_value, skill_document, skill_name

__all__ = ["codex_skill", "install_skill", "named", "skill_files", "skills_config"]


def codex_skill(skill: Skill) -> tuple[str, str]:
    """(name, SKILL.md text) as Codex will load it (see `agent_cli.skill_document`)."""
    name = skill_name(skill)
    return name, skill_document(skill, name)


def skill_files(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.glob("*/SKILL.md") if p.is_file())
    except OSError:
        return []


def named(path: Path, name: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    fm = Skill.parse(text).frontmatter
    return frontmatter_value(fm, "name") == name or (not fm and path.parent.name == name)


def install_skill(work: Path, skill: Skill, mode: str) -> str | None:
    """Write the candidate into the working copy; returns the name a `$name` mention invokes it by
    (None for `agents_md`, which is read without one). An empty skill (the no-skill baseline)
    installs nothing."""
    if not skill.body.strip():
        return None
    if mode == "agents_md":
        (work / "AGENTS.override.md").unlink(missing_ok=True)
        (work / "AGENTS.md").write_text(skill.body.strip("\n") + "\n", encoding="utf-8")
        return None
    name, text = codex_skill(skill)
    skills = work / ".agents" / "skills"
    for other in skill_files(skills):  # a same-name skill in the project would make `$name` ambiguous
        if other.parent.name != name and named(other, name):
            shutil.rmtree(other.parent)
    target = skills / name / "SKILL.md"
    if target.parent.is_symlink() or target.parent.is_file():
        target.parent.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return name


def skills_config(user: Path | None, env: Mapping[str, str], name: str) -> list[dict[str, Any]] | None:
    """`skills.config` entries disabling every user/admin skill named `name` (merged with the
    user's own entries), or None when there is none to disable."""
    roots = [Path("/etc/codex/skills")]
    if env.get("HOME"):
        roots.insert(0, Path(env["HOME"]) / ".agents" / "skills")
    found = [p for root in roots for p in skill_files(root) if named(p, name)]
    if not found:
        return None
    entries: list[dict[str, Any]] = []
    if user is not None:
        try:
            parsed = tomllib.loads((user / "config.toml").read_text(encoding="utf-8"))
            own = parsed.get("skills", {}).get("config", [])
            entries = [e for e in own if isinstance(e, dict)] if isinstance(own, list) else []
        except (OSError, ValueError):
            entries = []  # no or unreadable config: Codex reports a broken one itself
    for path in found:
        for variant in dict.fromkeys([str(path), str(path.resolve())]):
            entries.append({"path": variant, "enabled": False})
    return entries
