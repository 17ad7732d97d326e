"""Three nights of `skillsleep run` (scripted backend) on changing sessions: new instances, a new
most frequent wording, a paraphrase the optimizer merges, reordered and re-split files, removed
sessions. Every task keeps its id, and a task held out (val, test) never comes back as training
data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sleep_kit import TASKS, corrected_session, night_env, optimizer_rules, run_night, write_scripts

from skillsleep.core.night.nights import Nights
from skillsleep.core.night.stages import NightPlan

NEW_WORDING = TASKS[0] + " please"  # one task with the first one (stop words aside), another request
PARAPHRASE = "Why did the CI job fail on the docs?"  # TASKS[2] in other words: merged by the optimizer


def session(sid: str, day: int, minute: int, prompt: str) -> str:
    return corrected_session(sid, f"2026-11-{day:02d}T10:{minute:02d}:00Z", prompt)


def write_logs(chats: Path, files: dict[str, list[str]]) -> None:
    for old in chats.glob("*.jsonl"):
        old.unlink()
    chats.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (chats / name).write_text("\n".join(lines) + "\n")


def base_sessions() -> list[str]:
    return [session(f"s{rep}-{i}", 21 + rep, i, t) for rep in range(3) for i, t in enumerate(TASKS)]


def plan_of(data: Path, night: int) -> NightPlan:
    return NightPlan.model_validate_json((Nights(data).folder(night) / "plan.json").read_text())


def ids_by_task(plan: NightPlan) -> dict[int, str]:
    """TASKS index → the id of the mined task holding that request."""
    out: dict[int, str] = {}
    for m in plan.mined.tasks:
        for n, text in enumerate(TASKS):
            if text in m.wordings:
                out[n] = m.task.id
    return out


def test_task_ids_and_held_out_splits_survive_three_nights_of_changing_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = night_env(monkeypatch, tmp_path)
    chats = tmp_path / "chats"
    write_scripts(tmp_path)
    write_logs(chats, {"log.jsonl": base_sessions()})
    first = run_night(tmp_path)
    plan1 = plan_of(data, first["night"])
    ids = ids_by_task(plan1)
    assert len(ids) == len(TASKS) == len(set(ids.values())) and plan1.mined.asked == 0
    held_out = {t: s for t, s in plan1.splits.items() if s != "train"}
    assert set(held_out.values()) == {"val", "test"}

    # Night 2: the sessions reordered across two files, three more instances of TASKS[0] in a new
    # wording (now its most frequent one), and a paraphrase of TASKS[2] the optimizer merges.
    merge = [{"match": '"mine_merge"', "reply": json.dumps({"groups": [[1, 2]]})}]
    (tmp_path / "opt.json").write_text(json.dumps(merge + optimizer_rules()))
    extra = [session(f"n{k}", 24, k, NEW_WORDING) for k in range(4)] + [session("p0", 24, 9, PARAPHRASE)]
    lines = list(reversed(base_sessions())) + extra
    write_logs(chats, {"b.jsonl": lines[::2], "a.jsonl": lines[1::2]})
    second = run_night(tmp_path)
    plan2 = plan_of(data, second["night"])
    assert plan2.mined.asked == 2 and plan2.mined.merged == 1
    assert ids_by_task(plan2) == ids
    merged = next(m for m in plan2.mined.tasks if m.task.id == ids[2])
    assert PARAPHRASE in merged.wordings and merged.recurrence == 4
    renamed = next(m for m in plan2.mined.tasks if m.task.id == ids[0])
    assert renamed.wordings[0] == NEW_WORDING  # its most frequent wording changed; its id did not

    # Night 3: every session of the first wording of TASKS[0] and one of TASKS[4] removed from the
    # files (a file that shrank is read again, its old sessions replaced).
    kept = [line for line in lines if TASKS[0] + '"' not in line and '"s0-4"' not in line]
    write_logs(chats, {"b.jsonl": kept[::2], "a.jsonl": kept[1::2]})
    third = run_night(tmp_path)
    plan3 = plan_of(data, third["night"])
    assert ids_by_task(plan3) == {n: tid for n, tid in ids.items() if n != 0}
    assert any(m.task.id == ids[0] and m.wordings == [NEW_WORDING] for m in plan3.mined.tasks)

    for plan in (plan2, plan3):
        assert {t: plan.splits[t] for t in held_out} == held_out  # never moved, never training data
        assert {t for t, s in plan.splits.items() if s == "train"}.isdisjoint(held_out)
    memory = Nights(data).memory(Nights(data).get(third["night"]).skill_path)
    assert {t.id for t in memory.tasks} == set(ids.values())
    assert all(memory.splits[t] == s for t, s in held_out.items())
