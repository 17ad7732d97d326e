"""Reading one transcript file for the harvest: parse, redact and serialise its new sessions.

This is the part of a harvest that costs CPU (decoding JSON, building turns, scanning for
secrets); it touches no database, so it runs the same in the harvesting process or in worker
processes (`ReadPool`), which read several files at once on a machine with more than one core.
The harvest itself (`core.harvest`) decides what to read from the cursors and stores the results
in order, in its own transactions: where a file was read never changes what is stored.

Workers are forked on Linux when the harvesting process runs no other thread, else started by a
fork server (`spawn` where that is missing); a worker builds its own `Redactor` from the same
patterns. A worker that dies (killed, out of memory) ends the harvest with an error; what was
committed before stays, the open batch is rolled back and read again by the next harvest.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import os
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field

from skillsleep.core.harvest.own import OwnReason, own_reason, user_skills
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record
from skillsleep.core.shared.session import ParseResult, Session

Parser = Callable[[bytes, str, int], ParseResult]  # (data, source, base_offset)
HEAD_BYTES = 1024
TASK_BYTES = 4 * 1024 * 1024  # a worker reads consecutive files up to this much in one task
TASK_FILES = 256
T = TypeVar("T")


class ChunkRead(Record):
    """One session of a file as read: already redacted, serialised, and what the report counts."""

    harness: str
    id: str
    source: str
    ended: datetime | None = None
    byte_start: int
    data: bytes  # the redacted Session as JSON (UTF-8), as the store keeps it
    turns: int
    tools: Counter[str] = Field(default_factory=Counter)  # tool_call names
    errors: int = 0
    own: OwnReason | None = None  # why it is skillsleep's own session (`core.harvest.own`): never stored
    skills: list[str] = Field(default_factory=list)  # the user's skills it used (`Session.skills`)

    def session(self) -> Session:
        return Session.model_validate_json(self.data)


class Unreadable(Record):
    """A file the harvest could not read: counted and named in the report, in its turn."""

    kind: str  # the OSError's type name
    message: str  # "path: reason"

    @classmethod
    def of(cls, key: str, exc: OSError) -> Unreadable:
        return cls(kind=type(exc).__name__, message=f"{key}: {exc.strerror or exc}")


class FileRead(Record):
    """What reading one transcript file from an offset gave."""

    sessions: list[ChunkRead] = Field(default_factory=list)
    skipped: Counter[str] = Field(default_factory=Counter)
    data_len: int = 0  # bytes read from the offset
    bytes_read: int = 0  # of them, the complete lines parsed (a half-written last line is left)
    head: str = ""  # sha256 of the file's first min(offset after reading, HEAD_BYTES) bytes
    redactions: Counter[str] = Field(default_factory=Counter)
    unreadable: Unreadable | None = None  # the OSError that kept the file from being read


def chunk(session: Session) -> ChunkRead:
    """A redacted session as the harvest stores and counts it."""
    turns = session.turns
    if session.skills:
        session.skills = user_skills(session)  # skillsleep's own `/sleep` is no skill of the user's
    return ChunkRead(
        harness=session.harness,
        id=session.id,
        source=session.source,
        ended=session.ended,
        byte_start=session.byte_start,
        data=session.__pydantic_serializer__.to_json(session),
        turns=len(turns),
        tools=Counter(t.tool for t in turns if t.kind == "tool_call" and t.tool),
        errors=sum(t.kind == "error" or (t.kind == "tool_result" and t.is_error) for t in turns),
        own=own_reason(session),
        skills=session.skills,
    )


def head_of(path: Path, n: int) -> str:
    """sha256 of a file's first `n` bytes."""
    with path.open("rb") as fh:
        return hashlib.sha256(fh.read(n)).hexdigest()


def read_file(parser: Parser, redactor: Redactor, path: Path, key: str, start: int) -> FileRead:
    """Parse `path` from byte `start`, redact every session and serialise it; an OSError is
    returned as `error`, never raised (the harvest counts the file as unreadable)."""
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            data = fh.read()
        parsed = parser(data, key, start)
        offset = start + parsed.bytes_read
        head = (
            head_of(path, min(offset, HEAD_BYTES))
            if start
            else hashlib.sha256(data[: min(offset, HEAD_BYTES)]).hexdigest()
        )
    except OSError as exc:
        return FileRead(unreadable=Unreadable.of(key, exc))
    sessions = [chunk(redactor.session(s)) for s in parsed.sessions]
    return FileRead(
        sessions=sessions,
        skipped=parsed.skipped,
        data_len=len(data),
        bytes_read=parsed.bytes_read,
        head=head,
    )


