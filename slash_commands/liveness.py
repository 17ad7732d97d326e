"""Whether a night's process still runs: a night recorded as running whose process is gone died."""

from __future__ import annotations

import os

from skillsleep.core.nights import NightRecord

__all__ = ["night_state", "pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError, OSError):
        return False
    return True


def night_state(r: NightRecord) -> str:
    """ "running", "finished", "stopped", or "died" for a running night whose process is gone."""
    if r.status == "running" and r.pid is not None and not pid_alive(r.pid):
        return "died"
    return r.status
