"""The state database (SQLite, WAL): response cache, call ledger, harvest cursors and sessions,
and a few small named values (`meta`, e.g. "last_harvest"), shared by runs and nights.

One `Store` per state directory. Writes are single statements in autocommit mode, or one
`transaction()` (a harvest batch: its sessions with their cursors), so a killed process leaves
the database consistent; a cache row is written only after a complete answer.
A damaged file (SQLite reports it corrupt, or not a database) is a `StateDamaged` error saying
what the file holds and that `skillsleep doctor --repair` repairs it: it is never silently
replaced, because harvested sessions whose transcripts are gone exist nowhere else.

`check_database()` and `salvage()` are `skillsleep doctor`'s: an integrity check that changes
nothing, and a copy of every row that can still be read out of a damaged file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import Field, ValidationError

from skillsleep.core.models.rundir import PRIVATE_FILE, private_dir
from skillsleep.core.models.store_schema import (
    BUSY,
    SCHEMA_VERSION,
    SKILL_ROWS,
    initialise,
    result_code,
    schema_version,
)
from skillsleep.core.shared.errors import Busy, ConfigError, SkillsleepError, StateDamaged
from skillsleep.core.shared.records import Completion, LedgerEntry, Record
from skillsleep.core.shared.session import Session

HOLDS = "every harvested (redacted) session, the harvest cursors, the call ledger and the response cache"
_DAMAGED = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)
_NO_SHM = {8, 14}  # SQLITE_READONLY, SQLITE_CANTOPEN: a read-only WAL reader could not make its -shm file
_FORGET_SKILLS = "DELETE FROM session_skills WHERE (harness, id) IN (SELECT harness, id FROM sessions WHERE source=?)"


class Store:
    """SQLite-backed response cache and ledger; safe to share between threads of one process."""

    def __init__(self, path: Path, *, timeout_s: float = 30.0, readonly: bool = False) -> None:
        """`timeout_s`: how long a statement waits while another process writes the file.
        `readonly`: only read (`status`, `cost`): nothing is created or changed, and a data folder
        this user may not write (a read-only mount, another user's folder) is read all the same."""
        self.path = Path(path)
        self._lock = threading.RLock()  # re-entered by the statements of a `transaction()`
        if not readonly:
            _private_file(self.path)
        try:
            self._db = _connect(self.path, timeout_s, readonly=readonly)
        except sqlite3.DatabaseError as exc:
            raise database_error(self.path, exc) from exc
        try:
            with self._use():
                row = schema_version(self._db) if readonly else initialise(self._db, timeout_s)
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise ConfigError(
                    f"{self.path} was written by a newer skillsleep (schema {row[0]}); upgrade skillsleep."
                )
        except BaseException:
            self._db.close()
            raise

    @contextmanager
    def _use(self) -> Iterator[None]:
        """Hold the lock for one statement; SQLite's errors become messages that say what to do."""
        with self._lock:
            try:
                yield
            except sqlite3.DatabaseError as exc:
                raise database_error(self.path, exc) from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Make the writes of the block one transaction: all of them are committed when it ends,
        none when it raises or the process is killed. Other threads wait for the block to end (their
        statements would join it), other processes for its commit (SQLite's write lock)."""
        with self._lock:
            with self._use():
                self._db.execute("BEGIN IMMEDIATE")  # the write lock now: no busy error halfway
            try:
                yield
            except BaseException:
                if self._db.in_transaction:  # SQLite itself rolls back after some errors (a full disk)
                    self._db.rollback()
                raise
            with self._use():
                self._db.execute("COMMIT")

    def meta(self, key: str) -> str | None:
        """A small value remembered under `key` (e.g. "last_harvest"), or None when never set."""
        with self._use():
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Remember `value` under `key` (replacing the old one); the schema version is not settable."""
        if key == "schema_version":
            raise ValueError("schema_version is managed by the store itself")
        with self._use():
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def cached(self, key: str) -> Completion | None:
        """The stored completion for a request key, or None."""
        with self._use():
            row = self._db.execute("SELECT completion FROM response_cache WHERE key=?", (key,)).fetchone()
        return Completion.model_validate_json(row[0]) if row else None

    def cache(self, key: str, completion: Completion) -> None:
        """Remember a complete answer under its request key."""
        with self._use():
            self._db.execute(
                "INSERT OR REPLACE INTO response_cache (key, completion) VALUES (?, ?)",
                (key, completion.model_dump_json()),
            )

    def record_call(self, run_id: str, entry: LedgerEntry) -> None:
        """Append one ledger entry for a run."""
        with self._use():
            self._db.execute("INSERT INTO calls (run_id, entry) VALUES (?, ?)", (run_id, entry.model_dump_json()))

    def calls(self, run_id: str) -> list[LedgerEntry]:
        """Every ledger entry of a run, oldest first."""
        with self._use():
            rows = self._db.execute("SELECT entry FROM calls WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        return [LedgerEntry.model_validate_json(r[0]) for r in rows]

    def cursor(self, source: str) -> dict[str, Any] | None:
        """The harvest cursor of a transcript source, or None when never read."""
        with self._use():
            row = self._db.execute("SELECT cursor FROM harvest_cursors WHERE source=?", (source,)).fetchone()
        return dict(json.loads(row[0])) if row else None

    def set_cursor(self, source: str, cursor: dict[str, Any]) -> None:
        with self._use():
            self._db.execute(
                "INSERT OR REPLACE INTO harvest_cursors (source, cursor) VALUES (?, ?)", (source, json.dumps(cursor))
            )

    def session(self, harness: str, session_id: str) -> Session | None:
        with self._use():
            row = self._db.execute(
                "SELECT data FROM sessions WHERE harness=? AND id=?", (harness, session_id)
            ).fetchone()
        return Session.model_validate_json(row[0]) if row else None

    def put_session(self, session: Session) -> None:
        """Store (or replace) a harvested, already redacted session."""
        data = session.__pydantic_serializer__.to_json(session)
        self.put_session_json(session.harness, session.id, session.source, session.ended, data)

    def put_session_json(self, harness: str, session_id: str, source: str, ended: datetime | None, data: bytes) -> None:
        """`put_session` of a session already serialised (`data`: its JSON as UTF-8 bytes, which
        SQLite reads as the text), by whichever process read it."""
        with self._use():
            self._db.execute(
                "INSERT OR REPLACE INTO sessions (harness, id, source, ended, data) VALUES (?, ?, ?, ?, CAST(? AS TEXT))",
                (harness, session_id, source, ended.isoformat() if ended else None, data),
            )
            self._db.execute("DELETE FROM session_skills WHERE harness=? AND id=?", (harness, session_id))
            self._db.execute(SKILL_ROWS.format(where="s.harness=? AND s.id=?"), (harness, session_id))

    def delete_sessions_from(self, source: str) -> None:
        """Forget the sessions read from a transcript that was truncated or replaced."""
        with self._use():
            self._db.execute(_FORGET_SKILLS, (source,))
            self._db.execute("DELETE FROM sessions WHERE source=?", (source,))

    def sessions(self, harness: str | None = None) -> list[Session]:
        """Stored sessions, oldest end first."""
        query = "SELECT data FROM sessions"
        args: tuple[str, ...] = ()
        if harness is not None:
            query, args = query + " WHERE harness=?", (harness,)
        with self._use():
            rows = self._db.execute(query + " ORDER BY ended, id", args).fetchall()
        return [Session.model_validate_json(r[0]) for r in rows]

    def stream_sessions(self, since: datetime | None = None) -> StoredSessions:
        """Stored sessions that ended (or, with no end, began) at or after `since` (all when None;
        one with no time counts), oldest end first, read one at a time: only their keys are held."""
        with self._use():
            rows = self._db.execute(
                "SELECT harness, id, ended, CASE WHEN ended IS NULL THEN json_extract(data, '$.started') END "
                "FROM sessions ORDER BY ended, id"
            ).fetchall()
        keys = [
            (str(h), str(i)) for h, i, ended, started in rows if since is None or _at_or_after(ended or started, since)
        ]
        return StoredSessions(self, keys)

    def skills_of(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
        """(harness, id) → the skills each of these sessions used, in order (the session is not read)."""
        with self._use():
            rows = self._db.execute("SELECT harness, id, json_extract(data, '$.skills') FROM sessions").fetchall()
        wanted = set(keys)
        return {(h, i): json.loads(used or "[]") for h, i, used in rows if (h, i) in wanted}

    def skill_uses(self, since: datetime | None = None) -> dict[tuple[str, str], int]:
        """(harness, skill) → how many stored sessions used it, of those that ended (or, with no
        end, began) at or after `since` (all when None; one with no time counts). Empty for a
        database of schema 1 opened read-only (it holds no skill rows yet)."""
        with self._use():
            if not self._db.execute("SELECT 1 FROM sqlite_master WHERE name='session_skills'").fetchone():
                return {}
            rows = self._db.execute("SELECT harness, skill, at FROM session_skills").fetchall()
        uses: dict[tuple[str, str], int] = {}
        for harness, skill, at in rows:
            if since is None or _at_or_after(at, since):
                uses[(str(harness), str(skill))] = uses.get((str(harness), str(skill)), 0) + 1
        return uses

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _private_file(path: Path) -> None:
    """The database file for this user alone (0600) before SQLite opens it, which gives its -wal and
    -shm files the same mode: created so, and one an older skillsleep left readable by others
    made so (with its -wal and -shm)."""
    private_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        return
    except FileExistsError:
        pass
    except OSError:
        return  # SQLite says what is wrong (a folder in its place, no permission)
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            st = os.stat(part)
            if st.st_mode & 0o077 and st.st_uid == os.geteuid():
                os.chmod(part, stat.S_IMODE(st.st_mode) & 0o700)
        except OSError:
            continue  # absent, or not ours to change: the data folder itself is 0700


def _connect(path: Path, timeout_s: float, *, readonly: bool) -> sqlite3.Connection:
    """A connection to the database; `readonly`: opened read-only, and where SQLite cannot make the
    -shm file a WAL reader needs (a folder this user may not write), opened as immutable."""
    if not readonly:
        return sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout_s)
    uri = f"file:{quote(str(path.absolute()))}"
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=timeout_s)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.DatabaseError as exc:
        db.close()
        if result_code(exc) not in _NO_SHM:
            raise
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)


class StoredSessions:
    """Sessions of a store, read one at a time when iterated (memory holds one session, not all)."""

    def __init__(self, store: Store, keys: list[tuple[str, str]]) -> None:
        self.store, self.keys = store, keys

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[Session]:
        for harness, session_id in self.keys:
            session = self.store.session(harness, session_id)
            if session is not None:  # forgotten since it was listed (its transcript was replaced)
                yield session


def _at_or_after(when: str | None, since: datetime) -> bool:
    """Whether a stored time (ISO 8601) is at or after `since`; no time counts as after."""
    if not when:
        return True
    at = datetime.fromisoformat(when)
    return (at if at.tzinfo else at.replace(tzinfo=UTC)) >= since


def database_error(path: Path, exc: sqlite3.DatabaseError) -> SkillsleepError:
    """The error for a failed state-database operation: damaged (exit 2, with what the file
    holds and how to repair it), busy (another process writes it), or another failure such as a
    full disk (exit 1)."""
    code = result_code(exc)
    if code in BUSY:
        return Busy(f"the state database {path} is busy: another process is writing it ({exc}); try again in a moment")
    if code in _DAMAGED:
        return StateDamaged(
            f"the state database {path} is damaged ({exc}). It holds {HOLDS}: do not delete it, since sessions "
            "whose transcripts are gone exist nowhere else. Run `skillsleep doctor --repair`: it backs the file up, "
            "salvages every row it can read and rebuilds the rest (sessions from your transcripts, the ledger "
            "from the nights' ledger.jsonl)."
        )
    return SkillsleepError(
        f"the state database {path} cannot be used ({exc}); check the disk space and the folder's permissions, "
        "and that no other program holds the file; `skillsleep doctor` checks it."
    )


def check_database(path: Path) -> tuple[str, bool]:
    """(what is wrong with the state database at `path`, whether `salvage()` can help); ("", True)
    when nothing is. The file is opened read-only and never changed."""
    try:
        db = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        return f"it cannot be opened ({exc})", True
    try:
        found = [line for r in db.execute("PRAGMA integrity_check(20)") for line in str(r[0]).splitlines()]
        if found != ["ok"]:
            more = " (and more)" if len(found) > 4 else ""
            return "SQLite's integrity check failed: " + "; ".join(found[:4]) + more, True
        row = schema_version(db)
    except sqlite3.DatabaseError as exc:
        return f"SQLite's integrity check failed: {exc}", True
    finally:
        db.close()
    if row is not None and int(row[0]) > SCHEMA_VERSION:
        return f"it was written by a newer skillsleep (schema {row[0]}; this one reads {SCHEMA_VERSION})", False
    return "", True


class Salvage(Record):
    """What `salvage()` copied out of a damaged database, and which tables it could not read whole."""

    sessions: int = 0
    meta: int = 0
    calls: int = 0
    unreadable: list[str] = Field(default_factory=list)  # tables with rows (or all rows) that could not be read


def salvage(source: Path, into: Store, *, skip_runs: set[str]) -> Salvage:
    """Copy every row that can still be read out of the damaged database `source` into `into`:
    sessions, the named values (not the schema version) and the ledger rows of runs not in
    `skip_runs` (those are rebuilt from their ledger.jsonl). Harvest cursors are left out on
    purpose (with them, the harvest would not re-read the transcripts of lost sessions), and
    so is the response cache (a cache). `source` is read in place: pass a copy."""
    result = Salvage()
    try:
        db = sqlite3.connect(source)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError:
        result.unreadable = ["every table (the file's schema cannot be read)"]
        return result
    try:
        for table, columns in (("sessions", "data"), ("meta", "key, value"), ("calls", "run_id, entry")):
            rows, whole = _readable_rows(db, table, columns) if table in tables else ([], False)
            if not whole:
                result.unreadable.append(table)
            for row in rows:
                try:
                    if table == "sessions":
                        into.put_session(Session.model_validate_json(row[0]))
                        result.sessions += 1
                    elif table == "meta" and row[0] != "schema_version" and isinstance(row[1], str):
                        into.set_meta(str(row[0]), row[1])
                        result.meta += 1
                    elif table == "calls" and row[0] not in skip_runs:
                        into.record_call(str(row[0]), LedgerEntry.model_validate_json(row[1]))
                        result.calls += 1
                except (ValidationError, TypeError, ValueError):
                    continue  # a row whose bytes were damaged: counted as not read below
    finally:
        db.close()
    return result


def _readable_rows(db: sqlite3.Connection, table: str, columns: str) -> tuple[list[tuple[Any, ...]], bool]:
    """The rows of `table` that can be read, by rowid, and whether that was all of them. A read
    that fails on a damaged page goes on from ever larger rowids, so the rows after it are
    still found (the rows in the skipped range are lost)."""
    rows: list[tuple[Any, ...]] = []
    whole, after, step, top = True, -(2**63), 1, 2**63 - 1
    while after < top:
        try:
            for row in db.execute(f"SELECT rowid, {columns} FROM {table} WHERE rowid > ? ORDER BY rowid", (after,)):
                rows.append(row[1:])
                after, step = row[0], 1
            return rows, whole
        except sqlite3.DatabaseError:
            whole = False
            after, step = min(after + step, top), step * 2
    return rows, whole
