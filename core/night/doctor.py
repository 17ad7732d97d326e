"""`skillsleep doctor`: check every file under a data directory, and repair what can be repaired.

    the data folder           yours alone (an older skillsleep made it 0755): --repair chmods it 700
    state.db                  opens read-only, SQLite's integrity check, the schema version
    nights/*/night.json       each night's record
    staging/*/proposal.json   each proposal
    history.jsonl             every line
    sleep/*.json              each skill's memory

`check()` only reads. `repair()` never deletes anything:

    state.db        moved, with its WAL files, into state-backups/<time>/ (kept exactly as it was);
                    a new one gets every row a copy of it still yields (sessions, small named
                    values, the ledger of `skillsleep train` runs) and each night's calls from the
                    night's own ledger.jsonl. The response cache is dropped (a cache), and so are
                    the harvest cursors, so that the harvest which follows (the command runs it)
                    reads every transcript still on disk again and brings its sessions back.
    history.jsonl   copied whole to history.jsonl.broken-<time>, then rewritten without the lines
                    that cannot be read
    a record        renamed <name>.broken-<time>; a skill's memory is then rebuilt from the nights
                    that trained the skill (task splits from their plans, rejected edits and the
                    optimizer's notes from the last one's state)
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from skillsleep.core.models.ledger import read_ledger
from skillsleep.core.models.rundir import PRIVATE_DIR, private_dir
from skillsleep.core.models.store import HOLDS, Salvage, Store, check_database, salvage
from skillsleep.core.night.nights import Nights, SkillMemory
from skillsleep.core.night.rejections import remembered
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.report.proposal_record import Action
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.jsonl import line_label, read_records
from skillsleep.core.shared.records import Record
from skillsleep.core.train.state import TrainState

Kind = Literal["data folder", "state.db", "night", "proposal", "history", "memory"]

REBUILD_HINT = {  # what the lost part of a table means, when salvage could not read all of it
    "sessions": "harvested sessions in damaged rows: those whose transcripts are still on disk are read again by "
    "the harvest that follows; the others are lost",
    "calls": "ledger rows of `skillsleep train` runs in damaged rows (each run's own ledger.jsonl still has them)",
    "meta": "the last harvest's summary (the next harvest writes it again)",
}


class Finding(Record):
    """One problem: where, what is wrong, what fixes it, and what `--repair` did about it."""

    kind: Kind
    path: str
    problem: str
    fix: str
    repairable: bool = True
    repaired: str = ""


class Repair(Record):
    """What `repair()` did to the state database (when it was damaged) and what could not be saved."""

    backup: str | None = None  # the folder the damaged state.db went to
    salvaged: Salvage | None = None
    rebuilt_calls: int = 0  # nights' calls put back from their ledger.jsonl
    lost: list[str] = Field(default_factory=list)


def _unreadable(kind: Kind, unreadable: list[tuple[Path, str]], fix: Callable[[Path], str]) -> list[Finding]:
    """A finding of `kind` for each (file, why) a listing could not read, with `fix(file)`."""
    return [Finding(kind=kind, path=str(path), problem=why, fix=fix(path)) for path, why in unreadable]


def check(root: Path, db: Path) -> list[Finding]:
    """Every problem under the data directory `root` (state database `db`), each with its fix."""
    found = _folder_findings(root) + _database_findings(db)
    nights, proposals = Nights(root), Proposals(root)
    nights.list()
    proposals.list()
    aside = "`skillsleep doctor --repair` moves it aside;"
    found += [
        *_unreadable(
            "night",
            nights.unreadable,
            lambda _: f"{aside} the night's other files stay, and status no longer lists that night",
        ),
        *_unreadable(
            "proposal",
            proposals.unreadable,
            lambda path: f"{aside} that proposal can then no longer be adopted (its skill stays in {path.parent})",
        ),
    ]
    proposals.history()
    if proposals.bad_history:
        lines = "; ".join(f"{line_label(n)}: {why}" for n, why in proposals.bad_history)
        found.append(
            Finding(
                kind="history",
                path=str(proposals.history_path),
                problem=lines,
                fix="`skillsleep doctor --repair` keeps the whole file as history.jsonl.broken-<time> "
                "and rewrites it without those lines (rollback refuses until then)",
            )
        )
    found += [
        Finding(
            kind="memory",
            path=str(path),
            problem=why,
            fix="`skillsleep doctor --repair` moves it aside and rebuilds it from the nights that trained the skill",
        )
        for path, why in nights.unreadable_memories()
    ]
    return found


def _folder_findings(root: Path) -> list[Finding]:
    """The data folder, when other users may enter it (an older skillsleep made it 0755 under
    umask 022): it holds every harvested conversation."""
    try:
        st = os.stat(root)
    except OSError:
        return []
    if not stat.S_ISDIR(st.st_mode) or not st.st_mode & 0o077 or st.st_uid != os.geteuid():
        return []
    return [
        Finding(
            kind="data folder",
            path=str(root),
            problem=f"other users may read it (mode {stat.S_IMODE(st.st_mode):o}), and it holds every harvested "
            "conversation",
            fix=f"`skillsleep doctor --repair` makes it yours alone (chmod 700 {root})",
        )
    ]


def _database_findings(db: Path) -> list[Finding]:
    """The state database's problem, if it has one (none when there is no database yet)."""
    if not db.is_file():
        return []
    problem, repairable = check_database(db)
    if not problem:
        return []
    fix = (
        f"`skillsleep doctor --repair` backs it up, salvages what it can read and rebuilds the rest (it holds {HOLDS})"
        if repairable
        else "upgrade skillsleep"
    )
    return [Finding(kind="state.db", path=str(db), problem=problem, fix=fix, repairable=repairable)]


