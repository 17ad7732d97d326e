"""The state database (SQLite, WAL): response cache, call ledger, harvest cursors and sessions,
and a few small named values (`meta`, e.g. "last_harvest"), shared by runs and nights.

One `Store` per state directory. Writes are single statements in autocommit mode, so a killed
process leaves the database consistent; a cache row is written only after a complete answer.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from skillsleep.core.errors import ConfigError
from skillsleep.core.records import Completion, LedgerEntry
from skillsleep.core.session import Session

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS response_cache (
    key TEXT PRIMARY KEY,
    completion TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_run ON calls (run_id);
CREATE TABLE IF NOT EXISTS harvest_cursors (source TEXT PRIMARY KEY, cursor TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    harness TEXT NOT NULL,
    id TEXT NOT NULL,
    source TEXT NOT NULL,
    ended TEXT,
    data TEXT NOT NULL,
    PRIMARY KEY (harness, id)
);
CREATE INDEX IF NOT EXISTS sessions_source ON sessions (source);
"""


class Store:
    """SQLite-backed response cache and ledger; safe to share between threads of one process."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"the state database {self.path} cannot be opened ({exc}); move it aside and run again "
                "(it only holds caches and the call ledger)."
            ) from exc
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) > SCHEMA_VERSION:
            raise ConfigError(
                f"{self.path} was written by a newer skillsleep (schema {row[0]}); upgrade skillsleep."
            )

    def meta(self, key: str) -> str | None:
        """A small value remembered under `key` (e.g. "last_harvest"), or None when never set."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Remember `value` under `key` (replacing the old one); the schema version is not settable."""
        if key == "schema_version":
            raise ValueError("schema_version is managed by the store itself")
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def cached(self, key: str) -> Completion | None:
        """The stored completion for a request key, or None."""
        with self._lock:
            row = self._db.execute("SELECT completion FROM response_cache WHERE key=?", (key,)).fetchone()
        return Completion.model_validate_json(row[0]) if row else None

    def cache(self, key: str, completion: Completion) -> None:
        """Remember a complete answer under its request key."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO response_cache (key, completion) VALUES (?, ?)",
                (key, completion.model_dump_json()),
            )

    def record_call(self, run_id: str, entry: LedgerEntry) -> None:
        """Append one ledger entry for a run."""
        with self._lock:
            self._db.execute("INSERT INTO calls (run_id, entry) VALUES (?, ?)", (run_id, entry.model_dump_json()))

    def calls(self, run_id: str) -> list[LedgerEntry]:
        """Every ledger entry of a run, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT entry FROM calls WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        return [LedgerEntry.model_validate_json(r[0]) for r in rows]

    def cursor(self, source: str) -> dict[str, Any] | None:
        """The harvest cursor of a transcript source, or None when never read."""
        with self._lock:
            row = self._db.execute("SELECT cursor FROM harvest_cursors WHERE source=?", (source,)).fetchone()
        return dict(json.loads(row[0])) if row else None

    def set_cursor(self, source: str, cursor: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO harvest_cursors (source, cursor) VALUES (?, ?)", (source, json.dumps(cursor))
            )

    def session(self, harness: str, session_id: str) -> Session | None:
        with self._lock:
            row = self._db.execute(
                "SELECT data FROM sessions WHERE harness=? AND id=?", (harness, session_id)
            ).fetchone()
        return Session.model_validate_json(row[0]) if row else None

    def put_session(self, session: Session) -> None:
        """Store (or replace) a harvested, already redacted session."""
        ended = session.ended.isoformat() if session.ended else None
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO sessions (harness, id, source, ended, data) VALUES (?, ?, ?, ?, ?)",
                (session.harness, session.id, session.source, ended, session.model_dump_json()),
            )

    def delete_sessions_from(self, source: str) -> None:
        """Forget the sessions read from a transcript that was truncated or replaced."""
        with self._lock:
            self._db.execute("DELETE FROM sessions WHERE source=?", (source,))

    def sessions(self, harness: str | None = None) -> list[Session]:
        """Stored sessions, oldest end first."""
        query, args = "SELECT data FROM sessions", ()
        if harness is not None:
            query, args = query + " WHERE harness=?", (harness,)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY ended, id", args).fetchall()
        return [Session.model_validate_json(r[0]) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
