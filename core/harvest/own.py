"""skillsleep's own sessions: what its replays, its model calls and its `/sleep` verbs leave in an
agent's transcripts. They are never stored, so they are never mined: a night must never learn
from itself.

How they are recognised, from the parsed `Session` alone (no file is looked at):

    its working folder is a run folder      skillsleep runs every agent process (a replay, or the
                                            agent as the night's model) in `<tmp>/skillsleep-run-
                                            XXXXXXXX/…` (`harnesses/run_folder.py`), and every agent
                                            records that folder as the session's cwd (`project`)
                                            → "run_folder"
    every prompt is a skillsleep verb       `/sleep …`, `/skillsleep:sleep …`, `$sleep …`: the user
                                            talked to skillsleep, not to the agent about work
                                            → "sleep_verbs" (a session that also holds anything
                                            else the user typed is kept whole; mining skips the
                                            verbs and the agent's replies to them)

The agents' own switches keep most of these sessions from being written at all (`claude -p
--no-session-persistence`, `codex exec --ephemeral`, OpenClaw's throwaway state dir); this is
the check for what is written anyway (a user's wrapper, a setting, an older CLI).
"""

from __future__ import annotations

import re
from typing import Literal

from skillsleep.core.shared.session import Session, Turn

__all__ = ["RUN_FOLDER_PREFIX", "OwnReason", "in_run_folder", "is_sleep_verb", "own_reason", "user_skills"]

RUN_FOLDER_PREFIX = "skillsleep-run-"  # + 8 characters of tempfile's alphabet: a run folder's name
# a run folder's name, or the replay folder of skillsleep ≤ 0.x (`skillsleep-replay-XXXXXXXX/work`)
_RUN_FOLDER = re.compile(r"skillsleep-(?:run|replay)-[a-z0-9_]{8}")
_SEPARATORS = re.compile(r"[/\\]")
SLEEP_COMMANDS = frozenset({"sleep", "skillsleep:sleep"})  # /sleep in an agent, by the pack's own name too
_SKILL_MENTION = re.compile(r"^\$(?:sleep|skillsleep:sleep)(?:\s|$)")  # Codex, OpenClaw: $sleep status
_COMMAND_TEXT = re.compile(r"^/([A-Za-z][\w:.\-]*)(?:\s|$)")
_SKILL_COMMAND = re.compile(r"^/skill\s+(?:sleep|skillsleep:sleep)(?:\s|$)")  # OpenClaw: /skill sleep status

OwnReason = Literal["run_folder", "sleep_verbs"]


def in_run_folder(path: str | None) -> bool:
    """Whether `path` (a session's cwd, POSIX or Windows) is inside one of skillsleep's run folders."""
    return bool(path) and any(_RUN_FOLDER.fullmatch(part) for part in _SEPARATORS.split(path or ""))


def is_sleep_verb(turn: Turn) -> bool:
    """Whether a user or command turn is one of skillsleep's verbs, said to skillsleep in the agent."""
    text = turn.text.strip()
    if turn.kind == "command":
        name = turn.tool or (text.split(maxsplit=1) or [""])[0]
        return name.lstrip("/").lower() in SLEEP_COMMANDS
    if turn.kind != "user":
        return False
    if _SKILL_MENTION.match(text) or _SKILL_COMMAND.match(text):
        return True
    found = _COMMAND_TEXT.match(text)
    return found is not None and found.group(1).lower() in SLEEP_COMMANDS


def own_reason(session: Session) -> OwnReason | None:
    """Why `session` is skillsleep's own (never stored, never mined), or None for the user's work."""
    if in_run_folder(session.project):
        return "run_folder"
    prompts = (t for t in session.turns if t.kind in ("user", "command"))
    first = next(prompts, None)
    if first is not None and is_sleep_verb(first) and all(is_sleep_verb(t) for t in prompts):
        return "sleep_verbs"
    return None


def user_skills(session: Session) -> list[str]:
    """The skills `session` used but skillsleep's own (`sleep`, `skillsleep:sleep`): the user's."""
    return [name for name in session.skills if name.lower() not in SLEEP_COMMANDS]
