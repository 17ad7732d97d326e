"""Backups of a user's live skill, one folder for each time adopt or rollback replaced it.

    <data>/backups/<n>-<id>/SKILL.md    the live file as it was before (its own mode kept)
    <data>/backups/<n>-<id>/absent      instead of SKILL.md: there was no live file then
    <data>/backups/<n>-<id>/meta.json   the live file's path, why, its hash and when

<n> counts up from 00001 and <id> is the proposal adopted ("rollback" for a rollback). Only
core/report/proposals.py writes here: a backup is made before the live file is touched, and a rollback
restores the live file from one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from skillsleep.core.models.rundir import file_mode, write_atomic, write_private
from skillsleep.core.report.proposal_record import ABSENT, file_hash, read_text


def back_up(backups: Path, live: Path, pid: str | None, *, reason: str) -> str:
    """The live file as it is now, in a new folder under `backups` (returned as a string)."""
    n = len(list(backups.iterdir())) if backups.is_dir() else 0
    folder = backups / f"{n + 1:05d}-{pid or 'rollback'}"
    if live.exists():
        write_private(folder / "SKILL.md", live.read_bytes(), mode=file_mode(live))
    else:
        write_private(folder / "absent", "")
    meta = {"skill_path": str(live), "reason": reason, "hash": file_hash(live), "time": datetime.now(UTC).isoformat()}
    write_private(folder / "meta.json", json.dumps(meta))
    return str(folder)


def restore(folder: Path, live: Path) -> None:
    """Put the live file back as the backup in `folder` holds it: removed when there was none,
    otherwise replaced atomically, with the mode it had then."""
    if (folder / "absent").exists():
        live.unlink(missing_ok=True)
    else:
        source = folder / "SKILL.md"
        write_atomic(live, source.read_bytes(), new_mode=file_mode(source))


def held(folder: Path) -> tuple[str, str] | None:
    """(hash, text) of what a restore from `folder` writes (ABSENT and "" for no file); None when
    the backup's file is gone."""
    if (folder / "absent").exists():
        return ABSENT, ""
    source = folder / "SKILL.md"
    return (file_hash(source), read_text(source)) if source.is_file() else None