def repair(root: Path, db: Path, findings: list[Finding]) -> Repair:
    """Repair every repairable finding (see the module docstring); sets each one's `repaired`.
    The caller holds the state lock, and harvests afterwards when the state database was rebuilt."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    result = Repair()
    for f in findings:
        if not f.repairable:
            continue
        path = Path(f.path)
        if f.kind == "state.db":
            f.repaired = _rebuild_database(root, db, stamp, result)
        elif f.kind == "data folder":
            os.chmod(path, PRIVATE_DIR)
            f.repaired = "made yours alone (0700)"
        elif f.kind == "history":
            f.repaired = _clean_history(root, stamp)
        elif f.kind == "memory":
            moved = _aside(path, stamp)
            f.repaired = f"moved aside to {moved.name}; " + _rebuild_memory(root, path, result)
        else:
            f.repaired = f"moved aside to {_aside(path, stamp)}"
    return result


def _aside(path: Path, stamp: str) -> Path:
    """Rename a damaged file out of the way (never deleted); returns its new path."""
    target = path.with_name(f"{path.name}.broken-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.broken-{stamp}-{n}")
    os.replace(path, target)
    return target


def _rebuild_database(root: Path, db: Path, stamp: str, result: Repair) -> str:
    backup = root / "state-backups" / stamp
    n = 1
    while backup.exists():
        n += 1
        backup = root / "state-backups" / f"{stamp}-{n}"
    private_dir(backup)
    for suffix in ("", "-wal", "-shm"):  # the WAL belongs to the damaged file: it must not meet the new one
        part = db.with_name(db.name + suffix)
        if part.exists():
            os.replace(part, backup / part.name)
    result.backup = str(backup)
    nights = Nights(root)
    folders = nights.folders()
    store = Store(db)
    try:
        with tempfile.TemporaryDirectory(dir=root) as scratch:  # opening a file may change it: use a copy
            for name in (db.name, db.name + "-wal"):
                if (backup / name).exists():
                    shutil.copyfile(backup / name, Path(scratch) / name)
            result.salvaged = salvage(Path(scratch) / db.name, store, skip_runs={str(f) for f in folders})
        for folder in folders:
            for entry in read_ledger(folder / "ledger.jsonl").entries:
                store.record_call(str(folder), entry)
                result.rebuilt_calls += 1
    finally:
        store.close()
    result.lost.append("the response cache (a cache: answers are asked for again when needed)")
    result.lost += [REBUILD_HINT.get(t, t) for t in result.salvaged.unreadable]
    s = result.salvaged
    return (
        f"moved to {backup}; salvaged {s.sessions} sessions, {s.meta} named values and {s.calls} ledger rows "
        f"of other runs, rebuilt {result.rebuilt_calls} ledger rows from the nights' ledger.jsonl"
    )


def _clean_history(root: Path, stamp: str) -> str:
    proposals = Proposals(root)
    path = proposals.history_path
    _, bad = read_records(path, Action)
    whole = path.with_name(f"history.jsonl.broken-{stamp}")
    if any(n == 0 for n, _ in bad):  # not readable at all (a folder, no permission): set it aside whole
        os.replace(path, whole)
        return f"moved it aside as {whole.name}; the history starts afresh (the backups stay in backups/)"
    raw = path.read_bytes()
    drop = {n for n, _ in bad}
    keep = [line for n, line in enumerate(raw.split(b"\n"), 1) if n not in drop and line.strip()]
    shutil.copy2(path, whole)
    tmp = path.with_name(f".{path.name}.{stamp}")
    tmp.write_bytes(b"".join(line + b"\n" for line in keep))
    shutil.copymode(path, tmp)
    os.replace(tmp, path)
    return f"the whole file is kept as {whole.name}; removed line(s) {', '.join(str(n) for n in sorted(drop))}"


def _rebuild_memory(root: Path, path: Path, result: Repair) -> str:
    """A skill's memory again, from the nights that trained it (as `skillsleep run` builds it)."""
    nights = Nights(root)
    records = [r for r in nights.list() if nights.memory_path(r.skill_path) == path]
    trained = [
        r
        for r in records
        if r.status == "finished" and not r.dry_run and (nights.folder(r.night) / "state.json").is_file()
    ]
    if not records:
        result.lost.append(f"{path.name}: no readable night trained its skill, so that memory starts afresh")
        return "no night of its skill was found, so it starts afresh"
    memory = SkillMemory(skill_path=records[0].skill_path)
    for r in trained:
        folder = nights.folder(r.night)
        try:
            plan = NightPlan.model_validate_json((folder / "plan.json").read_bytes())
            memory.learn(plan.splits, plan.mined.tasks, r.night)
            state = TrainState.model_validate_json((folder / "state.json").read_bytes())
        except (OSError, ValidationError):
            result.lost.append(
                f"{path.name}: night {r.night}'s plan or state cannot be read, so its task splits "
                "are not in the rebuilt memory"
            )
            continue
        memory.rejected, memory.meta_skill = list(state.rejected), state.meta_skill
        memory.nights.append(r.night)
    rejected, unreadable = remembered(Proposals(root), nights, path)
    memory.rejected += [e for e in rejected if e not in memory.rejected]
    result.lost += [
        f"{path.name}: the staged files of rejected proposal {pid} cannot be read, so later nights may propose "
        "its changes again (reject them again if they come back)"
        for pid in unreadable
    ]
    nights.save_memory(memory)
    return f"rebuilt from night(s) {', '.join(str(n) for n in memory.nights) or 'none'}"
