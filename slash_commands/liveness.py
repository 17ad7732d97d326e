"""Whether a night's process still runs: a night recorded as running whose process is gone died."""

from __future__ import annotations

from skillsleep.core.night.lock import pid_alive
from skillsleep.core.night.record import NightRecord

__all__ = ["night_state"]


def night_state(r: NightRecord) -> str:
    """ "running", "finished", "stopped", or "died" for a running night whose process is gone."""
    if r.status == "running" and r.pid is not None and not pid_alive(r.pid):
        return "died"
    return r.status
