"""The data folder holds every harvested conversation: under the usual umask 022 it is still the
user's alone. Its folders are 0700 and its files 0600 (the state database's -wal and -shm too);
a copy of the user's skill (staged, backed up) keeps that file's own mode, and adopt and
rollback keep the live file's."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sleep_kit import invoke, night_env, run_night, write_chat_logs, write_scripts

from skillsleep.core.models.store import Store
from skillsleep.core.report.proposals import Proposals

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def open_to_others(folder: Path) -> list[str]:
    """Every folder or file under `folder` (itself included) that its group or others may use."""
    paths = [folder, *folder.rglob("*")]
    return [f"{p} {mode(p):o}" for p in paths if mode(p) & 0o077]


def test_a_night_leaves_every_folder_and_file_of_the_data_folder_to_its_user_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")
    summary = run_night(tmp_path)
    assert summary["outcome"] == "accepted"
    assert (data / "state.db").is_file() and (data / "nights" / "0001" / "night.json").is_file()
    assert any((data / "staging").iterdir()) and open_to_others(data) == []
    code, _, err = invoke("adopt")  # the managed skill is new: the backup says it was absent
    assert code == 0, err
    assert open_to_others(data) == []


def test_the_state_database_and_its_wal_and_shm_are_0600_and_an_older_readable_one_is_tightened(
    tmp_path: Path,
) -> None:
    db = tmp_path / "data" / "state.db"
    store = Store(db)
    store.set_meta("k", "v")  # the WAL and its index exist while the store is open
    assert {p.name: mode(p) for p in db.parent.iterdir()} == {
        "state.db": 0o600,
        "state.db-wal": 0o600,
        "state.db-shm": 0o600,
    }
    assert mode(db.parent) == 0o700
    store.close()
    db.chmod(0o644)  # as an older skillsleep left it
    Store(db).close()
    assert mode(db) == 0o600


@pytest.mark.parametrize("skill_mode", [0o600, 0o640], ids=["0600", "0640"])
def test_staged_and_backed_up_copies_keep_the_live_skills_mode_and_adopt_keeps_the_live_files(
    tmp_path: Path, skill_mode: int
) -> None:
    live = tmp_path / "skills" / "SKILL.md"
    live.parent.mkdir()
    live.write_text("# S\n- rule\n")
    live.chmod(skill_mode)
    props = Proposals(tmp_path / "data")
    p = props.stage(live, "# S\n- rule\n- another rule\n", accepted=True, reason="gate", files={"report.md": "r\n"})
    folder = tmp_path / "data" / "staging" / p.id
    assert {f.name: mode(f) for f in folder.iterdir()} == {
        "SKILL.md": skill_mode,
        "base.md": skill_mode,
        "diff.patch": 0o600,
        "report.md": 0o600,
        "proposal.json": 0o600,
    }
    props.adopt(p.id)
    assert mode(live) == skill_mode and live.read_text().endswith("- another rule\n")
    [backup] = (tmp_path / "data" / "backups").iterdir()
    assert (mode(backup), mode(backup / "SKILL.md"), mode(backup / "meta.json")) == (0o700, skill_mode, 0o600)
    live.unlink()  # a rollback brings back a deleted live file with the mode it had
    props.rollback(force=True)
    assert mode(live) == skill_mode and live.read_text() == "# S\n- rule\n"
    assert mode(tmp_path / "data" / "history.jsonl") == 0o600
    assert [p for p in open_to_others(tmp_path / "data") if not p.endswith(f" {skill_mode:o}")] == []


def test_the_cron_script_keeps_its_logs_and_the_nights_files_private(tmp_path: Path) -> None:
    fake = tmp_path / "skillsleep"  # stands in for `skillsleep run`: writes one file in the data folder
    fake.write_text('#!/bin/sh\necho "night ran"\necho private > "$SKILLSLEEP_HOME/written-by-the-night"\n')
    fake.chmod(0o755)
    data = tmp_path / "data"
    env = [f"SKILLSLEEP_HOME={data}", f"SKILLSLEEP_LOG_DIR={data / 'logs'}", "PATH=/usr/bin:/bin"]
    script = ROOT / "cron" / "run_sleep_cron.sh"
    command = ["env", "-i", *env, "/bin/sh", str(script), str(fake)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)  # under umask 022
    assert done.returncode == 0, done.stderr
    [log] = (data / "logs").glob("cron-*.log")
    assert "night ran" in log.read_text()
    assert (mode(data), mode(data / "logs"), mode(log)) == (0o700, 0o700, 0o600)
    assert mode(data / "written-by-the-night") == 0o600


def test_doctor_names_a_data_folder_others_may_enter_and_repair_makes_it_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = night_env(monkeypatch, tmp_path)
    data.mkdir(mode=0o755)  # as an older skillsleep made it
    Store(data / "state.db").close()
    code, out, _ = invoke("doctor")
    assert code == 1 and f"- data folder {data}: other users may read it (mode 755)" in out
    assert f"chmod 700 {data}" in out and mode(data) == 0o755  # doctor alone changes nothing
    code, out, err = invoke("doctor", "--repair")
    assert code == 0 and "made yours alone (0700)" in out, err
    assert mode(data) == 0o700
    code, out, _ = invoke("doctor")
    assert code == 0 and "no problems found" in out
