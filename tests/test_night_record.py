"""The records of nights already on users' disks: night.json as skillsleep wrote it before the
record was composed of its parts (tests/fixtures/night_records/, written by commit dc7db34 in a
scripted night: the first record of a detached night, a night accepted and auto-adopted, one
stopped by its budget, the same night resumed and running again, a dry run) loads into its
parts, is written back byte for byte, and `status`, `cost`, `doctor` and the next night's chart
read it as they did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sleep_kit import data, invoke  # noqa: F401  (fixture)

from skillsleep.core.models.rundir import write_private
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NIGHT_JSON
from skillsleep.core.report.result import HistoryPoint

OLD = Path(__file__).parent / "fixtures" / "night_records"
SKILL = "/home/me/data/skills/skillsleep-learned/SKILL.md"


def raw(name: str) -> dict[str, Any]:
    return dict(json.loads((OLD / f"{name}.json").read_text()))


def put(data: Path, *names: str) -> Nights:
    """The old records `names` in the data dir `data`, each in its night's folder."""
    nights = Nights(data)
    for name in names:
        write_private(nights.folder(raw(name)["night"]) / "night.json", (OLD / f"{name}.json").read_bytes())
    return nights


@pytest.mark.parametrize("name", ["running", "accepted", "stopped", "resumed", "dry-run"])
def test_an_old_record_loads_and_is_written_back_byte_for_byte(tmp_path: Path, name: str) -> None:
    record = put(tmp_path / "old", name).get(raw(name)["night"])
    again = Nights(tmp_path / "new")
    again.save(record)
    written = again.folder(record.night) / "night.json"
    assert written.read_bytes() == (OLD / f"{name}.json").read_bytes()
    assert tuple(raw(name)) == NIGHT_JSON


def test_an_old_record_goes_into_its_parts(tmp_path: Path) -> None:
    r = put(tmp_path, "accepted").get(1)
    assert (r.night, r.status, r.harness, r.skill_path, r.steps, r.log) == (1, "finished", "chat", SKILL, 2, None)
    assert (r.end.outcome, r.end.baseline, r.end.candidate, r.end.accepted) == ("accepted", 0.0, 1.0, True)
    assert (r.end.test_before, r.end.test_after, r.end.adopted) == (0.0, 1.0, True)
    assert r.end.proposal_id == raw("accepted")["proposal_id"] and r.end.finished is not None
    assert (r.plan.sessions, r.plan.mined, r.plan.tasks) == (18, 6, {"train": 6, "val": 2, "test": 1, "dream": 3})
    assert (r.spend.calls, r.spend.cache_hits, r.spend.tokens, r.spend.cost_usd) == (31, 4, 14633, 0.0)
    stopped = put(tmp_path / "2", "stopped").get(2)
    assert stopped.status == "stopped" and stopped.end.stop is not None and stopped.end.stop.kind == "budget"
    resumed = put(tmp_path / "3", "resumed").get(2)  # running again: its earlier end kept, its stop gone
    assert resumed.status == "running" and resumed.end.outcome == "stopped-early" and resumed.end.stop is None
    running = put(tmp_path / "4", "running").get(1)
    assert running.log == "/home/me/night-0001.log" and running.end.outcome is None and running.plan.tasks == {}


def test_status_cost_doctor_and_the_chart_read_old_records_as_before(data: Path) -> None:
    nights = put(data, "accepted", "stopped", "dry-run")
    code, out, err = invoke("status", "--json")
    assert code == 0, err
    status = json.loads(out)
    keys = ["outcome", "baseline", "candidate", "accepted", "reason", "test_before", "test_after", "proposal_id"]
    keys += ["adopted", "stop", "dry_run", "pid", "harness", "skill_path", "log", "finished"]
    for shown, name in zip(status["nights"]["recent"], ["accepted", "stopped", "dry-run"], strict=True):
        old = raw(name)
        assert {k: shown[k] for k in keys} == {
            **{k: old[k] for k in keys},
            "finished": old["finished"].replace("Z", "+00:00"),
        }
        assert shown["status"] == old["status"]
    assert [(g["night"], g["baseline"], g["accepted"]) for g in status["gate_history"]] == [
        (1, 0.0, True),
        (2, 1.0, False),
        (3, 1.0, False),
    ]
    # recorded before the held-out evidence was kept: none is shown, and nothing claims a label
    assert {(g["paired"], g["validated"], g["validation"]) for g in status["gate_history"]} == {("", None, "")}
    code, text, err = invoke("status")
    assert code == 0, err
    gate = text.split("### Gate history")[1].split("###")[0]
    assert "paired" not in gate and "validated" not in gate
    assert "- night 1 · 2026-12-05 · skillsleep-learned: 0.00 → 1.00 accepted (improved 0.000 → 1.000" in gate
    assert "held-out 0.00 → 1.00; accepted (improved 0.000 → 1.000" in text and "(auto-adopted)" in text
    assert "stopped (budget): token budget reached" in text and "dry run, nothing staged" in text
    code, out, err = invoke("cost", "--json")
    assert code == 0, err
    rows = json.loads(out)["nights"]
    assert [(r["night"], r["skill"], r["status"]) for r in rows] == [
        (1, "skillsleep-learned", "finished"),
        (2, "skillsleep-learned", "stopped"),
        (3, "skillsleep-learned", "finished"),
    ]
    code, out, err = invoke("doctor", "--json")
    assert json.loads(out)["problems"] == [], err
    assert [(p.night, p.baseline, p.candidate, p.accepted, p.dry_run) for p in nights.history(SKILL)] == [
        (1, 0.0, 1.0, True, False),
        (2, 1.0, None, False, False),
        (3, 1.0, None, False, True),
    ]
    assert all(isinstance(p, HistoryPoint) for p in nights.history(SKILL))
