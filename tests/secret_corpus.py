"""The secret corpora under tests/fixtures/secrets/ (field*.py, scanner_*.py: sources in PROVENANCE.md
there), loaded by name once per process; the tests and bench/redaction.py read them through `load`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).parent / "fixtures" / "secrets"


def load(name: str) -> ModuleType:
    """The corpus module `name` (e.g. "field", "scanner_benign"), imported once."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
