#!/usr/bin/env python3
"""`/sleep VERB [ARGS...]` by hand, outside OpenClaw: `skillsleep sleep VERB [ARGS...]` with this
plugin's settings (config.json beside this file), as the /sleep command runs it.

    python3 slash_sleep.py status
    python3 slash_sleep.py adopt --edits 1,3

Every setting but `command` is a [sleep] setting of skillsleep, passed as SKILLSLEEP_<KEY>; an
empty one (or 0) leaves skillsleep's own settings in charge (index.js applies the same rule).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def skillsleep(args: list[str]) -> None:
    """Replace this process with `<command> ARGS` under the plugin's settings."""
    config = json.loads(Path(__file__).with_name("config.json").read_text(encoding="utf-8"))
    command = config.get("command") or "skillsleep"
    env = dict(os.environ)
    env.update(
        {
            f"SKILLSLEEP_{key.upper()}": str(value)
            for key, value in config.items()
            if key != "command" and value not in ("", 0, None)
        }
    )
    try:
        os.execvpe(command, [command, *args], env)
    except OSError as exc:  # the one way this script fails: say what to do, never a traceback
        sys.exit(
            f"cannot run skillsleep at {command!r} ({exc.strerror}); install skillsleep and run "
            '`skillsleep install openclaw`, or set "command" in config.json to its path'
        )


if __name__ == "__main__":
    skillsleep(["sleep", *sys.argv[1:]])
