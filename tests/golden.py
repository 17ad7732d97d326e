"""A verb's output against its golden file in tests/fixtures/verbs/, byte for byte, once what differs
from run to run is made stable (the temporary folder and the other paths given, proposal ids, dates
and times, durations).

    SKILLSLEEP_GOLDEN=write python -m pytest tests/test_verb_outputs*.py

writes the files instead of comparing (read the diff before committing it: a changed golden is a
changed output).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

GOLDEN = Path(__file__).parent / "fixtures" / "verbs"


def stable(out: str, names: dict[str, str]) -> str:
    """`out` with each of `names` (a path, a pid: what it stands for → its placeholder) replaced,
    longest first, then proposal ids, time stamps, skill memory names, times, durations and dates."""
    for value, placeholder in sorted(names.items(), key=lambda kv: -len(kv[0])):
        out = out.replace(value, placeholder)
    out = re.sub(r"\d{8}-\d{6}-[0-9a-f]{4}\b", "<PROPOSAL>", out)
    out = re.sub(r"\d{8}[T-]\d{6}(\.\d+)?Z?(-\d+\b)?", "<STAMP>", out)  # a second one in the same second: -N
    out = re.sub(r"/[0-9a-f]{16}\.json", "/<KEY>.json", out)  # a skill's memory, named by its path's hash
    out = re.sub(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( ?UTC|[+-]\d{2}:\d{2}|Z)?", "<TIME>", out)
    out = re.sub(r"\(\d+m \d+s\)", "(<DURATION>)", out)
    return re.sub(r"\d{4}-\d{2}-\d{2}", "<DATE>", out)


def check(name: str, out: str, names: dict[str, str]) -> None:
    """`out` made stable equals tests/fixtures/verbs/`name` (SKILLSLEEP_GOLDEN=write: becomes it)."""
    path = GOLDEN / name
    text = stable(out, names)
    if os.environ.get("SKILLSLEEP_GOLDEN") == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    want = path.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), str(path), "now"))
    assert text == want, f"{name} differs from its golden file:\n{diff}"
