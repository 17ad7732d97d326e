"""`skillsleep doctor [--repair]` on a data directory a real night made, then damaged for real:
pages of state.db overwritten with garbage, state.db truncated, records with bad bytes.

What the user is promised: every command that meets the damage says what the file holds and
how to repair it; `doctor` changes nothing; `doctor --repair` backs everything up first (the
damaged bytes are kept exactly), salvages what can be read, rebuilds the rest (sessions from
the transcripts, the ledger from the nights' ledger.jsonl, a skill's memory from its nights),
says what was lost, and afterwards a night runs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from sleep_kit import TASKS, invoke, night_env, run_args, run_night, write_chat_logs, write_scripts

from skillsleep.core.models.store import Store, check_database
from skillsleep.core.night.lock import StateLock
from skillsleep.core.night.nights import Nights, SkillMemory
from skillsleep.core.report.proposals import Proposals
from skillsleep.slash_commands.cli import main


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir after one real night (scripted backend) on chat logs; returns the data dir."""
    data = night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    # enough one-off sessions that state.db spans a few hundred pages
    write_chat_logs(tmp_path / "chats", extra=[f"one-off request number {i}: " + "details " * 60 for i in range(300)])
    assert run_night(tmp_path)["outcome"] == "accepted"
    assert not (data / "state.db-wal").exists()  # closed cleanly: the file alone is the database
    return data


def page_size(db: Path) -> int:
    return int.from_bytes(db.read_bytes()[16:18], "big")


