"""The files of `plugins/<agent>/` (package data) as an agent's installer writes them.

The bundles call `skillsleep` on PATH, so a plugin folder works as it is (`claude --plugin-dir`,
a Codex marketplace). An install writes them with this installation's `skillsleep` by its
absolute path instead (shell-quoted; JSON-escaped in a .json file), so /sleep and the hook work
whatever PATH the agent runs with. Only the command is replaced (where a verb, `:*)` or a
redirection follows it), never the word in the files' prose.
"""

from __future__ import annotations

import json
import re
import shlex
from importlib import resources
from pathlib import Path

from skillsleep.harnesses.install_plan import PlannedFile
from skillsleep.harnesses.skills import PACK_SKILL_NAME, SKILL_FILE, pack_skill_text

_COMMAND = re.compile(r"(?<![\w./'-])skillsleep(?=:\*\)| sleep\b| harvest\b| >/dev/null)")


def bundle_text(rel: str, skillsleep: Path) -> str:
    """`plugins/<rel>` with `skillsleep` the command at `skillsleep`."""
    text = (resources.files("skillsleep.plugins") / rel).read_text(encoding="utf-8")
    return _calling(text, skillsleep, json_text=rel.endswith(".json"))


def bundle_file(rel: str, dest: Path, skillsleep: Path) -> PlannedFile:
    """The planned file `dest` holding `plugins/<rel>` (see bundle_text)."""
    return PlannedFile(path=dest, text=bundle_text(rel, skillsleep))


def pack_file(skills: Path, skillsleep: Path) -> PlannedFile:
    """This pack's own skill (the repository root's SKILL.md) as `skills/skillsleep/SKILL.md` of an
    agent, calling `skillsleep` by its path."""
    return PlannedFile(path=skills / PACK_SKILL_NAME / SKILL_FILE, text=_calling(pack_skill_text(), skillsleep))


def _calling(text: str, skillsleep: Path, *, json_text: bool = False) -> str:
    command = shlex.quote(str(skillsleep))
    if json_text:
        command = json.dumps(command)[1:-1]
    return _COMMAND.sub(lambda _: command, text)
