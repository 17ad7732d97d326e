"""`skillsleep doctor [--repair]`: check the state directory, and repair it without losing anything.

The checks and repairs are core/night/doctor.py's. This command adds what needs the machine: the data
directory, the state lock (a repair never races a night), and the harvest that reads every
transcript again after the state database was rebuilt, which brings the sessions back.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from skillsleep.core.shared.errors import Busy, ConfigError
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import emit

if TYPE_CHECKING:
    from skillsleep.core.night.doctor import Finding

Data = dict[str, Any]


def doctor(*, fix: bool = False) -> Data:
    """Every problem under the data directory with its fix; with `fix`, repair them first."""
    from skillsleep.core.night.doctor import Repair, check, repair
    from skillsleep.core.night.lock import StateLock
    from skillsleep.slash_commands.harvester import run_harvest
    from skillsleep.slash_commands.wiring import data_dir, effective_settings, state_db

    root, db = data_dir(), state_db()
    findings = check(root, db)
    result, harvest, harvest_error = Repair(), None, ""
    if fix and any(f.repairable for f in findings):
        with StateLock(root, "skillsleep doctor --repair"):
            findings = check(root, db)  # again, now that nothing else can change the files
            _refuse_while_watched(root, findings)
            result = repair(root, db, findings)
        if result.backup is not None:
            try:
                settings = effective_settings().harvest
                harvest = run_harvest(None, None, tuple(settings.redact_patterns.value), settings.chat_dir_paths())
            except ConfigError as exc:  # the repair is done; only this re-read is missing, and it can be redone
                harvest_error = (
                    f"the transcripts were not read again ({exc}); fix that, then run "
                    "`skillsleep harvest` to bring their sessions back"
                )
    remaining = [f for f in findings if not f.repaired]
    return {
        "data_dir": str(root),
        "state_db": str(db),
        "repair": fix,
        "healthy": not remaining and not harvest_error,
        "problems": [f.model_dump(mode="json") for f in findings],
        "remaining": len(remaining),
        **result.model_dump(mode="json"),
        "harvest": harvest["sessions"] if harvest else None,
        "harvest_error": harvest_error or None,
    }


def _refuse_while_watched(root: Path, findings: list[Finding]) -> None:
    """A running `skillsleep watch` writes the state database a repair moves aside and rebuilds:
    it is named, with how to stop it, and nothing is changed (a repair never stops a process)."""
    from skillsleep.core.night.lock import running, who

    watches = running(root, "watch") if any(f.kind == "state.db" and f.repairable for f in findings) else []
    if watches:
        names = "; ".join(who(w) for w in watches)
        pids = " ".join(str(w.get("pid", "?")) for w in watches)
        raise Busy(
            f"`skillsleep watch` is running ({names}) and writes the state database this repair rebuilds; "
            f"stop it first (Ctrl-C where it runs, or `kill {pids}`), run `skillsleep doctor --repair` again, "
            "then start the watch again; nothing was changed"
        )


def doctor_text(d: Data) -> str:
    from skillsleep.core.night.doctor import Finding

    lines = [f"skillsleep doctor: {d['data_dir']}"]
    if not d["problems"]:
        return "\n".join([*lines, "no problems found"])
    for f in map(Finding.model_validate, d["problems"]):
        lines.append(f"- {f.kind} {f.path}: {f.problem}")
        lines.append(f"  repaired: {f.repaired}" if f.repaired else f"  fix: {f.fix}")
    if d["harvest"] is not None:
        read = ", ".join(f"{k} {v}" for k, v in d["harvest"].items())
        lines.append(f"sessions read again from the transcripts: {read}")
    if d["harvest_error"]:
        lines.append(d["harvest_error"])
    lines += [f"lost: {what}" for what in d["lost"]]
    if d["remaining"]:
        todo = "run `skillsleep doctor --repair`" if not d["repair"] else "see the fixes above"
        lines.append(f"{d['remaining']} problem(s) remain: {todo}")
    else:
        lines.append("everything was repaired")
    return "\n".join(lines)


__all__ = ["doctor", "doctor_", "doctor_text"]


@click.command("doctor")
@click.option(
    "--repair",
    "fix",
    is_flag=True,
    help="Repair what can be: back up first, salvage what is readable, rebuild the rest; never delete.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the problems and what was repaired as JSON.")
@guard
def doctor_(fix: bool, as_json: bool) -> None:
    """Check the state directory (state.db, nights, proposals, history, skill memories); exit 1 on problems."""
    report = doctor(fix=fix)
    emit(report, as_json, doctor_text)
    if not report["healthy"]:
        sys.exit(1)