class Job(Record):
    """One transcript file to read from `start`, and what the harvest knew of it when it chose to:
    the stored cursor (`reset`: it no longer fits, so the file's sessions are read again) and the
    file's identity, size and mtime, which its new cursor records."""

    harness: str  # the parser's key
    path: Path
    key: str  # source_key(path)
    start: int
    reset: bool = False
    cursor: dict[str, Any] | None = None  # the stored cursor as it was
    device: int = 0
    inode: int = 0
    size: int = 0
    mtime_ns: int = 0


# -- worker processes ---------------------------------------------------------------------------

_worker: tuple[dict[str, Parser], Redactor] | None = None


def _init_worker(parsers: dict[str, Parser], patterns: tuple[str, ...], engine: str) -> None:
    global _worker
    _worker = (parsers, Redactor(patterns, engine=engine))


def _read_jobs(jobs: list[Job]) -> list[FileRead]:
    assert _worker is not None, "a harvest worker runs _init_worker first"
    parsers, redactor = _worker
    out = []
    for job in jobs:
        before = Counter(redactor.counts)
        read = read_file(parsers[job.harness], redactor, job.path, job.key, job.start)
        read.redactions = redactor.counts - before  # counted where the harvest's own redactor is
        out.append(read)
    return out


def default_workers() -> int:
    """Worker processes for a large harvest: one per core the process may use, at most 4 (more
    adds little: the harvesting process stores what they read, one file at a time)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(4, cores))


def start_method_here() -> str:
    """How worker processes start: a plain fork on Linux while this process runs no other thread
    (no import to repeat: workers start in milliseconds), else a fork server (or spawn where that is
    missing): forking a process with threads can copy a lock some thread holds."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


class ReadPool:
    """Worker processes that read files ahead of the harvest, results handed back in job order;
    at most `2 × workers` tasks of up to `TASK_BYTES` each are in flight, so memory stays bounded."""

    def __init__(self, parsers: dict[str, Parser], redactor: Redactor, workers: int) -> None:
        method = start_method_here()
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":  # each worker forks from a server that imported the parsers once
            ctx.set_forkserver_preload(sorted({__name__} | {p.__module__ for p in parsers.values()} - {"__main__"}))
        self.workers = workers
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(parsers, redactor.patterns, redactor.engine),
        )

    def read(self, items: Iterable[T]) -> Iterator[tuple[T, FileRead | None]]:
        """Each item with what reading it gave (None for an item that is not a `Job`: it passes
        through in its place), in the order of `items`. Consecutive jobs go to a worker together,
        up to `TASK_BYTES` to read: one round trip per file would leave the workers waiting."""
        window: deque[tuple[list[T], concurrent.futures.Future[list[FileRead]] | None]] = deque()
        batch: list[T] = []
        pending = 0  # bytes the jobs of `batch` read
        try:
            for item in items:
                batch.append(item)
                if isinstance(item, Job):
                    pending += max(item.size - item.start, 0)
                if pending >= TASK_BYTES or len(batch) >= TASK_FILES:
                    window.append((batch, self._submit(batch)))
                    batch, pending = [], 0
                while len(window) >= 2 * self.workers:
                    yield from _paired(*window.popleft())
            if batch:
                window.append((batch, self._submit(batch)))
            while window:
                yield from _paired(*window.popleft())
        finally:
            for _, future in window:
                if future is not None:
                    future.cancel()

    def _submit(self, batch: list[Any]) -> concurrent.futures.Future[list[FileRead]] | None:
        jobs = [item for item in batch if isinstance(item, Job)]
        return self._pool.submit(_read_jobs, jobs) if jobs else None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _paired(
    batch: list[T], future: concurrent.futures.Future[list[FileRead]] | None
) -> Iterator[tuple[T, FileRead | None]]:
    reads = iter(_result(future)) if future is not None else iter(())
    for item in batch:
        yield item, next(reads) if isinstance(item, Job) else None


def _result(future: concurrent.futures.Future[list[FileRead]]) -> list[FileRead]:
    try:
        return future.result()
    except concurrent.futures.process.BrokenProcessPool as exc:
        raise ConfigError(
            f"a harvest worker process died ({exc}); nothing of this batch was stored. Run the harvest "
            "again; if it dies again (short of memory?), set SKILLSLEEP_HARVEST_WORKERS=1 to read "
            "every file in the harvesting process"
        ) from None
