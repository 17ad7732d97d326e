"""A night gets the same repair round as a training step, and what is still refused after it is
kept in the skill's memory: the next night's reflection sees it and drops it when proposed again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillsleep.core.night.nights import Nights
from skillsleep.harnesses.skills import SkillTarget
from tests.sleep_kit import RULE, UNSOLVED, Recorder, optimizer_rules
from tests.test_night_engine import (
    LIVE,
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
LONG = {**HEADING, "content": "Put the answer last.\n- Add.\n- Check.\n- Write it.\n- Stop."}  # refused, no fix named
STILL_LONG = {**REWRITE, "content": "Answer last.\n- Add.\n- Check.\n- Write it.\n- Stop."}
FRENCH = "Reply in French only."  # the target then fails every task


def first_night(
    root: Path, monkeypatch: pytest.MonkeyPatch, rewrite: dict[str, object], finding: dict[str, str] = HEADING
) -> tuple[SkillTarget, Recorder]:
    """The live skill and a recorder after a first night whose optimizer proposes `finding` (the
    heading) and repairs it into `rewrite`."""
    rules = [
        {"match": '"rewrites"', "reply": json.dumps({"rewrites": [rewrite]})},
        *optimizer_rules(findings=[finding]),
    ]
    (root / "opt.json").write_text(json.dumps(rules))
    skill = live_file(root)
    return skill, Recorder(monkeypatch)


def test_a_refusal_survives_into_the_next_night(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill, rec = first_night(root, monkeypatch, STILL_LONG, LONG)
    first = night(root, settings(root), skill)
    assert first.outcome == "no-candidate" and "repair" in rec.roles()
    assert first.usage.by_role["repair"].calls == 1  # the night's report counts the role
    memory = Nights(root / "data").memory(skill.key())
    refused = {r.edit.content: r for r in memory.rejected}
    assert set(refused) == {LONG["content"], STILL_LONG["content"]}
    assert all(r.stage == "apply" and "one edit may add at most 4" in r.reason for r in refused.values())
    rec.seen.clear()
    second = night(root, settings(root), skill)
    assert second.night == 2 and "repair" not in rec.roles()  # proposed again: dropped, not repaired
    reflections = rec.texts("reflect")
    assert reflections and all("refused by the edit rules (epoch 1, step 1)" in t for t in reflections)
    assert all("Put the answer last." in t and "Answer last." in t for t in reflections)


def harmful_night(root: Path, rules: list[dict[str, str]]) -> SkillTarget:
    """A live skill the target passes one of the two held-out tasks with (it holds RULE; the other,
    UNSOLVED, fails whatever the skill, so the held-out tasks are not all at the top score and the
    night trains), an optimizer following `rules`, and a target that answers "Bonjour." (failing
    every task) to a skill holding FRENCH: the gate sees a regression, 0.500 → 0.000 (a tie that
    moves no task is remembered otherwise: tests/test_ties.py)."""
    (root / "opt.json").write_text(json.dumps(rules))
    target = json.loads((root / "target.json").read_text())
    (root / "target.json").write_text(json.dumps([{"match": "French", "reply": "Bonjour."}, UNSOLVED, *target]))
    return live_file(root, LIVE + f"- {RULE}\n")


def test_a_gate_rejection_is_not_proposed_again_the_next_night_on_the_same_skill(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harmful = {"kind": "skill_defect", "diagnosis": "too long", "op": "add", "target": "", "content": FRENCH}
    skill = harmful_night(root, optimizer_rules(findings=[harmful]))
    rec = Recorder(monkeypatch)
    first = night(root, settings(root), skill)
    assert first.outcome == "rejected" and first.gate and (first.gate.baseline, first.gate.candidate) == (0.5, 0.0)
    (memory,) = Nights(root / "data").memory(skill.key()).rejected
    assert memory.stage == "gate" and memory.edit.content == FRENCH and memory.skill
    assert any(FRENCH in text for text in rec.texts("target"))  # night 1 gated it
    rec.seen.clear()
    second = night(root, settings(root), skill)
    assert second.night == 2 and second.outcome == "no-candidate"
    assert not any(FRENCH in text for text in rec.texts("target"))  # dropped before ranking, never gated
    steps = sorted((root / "data").rglob("step.json"), key=lambda p: p.stat().st_mtime)
    skipped = json.loads(steps[-1].read_text())["skipped"]
    assert any(
        s["stage"] == "memory"
        and s["reason"].startswith("dropped before ranking, the gate rejected it alone on this same skill before")
        for s in skipped
    )


def test_a_proposal_whose_repair_the_gate_rejected_is_dropped_the_next_night(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [
        {"match": '"rewrites"', "reply": json.dumps({"rewrites": [{**REWRITE, "content": FRENCH}]})},
        *optimizer_rules(findings=[HEADING]),
    ]
    skill = harmful_night(root, rules)  # the heading is repaired into the harmful line: the gate rejects it
    rec = Recorder(monkeypatch)
    first = night(root, settings(root), skill)
    assert first.outcome == "rejected" and "repair" in rec.roles()
    assert [g.edit.content for g in first.rejected_edits] == [FRENCH]  # the report lists the gated edit once
    memory = {r.edit.content: r for r in Nights(root / "data").memory(skill.key()).rejected}
    assert set(memory) == {HEADING["content"], FRENCH}
    original = memory[HEADING["content"]]
    assert original.stage == "repair" and original.repair == memory[FRENCH].edit and original.skill
    assert original.reason.startswith("its repair was rejected by the gate: ")
    rec.seen.clear()
    second = night(root, settings(root), skill)
    assert second.night == 2 and second.outcome == "no-candidate"
    assert "repair" not in rec.roles() and not any(FRENCH in text for text in rec.texts("target"))
    steps = sorted((root / "data").rglob("step.json"), key=lambda p: p.stat().st_mtime)
    skipped = json.loads(steps[-1].read_text())["skipped"]
    assert any(
        s["stage"] == "memory"
        and s["reason"].startswith(
            "dropped before ranking, the gate rejected its repair alone on this same skill before"
        )
        for s in skipped
    )
    reflections = rec.texts("reflect")
    assert reflections and all(t.count(FRENCH) == 1 and "then repaired as" in t for t in reflections)
