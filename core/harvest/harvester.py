"""Incremental harvest: read only new transcript bytes, redact, merge into stored sessions.

Each transcript file has a cursor in the state database: its identity (device, inode), size,
mtime, the offset read up to, and a hash of its first bytes. On the next harvest:

    unchanged (same identity, size and mtime)  → not opened at all
    grown, same identity and head               → read from the old offset only
    shrunk, replaced or a different head        → read again from the start, old sessions replaced

A half-written last line is left for next time (the parsers never consume it) and reported as
waiting. Sessions are redacted before they are stored; a continuation chunk is merged into the
stored session. Files are stored in batches (`BATCH_FILES` files or `BATCH_BYTES` read), each
one transaction: a file's sessions and its cursor are committed together, so a harvest killed
mid-way loses only its open batch, which the next harvest reads again (no loss, no duplicate).
With a lot to read, worker processes parse and redact the files (`core.harvest.read`) while this
process stores what they read, in the same order and batches. Every session read is stored: `since` only decides which ones the report counts
as new (the others are counted apart, in `before_since`), so a later night can still mine them;
except skillsleep's own sessions (`core.harvest.own`: its replays, its model calls, a session of
nothing but `/sleep` verbs), which are never stored and are counted in `own_sessions`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from skillsleep.core.harvest.discovery import Found
from skillsleep.core.harvest.read import (
    HEAD_BYTES,
    ChunkRead,
    FileRead,
    Job,
    ReadPool,
    Unreadable,
    chunk,
    head_of,
    read_file,
)
from skillsleep.core.harvest.read import (
    Parser as Parser,  # re-exported: the parsers are typed by it (harnesses, slash_commands)
)
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.records import Record
from skillsleep.core.shared.session import ParseResult, Session, source_key

# A database of transcript events: (path, last seq read per session) → (new events, new seqs).
DbReader = Callable[[Path, dict[str, int]], tuple[ParseResult, dict[str, int]]]
# One commit per batch instead of per statement: a commit is a disk sync, and a batch bounds both
# the work a kill throws away and how long another process waits for SQLite's write lock. SQLite's
# synchronous=FULL stays: a sync per batch costs nothing measurable, and NORMAL (safe against a kill
# in WAL mode) could lose the last batches to a power cut after the harvest said they were stored.
BATCH_FILES = 1024
BATCH_BYTES = 32 * 1024 * 1024
# Worker processes cost a start-up (a fork, or a fork server whose workers import the parsers):
# below this much to read, one process reads faster than several.
POOL_MIN_BYTES = 32 * 1024 * 1024


class Source(Record):
    """One transcript file (JSONL) or event database (SQLite) and the harness that reads it."""

    harness: str
    path: Path
    kind: Literal["jsonl", "sqlite"] = "jsonl"


class DbCursor(Record):
    """Where an event database was read up to: file stats (its own and its WAL's) and seqs."""

    stats: list[int]
    seqs: dict[str, int] = Field(default_factory=dict)


class Cursor(Record):
    """How far a transcript file has been read, and how to recognise it again."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    offset: int
    head: str  # sha256 of the first min(offset, HEAD_BYTES) bytes


class HarvestReport(Record):
    """What one harvest found (counts of new material only), and what it left out and why."""

    sessions: dict[str, int] = Field(default_factory=dict)  # new or updated sessions per harness (after `since`)
    before_since: int = 0  # new or updated sessions that ended before `since`: stored, not counted above
    own_sessions: int = 0  # skillsleep's own sessions (its replays, model calls, /sleep verbs): never stored
    turns: int = 0
    tools: Counter[str] = Field(default_factory=Counter)
    errors: int = 0
    skipped: Counter[str] = Field(default_factory=Counter)
    bytes_read: int = 0
    files_seen: int = 0
    files_read: int = 0
    files_reset: int = 0
    unreadable: list[str] = Field(default_factory=list)  # "path: error" of files or folders that could not be read
    waiting_files: int = 0  # files whose last line is not finished yet: it is read once it ends
    waiting_bytes: int = 0
    # per harness, the new or updated sessions (after `since`) that used each of the user's skills
    skills: dict[str, Counter[str]] = Field(default_factory=dict)

    def add_found(self, found: Found) -> None:
        """Count what finding the transcript files could not read or use (`core.harvest.discovery`)."""
        self.unreadable += found.unreadable
        self.skipped.update(found.skipped)


def _db_stats(path: Path) -> list[int]:
    out: list[int] = []
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            st = os.stat(p)
            out += [st.st_ino, st.st_size, st.st_mtime_ns]
        except FileNotFoundError:
            out += [0, 0, 0]
    return out


def _waiting(report: HarvestReport, unread: int) -> None:
    """Count a file whose last `unread` bytes are a line still being written (none when 0)."""
    if unread > 0:
        report.waiting_files += 1
        report.waiting_bytes += unread


def merge(old: Session, new: Session) -> Session:
    """A stored session extended by a continuation chunk of the same transcript."""
    starts = [t for t in (old.started, new.started) if t is not None]
    ends = [t for t in (old.ended, new.ended) if t is not None]
    return old.model_copy(
        update={
            "turns": [*old.turns, *new.turns],
            "models": [*old.models, *(m for m in new.models if m not in old.models)],
            "skills": [*old.skills, *(k for k in new.skills if k not in old.skills)],
            "usage": old.usage + new.usage,
            "started": min(starts) if starts else None,
            "ended": max(ends) if ends else None,
            "byte_end": max(old.byte_end, new.byte_end),
            "project": old.project or new.project,
            "agent_version": new.agent_version or old.agent_version,
        }
    )


class Harvester:
    """Runs the incremental harvest of a set of transcript files into the store.

    With `workers` > 1 and at least `POOL_MIN_BYTES` to read, files are read (parsed, redacted,
    serialised) by that many worker processes while this one stores what they read, in the order
    of `sources`; what is stored is the same either way."""

    def __init__(
        self,
        store: Store,
        parsers: dict[str, Parser],
        redactor: Redactor,
        db_readers: dict[str, DbReader] | None = None,
        *,
        workers: int = 1,
    ) -> None:
        self.store = store
        self.parsers = parsers
        self.db_readers = db_readers or {}
        self.redactor = redactor
        self.workers = workers

    def harvest(self, sources: Sequence[Source], *, since: datetime | None = None) -> HarvestReport:
        """Read what is new in every source and store it; sessions that ended before `since` are
        stored too, but counted in `before_since` instead of `sessions`."""
        report = HarvestReport(files_seen=len(sources))
        plans = (p for p in (self._plan(s, report) for s in sources) if p is not None)  # one at a time
        pool = None
        if self.workers > 1 and self._new_bytes_reach(sources, POOL_MIN_BYTES):
            pool = ReadPool(self.parsers, self.redactor, self.workers)
        try:
            stream = pool.read(plans) if pool else ((p, self._read_here(p)) for p in plans)
            item = next(stream, None)
            while item is not None:
                with self.store.transaction():
                    files, batch_start = 0, report.bytes_read
                    while item is not None and files < BATCH_FILES and report.bytes_read - batch_start < BATCH_BYTES:
                        self._apply(*item, report, since)
                        files += 1
                        item = next(stream, None)
        finally:
            if pool is not None:
                pool.close()
        return report

    def _new_bytes_reach(self, sources: Sequence[Source], enough: int) -> bool:
        """Whether the transcript files hold at least `enough` bytes past their cursors, in more
        than one file (a quick look: stats and cursors, stopping as soon as they do)."""
        total, files = 0, 0
        for source in sources:
            if source.kind != "jsonl":
                continue
            try:
                st = os.stat(source.path)
            except OSError:
                continue
            raw = self.store.cursor(source_key(source.path))
            offset = int(raw.get("offset", 0)) if raw and raw.get("inode") == st.st_ino else 0
            if st.st_size > offset:
                total, files = total + st.st_size - offset, files + 1
            if total >= enough and files > 1:
                return True
        return False

    def _plan(self, source: Source, report: HarvestReport) -> Job | Source | Unreadable | None:
        """What to do with `source`: a `Job` (read it from an offset), the source itself (an event
        database, read here), `Unreadable` (counted in its turn) or None (unchanged)."""
        if source.kind == "sqlite":
            return source
        key = source_key(source.path)
        try:
            st = os.stat(source.path)
            raw = self.store.cursor(key)
            cursor = Cursor.model_validate(raw) if raw else None
            same_file = cursor is not None and (cursor.device, cursor.inode) == (st.st_dev, st.st_ino)
            if cursor and same_file and cursor.size == st.st_size and cursor.mtime_ns == st.st_mtime_ns:
                _waiting(report, cursor.size - cursor.offset)
                return None  # unchanged: not a byte read
            start = 0
            if (
                cursor
                and same_file
                and st.st_size >= cursor.offset
                and head_of(source.path, min(cursor.offset, HEAD_BYTES)) == cursor.head
            ):
                start = cursor.offset
        except OSError as exc:  # vanished or unreadable file: counted and named, never fatal
            return Unreadable.of(key, exc)
        return Job(
            harness=source.harness,
            path=source.path,
            key=key,
            start=start,
            reset=cursor is not None and start == 0,
            cursor=raw,
            device=st.st_dev,
            inode=st.st_ino,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
        )

    def _read_here(self, plan: Job | Source | Unreadable) -> FileRead | None:
        if not isinstance(plan, Job):
            return None
        return read_file(self.parsers[plan.harness], self.redactor, plan.path, plan.key, plan.start)

    def _apply(
        self, plan: Job | Source | Unreadable, read: FileRead | None, report: HarvestReport, since: datetime | None
    ) -> None:
        """Store what reading `plan` gave (or read the event database it is), with its cursor."""
        if isinstance(plan, Unreadable):
            _unreadable(report, plan)
            return
        if isinstance(plan, Source):
            try:
                self._db(plan, source_key(plan.path), report, since)
            except OSError as exc:
                _unreadable(report, Unreadable.of(source_key(plan.path), exc))
            return
        if plan.cursor != self.store.cursor(plan.key):  # another harvest stored this file meanwhile
            fresh = self._plan(Source(harness=plan.harness, path=plan.path), report)
            if not isinstance(fresh, Job):
                if fresh is not None:
                    self._apply(fresh, None, report, since)
                return
            plan, read = fresh, self._read_here(fresh)
        assert read is not None
        if read.unreadable is not None:
            _unreadable(report, read.unreadable)
            return
        if plan.reset:
            report.files_reset += 1
            self.store.delete_sessions_from(plan.key)
        self.redactor.counts.update(read.redactions)
        report.files_read += 1
        report.bytes_read += read.data_len
        report.skipped.update(read.skipped)
        for c in read.sessions:
            self._store(plan.harness, c, report, since)
        offset = plan.start + read.bytes_read
        _waiting(report, read.data_len - read.bytes_read)
        cursor = Cursor(
            device=plan.device, inode=plan.inode, size=plan.size, mtime_ns=plan.mtime_ns, offset=offset, head=read.head
        )
        self.store.set_cursor(plan.key, cursor.model_dump())

    def _db(self, source: Source, key: str, report: HarvestReport, since: datetime | None) -> None:
        stats = _db_stats(source.path)
        old = self.store.cursor(key)
        cursor = DbCursor.model_validate(old) if old else DbCursor(stats=[])
        if cursor.stats == stats:
            return  # neither the database nor its write-ahead log changed
        parsed, seqs = self.db_readers[source.harness](source.path, cursor.seqs)
        report.files_read += 1
        report.skipped.update(parsed.skipped)
        for session in parsed.sessions:
            self._store(source.harness, chunk(self.redactor.session(session)), report, since)
        if not parsed.skipped.get("sqlite_locked"):
            self.store.set_cursor(key, DbCursor(stats=stats, seqs=seqs).model_dump())

    def _store(self, harness: str, c: ChunkRead, report: HarvestReport, since: datetime | None) -> None:
        if c.own is not None:  # skillsleep's own session (`core.harvest.own`): never stored, never mined
            report.own_sessions += 1
            return
        stored = self.store.session(harness, c.id)
        ended = c.ended
        if stored is not None and stored.source == c.source and c.byte_start >= stored.byte_end:
            merged = merge(stored, c.session())
            self.store.put_session(merged)
            ended = merged.ended
        else:
            self.store.put_session_json(c.harness, c.id, c.source, c.ended, c.data)
        if since is not None and ended is not None and ended < since:
            report.before_since += 1
            return
        report.sessions[harness] = report.sessions.get(harness, 0) + 1
        report.turns += c.turns
        report.tools.update(c.tools)
        report.errors += c.errors
        if c.skills:
            report.skills.setdefault(harness, Counter()).update(c.skills)


def _unreadable(report: HarvestReport, what: Unreadable) -> None:
    report.skipped[f"unreadable_file:{what.kind}"] += 1
    report.unreadable.append(what.message)