def garbage_pages(db: Path, pages: range | None = None) -> None:
    """Overwrite pages (default: every 7th from page 2, the first table's root) with random bytes."""
    data, size = bytearray(db.read_bytes()), page_size(db)
    rng = random.Random(7)
    for n in pages or range(2, len(data) // size + 1, 7):
        data[(n - 1) * size : n * size] = rng.randbytes(size)
    db.write_bytes(bytes(data))


def truncate(db: Path) -> None:
    db.write_bytes(db.read_bytes()[: len(db.read_bytes()) // 2 + 1000])


def stored(db: Path, run_id: str) -> tuple[set[tuple[str, str]], int]:
    store = Store(db)
    try:
        return {(s.harness, s.id) for s in store.sessions()}, len(store.calls(run_id))
    finally:
        store.close()


DAMAGE: dict[str, Callable[[Path], None]] = {"garbage-pages": garbage_pages, "truncated": truncate}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_state_db_is_named_everywhere_and_repair_brings_everything_back(night: Path, damage: str) -> None:
    root, db = night.parent, night / "state.db"
    folder = Nights(night).folder(1)
    sessions, calls = stored(db, str(folder))
    ledger_lines = len((folder / "ledger.jsonl").read_text().splitlines())
    assert len(sessions) == 3 * len(TASKS) + 300 and calls == ledger_lines > 0
    DAMAGE[damage](db)
    damaged = db.read_bytes()

    code, out, err = invoke("status")  # status still shows everything else, and names the damage
    assert code == 0, err
    problems = out.split("### Problems (1)")[1]
    assert "is damaged" in problems and "doctor --repair" in problems and "harvested" in problems
    for args in (("harvest", "--json"), tuple(run_args(root))):
        code, out, err = invoke(*args)
        assert code == 2, (args, out, err)
        assert f"the state database {db} is damaged" in err and "every harvested (redacted) session" in err
        assert "do not delete it" in err and "`skillsleep doctor --repair`" in err
        assert "Traceback" not in err
    assert not (night / "nights" / "0002").exists()  # the run stopped before a night began

    code, out, err = invoke("doctor", "--json")  # looking changes nothing
    report = json.loads(out)
    assert code == 1 and [p["kind"] for p in report["problems"]] == ["state.db"]
    assert report["problems"][0]["repaired"] == "" and "--repair" in report["problems"][0]["fix"]
    assert db.read_bytes() == damaged and not (night / "state-backups").exists()
    code, out, _ = invoke("doctor")
    assert code == 1 and "1 problem(s) remain: run `skillsleep doctor --repair`" in out

    code, out, err = invoke("doctor", "--repair", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["healthy"] and report["remaining"] == 0
    assert (Path(report["backup"]) / "state.db").read_bytes() == damaged  # kept exactly, nothing deleted
    assert report["rebuilt_calls"] == ledger_lines and report["harvest"]["chat"] == len(sessions)
    assert any("response cache" in lost for lost in report["lost"])
    assert check_database(db) == ("", True)
    assert stored(db, str(folder)) == (sessions, calls)  # the sessions and the night's ledger are back

    code, out, err = invoke("doctor")
    assert code == 0 and "no problems found" in out, err
    assert run_night(root)["night"] == 2  # and a night runs


def test_repair_salvages_sessions_whose_transcripts_are_gone(night: Path) -> None:
    db = night / "state.db"
    before, _ = stored(db, "")
    pages = len(db.read_bytes()) // page_size(db)
    garbage_pages(db, range(pages // 2, pages // 2 + 8))  # a few leaf pages of the sessions table
    for log in (night.parent / "chats").iterdir():
        log.unlink()  # the agent deleted its old transcripts
    code, out, err = invoke("doctor", "--repair", "--json")
    assert code == 0, err
    report = json.loads(out)
    salvaged = report["salvaged"]["sessions"]
    assert 0 < salvaged < len(before) and report["salvaged"]["unreadable"] == ["sessions"]
    assert any("harvested sessions in damaged rows" in lost for lost in report["lost"])
    after, _ = stored(db, "")
    assert len(after) == salvaged and after < before
    code, out, _ = invoke("doctor", "--repair")
    assert code == 0 and "no problems found" in out


def test_damaged_records_are_found_moved_aside_and_the_memory_rebuilt(night: Path) -> None:
    data = night
    assert invoke("adopt")[0] == 0
    (memory,) = (data / "sleep").iterdir()
    original = SkillMemory.model_validate_json(memory.read_bytes())
    assert original.splits and original.tasks and original.nights == [1]  # rebuilt with identities below
    memory.write_bytes(b'{"skill_path": "\xff')
    (data / "nights" / "0009").mkdir()
    (data / "nights" / "0009" / "night.json").write_bytes(b'{"night": 9, \xfe')
    live = data.parent / "other" / "SKILL.md"
    live.parent.mkdir()
    live.write_text("# other\n")
    staged = Proposals(data).stage(live, "# other\n- more\n", accepted=True, reason="r")
    (data / "staging" / staged.id / "proposal.json").write_bytes(b"\x00\x00")
    history = data / "history.jsonl"
    history_before = history.read_bytes()
    history.write_bytes(history_before + b"\x9c garbage\n")

    code, out, err = invoke("status", "--json")
    assert code == 0 and len(json.loads(out)["problems"]) == 4, err
    code, _, err = invoke("rollback")
    assert code == 2 and "doctor --repair" in err
    code, out, err = invoke("doctor", "--json")
    report = json.loads(out)
    assert code == 1 and sorted(p["kind"] for p in report["problems"]) == ["history", "memory", "night", "proposal"]

    code, out, err = invoke("doctor", "--repair")
    assert code == 0, err
    assert "everything was repaired" in out and "rebuilt from night(s) 1" in out
    rebuilt = SkillMemory.model_validate_json(memory.read_bytes())
    assert rebuilt == original
    assert next(iter((data / "sleep").glob("*.broken-*"))).read_bytes() == b'{"skill_path": "\xff'
    assert history.read_bytes() == history_before
    assert next(iter(data.glob("history.jsonl.broken-*"))).read_bytes() == history_before + b"\x9c garbage\n"
    assert [p.name.split(".broken-")[0] for p in (data / "nights" / "0009").iterdir()] == ["night.json"]
    assert not (data / "staging" / staged.id / "proposal.json").exists()
    assert (data / "staging" / staged.id / "SKILL.md").read_text() == "# other\n- more\n"
    code, out, err = invoke("status", "--json")
    assert code == 0 and json.loads(out)["problems"] == [], err
    code, _, err = invoke("rollback")  # the history reads again: the adopt is undone
    assert code == 0, err


def test_doctor_on_a_healthy_or_missing_data_dir_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = night_env(monkeypatch, tmp_path)
    for args in (("doctor",), ("doctor", "--repair")):
        code, out, err = invoke(*args)
        assert code == 0 and "no problems found" in out, err
    assert not data.exists()


def test_repair_waits_for_no_night(night: Path) -> None:
    (night / "history.jsonl").write_bytes(b"\xff\n")
    with StateLock(night, "skillsleep run"):
        code, _, err = invoke("doctor", "--repair")
    assert code == 1 and "another skillsleep cycle is running" in err
    assert (night / "history.jsonl").read_bytes() == b"\xff\n"


def test_repair_sets_a_history_that_cannot_be_read_at_all_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path))
    (tmp_path / "history.jsonl").mkdir()
    (tmp_path / "history.jsonl" / "kept.txt").write_text("mine")
    repaired = CliRunner().invoke(main, ["doctor", "--repair"])
    assert repaired.exit_code == 0 and "Traceback" not in repaired.output, repaired.output
    aside = list(tmp_path.glob("history.jsonl.broken-*"))
    assert len(aside) == 1 and (aside[0] / "kept.txt").read_text() == "mine"
    assert CliRunner().invoke(main, ["doctor"]).exit_code == 0
