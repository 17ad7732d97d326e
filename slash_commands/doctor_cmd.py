"""`skillsleep doctor [--repair]`: check the state directory, and repair it without losing anything —
the click command and its text; what it finds and repairs is doctor_report.py's `DoctorResult`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import emit

if TYPE_CHECKING:
    from skillsleep.slash_commands.doctor_report import DoctorResult

__all__ = ["doctor_", "doctor_text"]


def doctor_text(d: DoctorResult) -> str:
    lines = [f"skillsleep doctor: {d.data_dir}"]
    if not d.problems:
        return "\n".join([*lines, "no problems found"])
    for f in d.problems:
        lines.append(f"- {f.kind} {f.path}: {f.problem}")
        lines.append(f"  repaired: {f.repaired}" if f.repaired else f"  fix: {f.fix}")
    if d.harvest is not None:
        read = ", ".join(f"{k} {v}" for k, v in d.harvest.items())
        lines.append(f"sessions read again from the transcripts: {read}")
    if d.harvest_error:
        lines.append(d.harvest_error)
    lines += [f"lost: {what}" for what in d.lost]
    if d.remaining:
        todo = "run `skillsleep doctor --repair`" if not d.repair else "see the fixes above"
        lines.append(f"{d.remaining} problem(s) remain: {todo}")
    else:
        lines.append("everything was repaired")
    return "\n".join(lines)


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
    from skillsleep.slash_commands.doctor_report import doctor

    report = doctor(fix=fix)
    emit(report, as_json, doctor_text)
    if not report.healthy:
        sys.exit(1)
