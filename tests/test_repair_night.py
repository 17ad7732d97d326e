"""A night gets the same repair round as a training step, and what is still refused after it is
kept in the skill's memory: the next night's reflection sees it and drops it when proposed again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillsleep.core.night_store import Nights
from tests.sleep_kit import Recorder, optimizer_rules
from tests.test_night_engine import (
    live_file,
    night,
    root,  # noqa: F401  (a fixture: pytest finds it by name)
    settings,
)

HEADING = {
    "kind": "skill_defect",
    "diagnosis": "no answer line",
    "op": "add",
    "target": "",
    "content": "## Answer\nPut the answer last.",
}
REWRITE = {"edit": 1, "op": "add", "target": "", "content": "## Final answer"}


def test_a_refusal_survives_into_the_next_night(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = [
        {"match": '"rewrites"', "reply": json.dumps({"rewrites": [REWRITE]})},
        *optimizer_rules(findings=[HEADING]),
    ]
    (root / "opt.json").write_text(json.dumps(rules))
    skill = live_file(root)
    rec = Recorder(monkeypatch)
    first = night(root, settings(root), skill)
    assert first.outcome == "no-candidate" and "repair" in rec.roles()
    assert first.usage.by_role["repair"].calls == 1  # the night's report counts the role
    memory = Nights(root / "data").memory(skill.key())
    refused = {r.edit.content: r for r in memory.rejected}
    assert set(refused) == {"## Answer\nPut the answer last.", "## Final answer"}
    assert all(r.stage == "apply" and "edits may not add sections" in r.reason for r in refused.values())
    rec.seen.clear()
    second = night(root, settings(root), skill)
    assert second.night == 2 and "repair" not in rec.roles()  # proposed again: dropped, not repaired
    reflections = rec.texts("reflect")
    assert reflections and all("refused by the edit rules (epoch 1, step 1)" in t for t in reflections)
    assert all("## Answer" in t and "## Final answer" in t for t in reflections)
