"""Probe tests for tests/test_xdist_plan.py: they run only when it starts them (SKILLSLEEP_ALONE_PROBE
names a folder), each writing when it ran, so it can check that a test marked `alone` ran with no other."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

PROBE = os.environ.get("SKILLSLEEP_ALONE_PROBE", "")
pytestmark = pytest.mark.skipif(not PROBE, reason="run by tests/test_xdist_plan.py only")


def _visit(name: str, seconds: float = 0.3) -> None:
    start = time.time()
    time.sleep(seconds)
    Path(PROBE, name).write_text(f"{start} {time.time()} {os.environ.get('PYTEST_XDIST_WORKER', '')}")


@pytest.mark.alone
def test_alone() -> None:
    _visit("alone")


@pytest.mark.parametrize("n", range(6))
def test_crowd(n: int) -> None:
    _visit(f"crowd{n}", 3.0 if n == 0 else 0.3)  # the other worker reaches test_alone while crowd0 runs
