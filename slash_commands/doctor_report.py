"""What `skillsleep doctor [--repair]` finds and repairs (doctor_cmd.py is its click command and text):
`DoctorResult`, from `doctor()`.

The checks and repairs are core/night/doctor.py's. This adds what needs the machine: the data
directory, the state lock (a repair never races a night), and the harvest that reads every
transcript again after the state database was rebuilt, which brings the sessions back.
"""

from __future__ import annotations

from pathlib import Path

from skillsleep.core.night.doctor import Finding, Repair, check, repair
from skillsleep.core.night.lock import StateLock, running, who
from skillsleep.core.shared.errors import Busy, ConfigError
from skillsleep.core.shared.records import Record
from skillsleep.slash_commands.harvester import HarvestResult

__all__ = ["DoctorResult", "doctor"]


class Checked(Record):
    """What `doctor` looked at and found."""

    data_dir: str
    state_db: str
    repair: bool  # --repair was given
    healthy: bool  # nothing remains to repair, and the transcripts were read again if they had to be
    problems: list[Finding]  # each with its fix, and what was repaired
    remaining: int  # problems not repaired


class DoctorResult(Repair, Checked):
    """What `doctor --json` prints: what was found (Checked's fields come first), what the repair did
    to the state database (Repair's), then the sessions the transcripts gave back."""

    harvest: dict[str, int] | None  # sessions read again by harness, after the state database was rebuilt
    harvest_error: str | None  # why they were not read again (the repair itself is done)


def doctor(*, fix: bool = False) -> DoctorResult:
    """Every problem under the data directory with its fix; with `fix`, repair them first."""
    from skillsleep.slash_commands.wiring import data_dir, state_db

    root, db = data_dir(), state_db()
    findings = check(root, db)
    result, harvest, harvest_error = Repair(), None, ""
    if fix and any(f.repairable for f in findings):
        with StateLock(root, "skillsleep doctor --repair"):
            findings = check(root, db)  # again, now that nothing else can change the files
            _refuse_while_watched(root, findings)
            result = repair(root, db, findings)
        if result.backup is not None:
            harvest, harvest_error = _harvest_again()
    remaining = [f for f in findings if not f.repaired]
    checked = Checked(
        data_dir=str(root),
        state_db=str(db),
        repair=fix,
        healthy=not remaining and not harvest_error,
        problems=findings,
        remaining=len(remaining),
    )
    return DoctorResult(
        **checked.model_dump(),
        **result.model_dump(),
        harvest=harvest.sessions if harvest else None,
        harvest_error=harvest_error or None,
    )


def _harvest_again() -> tuple[HarvestResult | None, str]:
    """Every transcript read again into the rebuilt state database, or why it was not."""
    from skillsleep.slash_commands.harvester import run_harvest
    from skillsleep.slash_commands.wiring import effective_settings

    try:
        settings = effective_settings().harvest
        return run_harvest(None, None, tuple(settings.redact_patterns.value), settings.chat_dir_paths()), ""
    except ConfigError as exc:  # the repair is done; only this re-read is missing, and it can be redone
        return None, (
            f"the transcripts were not read again ({exc}); fix that, then run "
            "`skillsleep harvest` to bring their sessions back"
        )


def _refuse_while_watched(root: Path, findings: list[Finding]) -> None:
    """A running `skillsleep watch` writes the state database a repair moves aside and rebuilds:
    it is named, with how to stop it, and nothing is changed (a repair never stops a process)."""
    watches = running(root, "watch") if any(f.kind == "state.db" and f.repairable for f in findings) else []
    if watches:
        names = "; ".join(who(w) for w in watches)
        pids = " ".join(str(w.get("pid", "?")) for w in watches)
        raise Busy(
            f"`skillsleep watch` is running ({names}) and writes the state database this repair rebuilds; "
            f"stop it first (Ctrl-C where it runs, or `kill {pids}`), run `skillsleep doctor --repair` again, "
            "then start the watch again; nothing was changed"
        )
