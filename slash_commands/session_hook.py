"""`skillsleep harvest --hook claude-code`: Claude Code's SessionEnd hook (plugins/claude-code/hooks).

Claude Code runs the hook's shell command when a session ends, with the event's JSON on stdin
(`{"session_id", "transcript_path", "cwd", "reason", …}`), and cancels it after 1.5 s (a plugin's
own `timeout` does not extend that), printing "Hook cancelled" as the session ends. So the command
reads the event and starts this in the background with SIGHUP ignored: the session ends at once and
the harvest finishes after it, however loaded the machine. It harvests exactly that transcript
through the normal harvest path (cursors, redaction with the user's patterns), prints nothing and
always exits 0: whatever goes wrong (input that is no such event, a transcript that does not exist
because the session ran without persistence, a state database that is damaged or busy for longer
than BUSY_WAIT_S, settings that cannot be read) is one line in <data>/logs/hooks.log. The next
harvest (the night's, or `skillsleep harvest`) reads whatever this one did not.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from skillsleep.core.models.rundir import PRIVATE_FILE, private_dir
from skillsleep.core.shared.errors import SkillsleepError

HOOK_LOG = "hooks.log"  # under <data>/logs/
LOG_LIMIT = 256 * 1024  # beyond this the log is moved to hooks.log.1 (one old generation kept)
BUSY_WAIT_S = 10.0  # how long the hook waits for a state database another process is writing


def session_end(agent: str, stdin: bytes) -> None:
    """Harvest the transcript the hook's input names; never raises, logs what went wrong."""
    try:
        problem = _harvest(agent, stdin)
    except SkillsleepError as exc:
        problem = str(exc)
    except Exception as exc:  # the boundary: an agent's session end must never fail because of skillsleep
        problem = f"unexpected {type(exc).__name__}: {exc}"
    if problem:
        _log(agent, problem)


def _harvest(agent: str, stdin: bytes) -> str | None:
    """Harvest; a problem in words when there was nothing to harvest or it was unreadable."""
    from skillsleep.slash_commands.harvester import run_harvest
    from skillsleep.slash_commands.wiring import check_data_dir, effective_settings

    check_data_dir()
    try:
        event = json.loads(stdin)
    except ValueError:
        return "the hook's input is not JSON"
    path = event.get("transcript_path") if isinstance(event, dict) else None
    if not isinstance(path, str) or not path:
        return "the hook's input names no transcript_path"
    patterns = tuple(effective_settings().harvest.redact_patterns.value)
    report = run_harvest(agent, None, patterns, transcript=Path(path), busy_timeout_s=BUSY_WAIT_S)
    return "; ".join(report.unreadable) or None


def _log(agent: str, problem: str) -> None:
    """One line in <data>/logs/hooks.log; on stderr when even that cannot be written."""
    from skillsleep.slash_commands.wiring import data_dir

    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    line = f"{when} {agent} SessionEnd hook: {' '.join(problem.split())}; nothing was harvested\n"
    try:
        log = data_dir() / "logs" / HOOK_LOG
        private_dir(log.parent)
        if log.exists() and log.stat().st_size > LOG_LIMIT:
            os.replace(log, log.with_name(HOOK_LOG + ".1"))
        with os.fdopen(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE), "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:  # no usable data folder: the agent may show stderr, but its exit stays 0
        sys.stderr.write(line)
