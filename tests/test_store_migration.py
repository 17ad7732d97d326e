"""The state database's schema 1 → 2 (`core/models/store_schema.py`), on a file the previous
skillsleep wrote (tests/fixtures/store/state-v1.db, see its README.md): nothing lost, the harvest
reads the transcripts again and the sessions get their skills."""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from skillsleep.core.harvest.harvester import Harvester, Source
from skillsleep.core.models.store import Store
from skillsleep.core.models.store_schema import SCHEMA_VERSION
from skillsleep.core.privacy.redact import Redactor
from skillsleep.harnesses import registry

FIXTURES = Path(__file__).parent / "fixtures"
V1 = FIXTURES / "store" / "state-v1.db"


def _rows(path: Path, query: str) -> list[tuple[object, ...]]:
    db = sqlite3.connect(path)
    try:
        return sorted(db.execute(query).fetchall())
    finally:
        db.close()


def test_a_schema_1_database_is_migrated_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    shutil.copyfile(V1, path)
    sessions = _rows(path, "SELECT harness, id, source, ended, data FROM sessions")
    meta = _rows(path, "SELECT key, value FROM meta WHERE key != 'schema_version'")
    assert len(sessions) == 9 and _rows(path, "SELECT value FROM meta WHERE key='schema_version'") == [("1",)]
    store = Store(path)
    assert [(s.harness, s.id) for s in store.sessions()]  # every old session reads as a Session
    assert all(s.skills == [] for s in store.sessions())  # schema 1 recorded no skill
    store.close()
    assert _rows(path, "SELECT harness, id, source, ended, data FROM sessions") == sessions  # byte for byte
    assert _rows(path, "SELECT key, value FROM meta WHERE key != 'schema_version'") == meta
    assert _rows(path, "SELECT value FROM meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    assert _rows(path, "SELECT * FROM harvest_cursors") == []  # forgotten: the next harvest reads again
    Store(path).close()  # opening it again migrates nothing twice


def test_after_the_migration_the_harvest_attributes_the_old_sessions(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    shutil.copyfile(V1, path)
    store = Store(path)
    assert store.skill_uses() == {}
    roots = {"claude-code": FIXTURES / "claude" / "skills", "codex": FIXTURES / "codex" / "skills"}
    sources = [Source(harness=h, path=p) for h, root in roots.items() for p in sorted(root.rglob("*.jsonl"))]
    Harvester(store, registry.parsers(), Redactor()).harvest(sources)
    assert len(store.sessions()) == 9  # the same sessions (harness, id), read again, none added or lost
    assert store.skill_uses() == {
        ("claude-code", "review-pr"): 1,
        ("claude-code", "release-notes"): 1,
        ("codex", "review-pr"): 1,
        ("codex", "release-notes"): 1,
    }
    store.close()


def test_a_schema_1_database_opened_read_only_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    shutil.copyfile(V1, path)
    store = Store(path, readonly=True)
    assert len(store.sessions()) == 9 and store.skill_uses() == {}
    store.close()
    assert _rows(path, "SELECT value FROM meta WHERE key='schema_version'") == [("1",)]


def test_skill_rows_follow_their_session(tmp_path: Path) -> None:
    from skillsleep.core.shared.session import Session

    store = Store(tmp_path / "state.db")
    store.put_session(Session(harness="codex", id="a", source="/t/a", skills=["x", "y"]))
    store.put_session(Session(harness="codex", id="b", source="/t/b", skills=["x"]))
    assert store.skill_uses() == {("codex", "x"): 2, ("codex", "y"): 1}
    store.put_session(Session(harness="codex", id="a", source="/t/a", skills=["y"]))  # replaced
    assert store.skill_uses() == {("codex", "x"): 1, ("codex", "y"): 1}
    store.delete_sessions_from("/t/b")
    assert store.skill_uses() == {("codex", "y"): 1}
    store.close()


def _open(path: str, start: Any, errors: Any) -> None:
    start.wait()
    try:
        Store(Path(path)).close()
    except Exception as exc:  # reported to the test, which names it
        errors.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("old", [False, True], ids=["new file", "schema 1 file"])
def test_processes_that_open_the_same_file_at_once_all_open_it_and_migrate_it_once(tmp_path: Path, old: bool) -> None:
    """A session's end hook harvesting in the background while `/sleep` typed right after it opens
    the same state database: each opens it, the version is recorded (or the file migrated) once."""
    context = multiprocessing.get_context("fork")
    errors: Any = context.Queue()
    for trial in range(60):
        path = tmp_path / f"{trial}" / "state.db"
        path.parent.mkdir()
        if old:
            shutil.copyfile(V1, path)
        start = context.Barrier(4)
        workers = [context.Process(target=_open, args=(str(path), start, errors)) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        assert [w.exitcode for w in workers] == [0] * 4
        assert errors.empty(), errors.get()
        assert _rows(path, "SELECT key, value FROM meta WHERE key='schema_version'") == [
            ("schema_version", str(SCHEMA_VERSION))
        ]
        if old:
            assert len(_rows(path, "SELECT harness, id FROM sessions")) == 9
