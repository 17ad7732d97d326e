"""Which skill a session used, from what every agent's transcript shows alike: the agent reading a
skill's `SKILL.md` with a tool (OpenClaw's way of loading a skill; a Codex or Claude Code model that
opens one itself). Each agent's parser adds its own signs (docs/harvest.md#which-skill-a-session-used):
Claude Code's skill loads after the Skill tool or a `/name` invocation, Codex's injected `<skill>`
blocks. The name is the skill's folder name, as the agents name a skill.
"""

from __future__ import annotations

import re
from typing import Any

from skillsleep.core.shared.session import Session, Turn

__all__ = ["skill_in_text", "skills_read"]

# a path ending in `skills/<name>/SKILL.md` (the folder name is the skill's name), in a path argument
# or inside a command (`cat ~/.agents/skills/x/SKILL.md`)
_SKILL_FILE = re.compile(r"(?:^|[\s/'\"=])skills/([A-Za-z0-9][\w.:-]*)/SKILL\.md(?=$|[\s'\";|&)])")


def skill_in_text(text: str) -> str | None:
    """The skill whose `SKILL.md` `text` names (a path, or a command holding one), or None."""
    found = _SKILL_FILE.search(text)
    return found.group(1) if found else None


def skills_read(session: Session, turns: list[Turn] | None = None) -> None:
    """Note on `session` every skill whose `SKILL.md` one of its tool calls (or of `turns`) read: any
    string argument that names one (`path`, `file_path`, `command`, …)."""
    for turn in session.turns if turns is None else turns:
        if turn.kind == "tool_call" and turn.arguments:
            for value in _strings(turn.arguments):
                session.use_skill(skill_in_text(value))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
