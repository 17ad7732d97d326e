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


_READ_TOOLS = frozenset({"read", "read_file", "view", "view_file"})  # a tool that only reads a file
_PATH_KEYS = ("path", "file_path", "filePath", "file", "filename")
_COMMAND_KEYS = ("command", "cmd")  # a shell tool's command (a string, or Codex's argv list)
_READER = re.compile(r"\s*(?:cat|head|tail|sed|nl|less|more|bat|awk|grep)\b")  # commands that print a file
_WRAPPER = re.compile(r"\s*(?:\S*/)?(?:ba|z)?sh\s+-l?c\s+(.+)", re.S)


def skill_in_text(text: str) -> str | None:
    """The skill whose `SKILL.md` `text` names (a path, or a command holding one), or None."""
    found = _SKILL_FILE.search(text)
    return found.group(1) if found else None


def skills_read(session: Session, turns: list[Turn] | None = None) -> None:
    """Note on `session` every skill whose `SKILL.md` one of its tool calls (or of `turns`) read: a
    read tool's path (`read`, `Read`, …) or a shell command that prints a file (`cat`, `sed -n`, …).
    A call that writes or edits a skill file works on the skill: it is no use of it."""
    for turn in session.turns if turns is None else turns:
        if turn.kind == "tool_call" and turn.arguments:
            for value in _read_targets(turn.tool or "", turn.arguments):
                session.use_skill(skill_in_text(value))


def _read_targets(tool: str, arguments: dict[str, Any]) -> list[str]:
    """The strings of a tool call's arguments that name what it reads (none for a writing call)."""
    if tool.lower() in _READ_TOOLS:
        return [v for k, v in arguments.items() if k in _PATH_KEYS and isinstance(v, str)]
    commands = [arguments.get(k) for k in _COMMAND_KEYS]
    texts = [" ".join(map(str, c)) if isinstance(c, list) else c for c in commands]
    return [t for t in texts if isinstance(t, str) and _READER.match(_unwrapped(t))]


def _unwrapped(command: str) -> str:
    """A shell command without a `bash -lc '…'` wrapper around it."""
    found = _WRAPPER.match(command)
    return found.group(1) if found else command
