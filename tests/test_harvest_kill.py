"""A harvest killed with SIGKILL mid-batch leaves the state database consistent, and the next
harvest resumes: the same sessions and cursors as a harvest never interrupted, no byte read twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_harvest import FAKE_KEY, assistant, user

from skillsleep.core.harvest.harvester import Harvester, Source
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.slash_commands.harvester import PARSERS

FILES = 12
# The killed harvest: batches of 3 files; the 8th file's parse blocks, so batches 1-2 (files 1-6)
# are committed, file 7 is stored in the open batch 3, and file 8 is being read when the kill lands.
_KILLED = """
import json, pathlib, sys, time
from skillsleep.core.harvest import harvester as harvest
from skillsleep.core.harvest.harvester import Harvester, Source
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.models.store import Store
from skillsleep.slash_commands.harvester import PARSERS

harvest.BATCH_FILES = 3
calls = 0

def parse(data, source, offset):
    global calls
    calls += 1
    if calls == 8:
        pathlib.Path(sys.argv[3]).write_text("reading the 8th file")
        time.sleep(600)
    return PARSERS["claude-code"](data, source, offset)

sources = [Source(harness="claude-code", path=p) for p in json.loads(pathlib.Path(sys.argv[2]).read_text())]
Harvester(Store(pathlib.Path(sys.argv[1])), {"claude-code": parse}, Redactor()).harvest(sources)
"""


def _rows(db: Path) -> tuple[list[tuple[object, ...]], dict[str, dict[str, object]]]:
    with sqlite3.connect(db) as conn:
        sessions = conn.execute("SELECT harness, id, source, ended, data FROM sessions ORDER BY harness, id").fetchall()
        cursors = {r[0]: json.loads(r[1]) for r in conn.execute("SELECT source, cursor FROM harvest_cursors")}
    conn.close()
    return sessions, cursors


def _harvest(db: Path, sources: list[Source]) -> int:
    store = Store(db)
    try:
        return Harvester(store, PARSERS, Redactor()).harvest(sources).bytes_read
    finally:
        store.close()


@pytest.mark.slow
def test_a_harvest_killed_mid_batch_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-me-proj"
    folder.mkdir(parents=True)
    paths = []
    for i in range(FILES):
        sid = f"aaaaaaaa-bbbb-4ccc-8ddd-{i:012d}"
        path = folder / f"{sid}.jsonl"
        path.write_bytes(user(f"task {i}: use {FAKE_KEY}", 1, sid) + assistant("on it", 1, sid))
        paths.append(path)
    sources = [Source(harness="claude-code", path=p) for p in paths]
    clean, killed = tmp_path / "clean.db", tmp_path / "killed.db"
    _harvest(clean, sources)
    _harvest(killed, sources)
    old_sizes = [p.stat().st_size for p in paths]
    for i, path in enumerate(paths):  # the sessions go on: the next harvest merges what is appended
        sid = path.stem
        with path.open("ab") as fh:
            fh.write(user(f"and now part {i}, token {FAKE_KEY}", 2, sid) + assistant("merged", 2, sid))
    _harvest(clean, sources)

    listing, ready = tmp_path / "sources.json", tmp_path / "ready"
    listing.write_text(json.dumps([str(p) for p in paths]))
    script = tmp_path / "killed_harvest.py"
    script.write_text(_KILLED)
    proc = subprocess.Popen([sys.executable, str(script), str(killed), str(listing), str(ready)])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists(), f"the harvest never reached its 8th file (exit {proc.poll()})"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    _, cursors = _rows(killed)  # committed: batches 1-2 whole; batch 3 (file 7 stored) rolled back
    offsets = [cursors[str(p)]["offset"] for p in paths]
    assert offsets[:6] == [p.stat().st_size for p in paths[:6]]
    assert offsets[6:] == old_sizes[6:]

    resumed = _harvest(killed, sources)
    assert resumed == sum(p.stat().st_size - old for p, old in zip(paths[6:], old_sizes[6:], strict=True))
    assert _rows(killed) == _rows(clean)
    assert FAKE_KEY not in killed.read_bytes().decode("utf-8", "replace")
