"""A proposal the user rejects is remembered (issue 24): `reject` puts its changes into the skill's
rejected-edit memory (stage "user"); the next night over the same sessions shows them to the
reflection and drops them before ranking instead of staging the same proposal again; `status`
shows what became of them. Driven through the command line with the scripted backend
(tests/sleep_kit.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sleep_kit import RULE, Recorder, invoke, run_night, scripted_night

from skillsleep.core.night.nights import Nights
from skillsleep.core.report.proposals import Proposals


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return scripted_night(monkeypatch, tmp_path)


def test_a_rejected_proposal_is_remembered_and_not_staged_again_by_the_next_night(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run_night(root)
    assert first["outcome"] == "accepted" and first["proposal"] is not None
    code, out, err = invoke("reject", "--json")
    assert code == 0, err
    rec = Recorder(monkeypatch)
    second = run_night(root)  # the same sessions, the same optimizer: it proposes the same rule
    assert second["proposal"] is None and second["outcome"] == "no-candidate"
    assert [p.status for p in Proposals(root / "data").list()] == ["rejected"]
    assert "say only what you rejected before (`skillsleep reject`)" in second["reason"]
    assert any(f"the user rejected proposal {first['proposal']}" in t for t in rec.texts("reflect"))

    assert json.loads(out)["remembered"] == 1
    memory = Nights(root / "data").memory(first["skill"]["path"])
    assert [r.proposal for r in memory.rejected if r.stage == "user" and RULE in (r.edit.content or "")] == [
        first["proposal"]
    ]
    code, out, err = invoke("status")
    assert code == 0, err
    assert f"reject {first['proposal']} — its 1 change(s) join the rejected-edit memory" in out


def test_an_unreadable_memory_refuses_the_reject_and_changes_nothing(root: Path) -> None:
    first = run_night(root)
    memory = Nights(root / "data").memory_path(first["skill"]["path"])
    memory.write_text("{not json")
    code, _, err = invoke("reject")
    assert code == 2 and "doctor --repair" in err and str(memory) in err
    assert [p.status for p in Proposals(root / "data").list()] == ["staged"] and memory.read_text() == "{not json"


def test_a_proposal_whose_staged_files_are_gone_is_rejected_all_the_same(root: Path) -> None:
    first = run_night(root)
    (root / "data" / "staging" / first["proposal"] / "SKILL.md").unlink()
    code, out, err = invoke("reject", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["proposal"]["status"] == "rejected" and r["remembered"] == 0
    assert "its staged files cannot be read" in r["detail"]


def test_doctor_rebuilding_a_damaged_memory_keeps_the_rejections(root: Path) -> None:
    first = run_night(root)
    code, _, err = invoke("reject")
    assert code == 0, err
    memory = Nights(root / "data").memory_path(first["skill"]["path"])
    memory.write_text("{not json")
    code, _, err = invoke("doctor", "--repair")
    assert Nights(root / "data").memory(first["skill"]["path"]).rejected[-1].proposal == first["proposal"], err


def test_doctor_names_a_rejected_proposal_whose_staged_files_are_gone_when_it_rebuilds_the_memory(root: Path) -> None:
    first = run_night(root)
    assert invoke("reject")[0] == 0
    (root / "data" / "staging" / first["proposal"] / "SKILL.md").unlink()
    Nights(root / "data").memory_path(first["skill"]["path"]).write_text("{not json")
    _code, out, err = invoke("doctor", "--repair", "--json")
    assert f"rejected proposal {first['proposal']} cannot be read" in out, (out, err)
