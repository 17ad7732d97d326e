"""The plan of tests/conftest.py names only modules and tests that exist: a renamed test would
silently leave its module's shared thing to two workers at once, or its minutes to the end."""

from __future__ import annotations

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
