"""The plan of tests/conftest.py names only modules and tests that exist: a renamed test would
silently leave its module's shared thing to two workers at once, or its minutes to the end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import LONGEST, SHARED

TESTS = Path(__file__).resolve().parent


def test_every_module_and_test_of_the_plan_exists() -> None:
    for module in SHARED:
        assert (TESTS / module).is_file(), module
    for key in LONGEST:
        module, _, name = key.partition("::")
        text = (TESTS / module).read_text(encoding="utf-8")
        assert not name or f"def {name}" in text, key  # a test's name, or the start of one


def test_a_test_marked_alone_runs_while_no_other_test_runs(tmp_path: Path) -> None:
    env = {**os.environ, "SKILLSLEEP_ALONE_PROBE": str(tmp_path)}
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:randomly", "tests/test_xdist_alone_probe.py"]
    done = subprocess.run(argv, cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    spans = {p.name: [float(x) for x in p.read_text().split()[:2]] for p in tmp_path.iterdir()}
    assert len(spans) == 7 and {p.read_text().split()[2] for p in tmp_path.iterdir()} == {"gw0", "gw1"}
    start, end = spans.pop("alone")
    assert all(e <= start or s >= end for s, e in spans.values()), spans  # no other test overlapped it
