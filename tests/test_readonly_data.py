"""`status` and `cost` only read: a data folder this user may read but not write (a read-only mount,
another user's folder) is shown, and nothing in it is created or changed.

Tests run as root, whom no permission stops, so the commands run as nobody (tests/unprivileged.py)
on a folder owned by root that nobody may only read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from unprivileged import nobody_skip_reason, run_as_nobody, shared_tmp

from skillsleep.core.models.store import Store
from skillsleep.slash_commands.harvester import LAST_HARVEST


def read_only_data(root: Path) -> Path:
    """A data folder with a harvest recorded in its WAL state database, read-only for everyone."""
    data = root / "data"
    store = Store(data / "state.db")
    harvest = {"time": "2026-12-01T03:00:00+00:00", "sessions": {"claude_code": 7}, "errors": 0}
    store.set_meta(LAST_HARVEST, json.dumps(harvest))
    store.close()
    (root / "home").mkdir()
    for folder, _, files in os.walk(data):
        for name in files:
            os.chmod(Path(folder) / name, 0o444)
        os.chmod(folder, 0o555)
    return data


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_mode, p.stat().st_size) for p in folder.rglob("*")}


@pytest.mark.parametrize(
    ("verb", "shown"),
    [(["status"], "new sessions: claude_code 7"), (["cost", "--json"], '"nights_in_all": 0')],
)
def test_status_and_cost_read_a_data_folder_this_user_cannot_write(verb: list[str], shown: str) -> None:
    if reason := nobody_skip_reason():
        pytest.skip(reason)
    with shared_tmp() as root:
        data = read_only_data(root)
        before = listing(data)
        done = run_as_nobody(verb, {"HOME": str(root / "home"), "SKILLSLEEP_HOME": str(data)}, cwd=root)
        assert done.returncode == 0, done.stderr
        assert shown in done.stdout.replace("  ", " "), done.stdout
        assert "not writable" not in done.stderr and listing(data) == before
