"""The state database's schema (`store.py`), its version, and the migration of an older file.

Version 1: meta, response_cache, calls, harvest_cursors, sessions. Version 2 adds
`session_skills`, one row per (session, skill it used), kept with its session by every write, so
`skillsleep skills` counts a skill's use without reading the sessions. A version 1 file is
migrated when it is opened for writing, in one transaction: the table is made and filled from the
sessions it holds (a version 1 session records no skill, so this finds none), no session row is
changed, and the harvest cursors are forgotten, so the next harvest reads every transcript still on
disk again and stores its sessions with the skills they used (a session whose transcript is gone
stays as it was). A file opened read-only is not migrated (`Store.skill_uses()` reads no rows then).
Processes that open the same new or old file at once (a session's end hook harvesting in the
background and a `/sleep` typed right after it) record the version, or migrate, once: one after the
other, under the write lock.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

__all__ = ["BUSY", "SCHEMA", "SCHEMA_VERSION", "SKILL_ROWS", "initialise", "migrate", "result_code", "schema_version"]

BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED: another connection writes, longer than the timeout


def result_code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of `exc` (its extended code's low byte), 0 when it has none."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


_VERSION = "SELECT value FROM meta WHERE key='schema_version'"

SCHEMA_VERSION = 2

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS session_skills (
    harness TEXT NOT NULL,
    id TEXT NOT NULL,
    skill TEXT NOT NULL,
    at TEXT,
    PRIMARY KEY (harness, id, skill)
);
"""

# the skill rows of one session (harness, id), from its stored JSON: what every session write runs
SKILL_ROWS = (
    "INSERT OR IGNORE INTO session_skills (harness, id, skill, at) "
    "SELECT s.harness, s.id, j.value, COALESCE(s.ended, json_extract(s.data, '$.started')) "
    "FROM sessions s, json_each(s.data, '$.skills') j WHERE {where} AND j.type = 'text'"
)


def migrate(db: sqlite3.Connection, found: int) -> None:
    """Bring a database of schema `found` (< SCHEMA_VERSION; the tables of SCHEMA exist) up to date,
    inside the caller's transaction (the write lock is held): version 1 → 2 fills
    `session_skills` from the stored sessions."""
    if found < 2:
        db.execute("DELETE FROM session_skills")
        db.execute(SKILL_ROWS.format(where="1"))
        db.execute("DELETE FROM harvest_cursors")  # re-read: the sessions get their skills
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


def schema_version(db: sqlite3.Connection) -> tuple[Any, ...] | None:
    """The schema-version row; None in a file with no tables yet."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    row: tuple[Any, ...] | None = db.execute(_VERSION).fetchone() if "meta" in tables else None
    return row


def initialise(db: sqlite3.Connection, timeout_s: float) -> tuple[Any, ...] | None:
    """WAL, the tables, and the version recorded in a new file or an older file migrated; the
    version row as it is then. Processes opening a new file at once can meet where SQLite says
    "locked" at once instead of waiting (the switch to WAL, which two of them may both wait to
    make): each step is idempotent, so the whole is tried again, for up to `timeout_s`, as any
    statement waits for a writer."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            row = schema_version(db)
            return row if row is not None and int(row[0]) >= SCHEMA_VERSION else _set_version(db)
        except sqlite3.OperationalError as exc:
            if result_code(exc) not in BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _set_version(db: sqlite3.Connection) -> tuple[Any, ...] | None:
    """Record the version in a new file, or migrate an older one, holding the write lock; read
    again under it, since another process may have done it meanwhile."""
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute(_VERSION).fetchone()
        if row is None:
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) < SCHEMA_VERSION:
            migrate(db, int(row[0]))
    except BaseException:
        db.rollback()
        raise
    db.execute("COMMIT")
    return schema_version(db)
