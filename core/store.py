"""The state database (SQLite, WAL): response cache and call ledger, shared by runs and nights.

One `Store` per state directory. Writes are single statements in autocommit mode, so a killed
process leaves the database consistent; a cache row is written only after a complete answer.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from skillsleep.core.errors import ConfigError
from skillsleep.core.records import Completion, LedgerEntry

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

    def close(self) -> None:
        with self._lock:
            self._db.close()
