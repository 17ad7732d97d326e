"""The skills a Claude Code session used (docs/harvest.md#which-skill-a-session-used).

Claude Code writes one meta user record whenever it loads a skill, whether the model called the
`Skill` tool (`tool_use{name:"Skill", input:{skill}}`, its result "Launching skill: <name>") or the
user typed `/<name> args` (`<command-name>/<name></command-name>`): `isMeta: true`, text
"Base directory for this skill: <folder>\\n\\n<the skill's body>". The name is the one the user or
the model gave (a plugin's skill is `plugin:name`), else the folder's name.
"""

from __future__ import annotations

from pathlib import PurePath

from skillsleep.core.shared.session import Turn

__all__ = ["LOADED", "SKILL_TOOL", "loaded_skill"]

SKILL_TOOL = "Skill"
LOADED = "Base directory for this skill:"


def loaded_skill(text: str, turns: list[Turn]) -> str | None:
    """The skill a meta record's `text` loaded (None when it loaded none), named after what came
    just before it in `turns`: the `/name` command, or the Skill tool call whose result it follows."""
    stripped = text.strip()
    if not stripped.startswith(LOADED):
        return None
    folder = stripped.removeprefix(LOADED).split("\n", 1)[0].strip()
    last = turns[-1] if turns else None
    if last is not None and last.kind == "command" and last.tool and last.tool.startswith("/"):
        return last.tool[1:]
    if last is not None and last.kind == "tool_result" and last.tool == SKILL_TOOL:
        call = next((t for t in reversed(turns) if t.kind == "tool_call" and t.call_id == last.call_id), None)
        name = (call.arguments or {}).get("skill") if call is not None else None
        if isinstance(name, str) and name.strip():
            return name.strip().lstrip("/")
    return PurePath(folder).name or None
