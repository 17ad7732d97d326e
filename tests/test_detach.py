"""`skillsleep run --detach` (`/sleep run` inside an agent): the night goes on in the background,
the command returns with its number and log; `status` shows a running night's progress."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sleep_kit import dead_pid, invoke, night_env, run_args, save_night, spend, write_chat_logs, write_scripts

from skillsleep.core.night.lock import StateLock
from skillsleep.core.night.nights import Nights, month_start
from skillsleep.core.night.record import NightRecord
from skillsleep.core.shared.events import HarvestDone, HarvestStarted, ProposalStaged, RolloutDone
from skillsleep.slash_commands.progress import plain_lines, read_event


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir with chat logs and scripts for a scripted night; returns the data dir."""
    data = night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")
    return data


def running(data: Path, night: int, pid: int, *, step: int | None = None, log: Path | None = None) -> None:
    """A night record of a running night with a plan, a state after `step` steps, and a ledger."""
    start = month_start()
    save_night(
        data,
        night,
        start,
        "/s/SKILL.md",
        status="running",
        pid=pid,
        harness="chat",
        steps=2,
        log=str(log) if log else None,
    )
    folder = Nights(data).folder(night)
    (folder / "plan.json").write_text("{}")
    if step is not None:
        (folder / "state.json").write_text(json.dumps({"epoch": night - 1, "step": step, "done": False}))
    for tokens in (1000, 234):
        spend(data, night, "target", tokens, 0.0, start, provider="scripted")


def wait_gone(pid: int) -> None:
    """Reap our own child, or wait until another process's is no longer running (killed, or a zombie)."""
    try:
        os.waitpid(pid, 0)
        return
    except ChildProcessError:
        pass
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(600):
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return
        except (FileNotFoundError, IndexError):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")


# --- status of a running night --------------------------------------------------------------------


def test_status_shows_a_running_nights_step_calls_tokens_and_log(night: Path) -> None:
    log = night / "logs" / "night-0002.log"
    running(night, 1, dead_pid(), step=1, log=night / "logs" / "night-0001.log")
    running(night, 2, os.getpid(), step=1, log=log)
    s = json.loads(invoke("status", "--json")[1])
    died, now = s["nights"]["recent"]
    assert died["status"] == "died" and died["log"] == str(night / "logs" / "night-0001.log")
    assert now["status"] == "running" and now["log"] == str(log)
    assert now["progress"] == {"stage": "step 2 of 2", "steps_done": 1, "steps": 2}
    assert (now["calls"], now["tokens"]) == (2, 1234)
    text = invoke("status")[1]
    assert f"  step 2 of 2; 2 calls, 1,234 tokens so far; log: {log}" in text
    assert f"  log: {night / 'logs' / 'night-0001.log'}" in text  # a died night's log, to see why
    md = invoke("sleep")[1]
    assert f"Night 2 is running (pid {os.getpid()}): step 2 of 2, 2 calls, 1,234 tokens so far; log: {log}" in md


@pytest.mark.parametrize(
    "files, stage",
    [
        ({}, "mining tasks"),
        ({"plan.json": "{}"}, "scoring the live skill"),
        ({"plan.json": "{}", "state.json": json.dumps({"epoch": 0, "step": 0, "done": False})}, "step 1 of 2"),
        ({"plan.json": "{}", "state.json": json.dumps({"epoch": 0, "step": 2, "done": False})}, "end of the night"),
        ({"plan.json": "{}", "state.json": json.dumps({"epoch": 1, "step": 0, "done": True})}, "the final scores"),
        ({"plan.json": "{}", "state.json": "{torn"}, "training"),
    ],
)
def test_the_stage_of_a_running_night_comes_from_the_files_it_writes(
    night: Path, files: dict[str, str], stage: str
) -> None:
    Nights(night).save(
        NightRecord(
            night=1,
            started=month_start(),
            status="running",
            pid=os.getpid(),
            harness="chat",
            skill_path="/s/SKILL.md",
            steps=2,
        )
    )
    for name, text in files.items():
        (Nights(night).folder(1) / name).write_text(text)
    progress = json.loads(invoke("status", "--json")[1])["nights"]["recent"][0]["progress"]
    assert progress["stage"].startswith(stage)


# --- --detach refuses while a night runs --------------------------------------------------------------


def test_detach_while_a_night_holds_the_lock_names_it_and_starts_nothing(night: Path, tmp_path: Path) -> None:
    log = night / "logs" / "night-0003.log"
    running(night, 3, os.getpid(), step=0, log=log)
    with StateLock(night, "skillsleep run"):
        before = sorted(p.name for p in night.rglob("*"))
        code, out, err = invoke(*run_args(tmp_path, "--detach"))
        assert code == 1, (out, err)
        assert f"night 3 is already running (pid {os.getpid()}" in err and str(log) in err
        assert "nothing was started" in err
        code, out, err = invoke("sleep", *run_args(tmp_path, "--detach"))
        assert code == 1 and out.startswith("**Error:** night 3 is already running")
        assert sorted(p.name for p in night.rglob("*")) == before  # no log, no night, nothing harvested


def test_detach_with_bad_settings_is_a_usage_error_before_anything_starts(night: Path, tmp_path: Path) -> None:
    code, _out, err = invoke(*run_args(tmp_path, "--detach", "--harness", "nope"))
    assert code == 2 and "nope" in err
    assert not (night / "logs").exists() and not (night / "nights").exists()


# --- real detached nights ---------------------------------------------------------------------------


@pytest.mark.slow
def test_detach_returns_with_the_night_number_and_the_night_goes_on_in_the_background(
    night: Path, tmp_path: Path
) -> None:
    code, out, err = invoke(*run_args(tmp_path, "--detach", "--json"))
    assert code == 0, err
    started = json.loads(out)
    assert started["night"] == 1 and started["log"] == str(night / "logs" / "night-0001.log")
    assert started["resumed"] is False
    wait_gone(started["pid"])  # the test waits for the night it started
    record = Nights(night).list()[0]
    assert record.status == "finished" and record.log == started["log"] and record.pid == started["pid"]
    log = Path(started["log"]).read_text().splitlines()
    events = [e for e in map(read_event, log) if e is not None]  # the progress: one JSON event a line
    assert events[0] == HarvestStarted() and isinstance(events[1], HarvestDone)
    assert ProposalStaged(proposal=record.end.proposal_id or "", accepted=True, reason=record.end.reason) in events
    assert sum(isinstance(e, RolloutDone) for e in events) == len(
        (Nights(night).folder(1) / "rollouts.jsonl").read_text().splitlines()
    )
    plain = plain_lines(log)  # what a person reads of it: the lines a night prints, then the summary
    assert plain[0] == "· harvesting new sessions" and "# skillsleep — night 1" in "\n".join(plain)
    assert not [line for line in plain if line.startswith("{")]
    assert list((night / "logs").iterdir()) == [Path(started["log"])]  # the starting log became the night's
    s = json.loads(invoke("status", "--json")[1])
    assert s["nights"]["recent"][0]["status"] == "finished" and s["pending"][0]["id"] == record.end.proposal_id
    code, out, err = invoke("sleep", *run_args(tmp_path, "--detach"))
    assert code == 0, err
    assert out.startswith("Night 2 started in the background (pid ") and "`/sleep status` shows its progress" in out
    wait_gone(Nights(night).list()[-1].pid or 0)


@pytest.mark.slow
def test_detach_of_a_night_that_cannot_start_shows_its_log(night: Path, tmp_path: Path) -> None:
    """A night that fails once detached (here on a damaged state.db) is reported with its log's
    tail; bad settings (an unreadable script, a missing key) are refused before detaching."""
    night.mkdir(parents=True, exist_ok=True)
    (night / "state.db").write_bytes(b"not a database" * 100)  # opened by the night itself, after detaching
    code, out, err = invoke(*run_args(tmp_path, "--detach"))
    assert code == 1, (out, err)
    assert "the night did not start" in err and "state.db" in err  # the tail of its log says why
    logs = list((night / "logs").iterdir())
    assert len(logs) == 1 and logs[0].name.startswith("starting-") and str(logs[0]) in err
    assert not (night / "nights").exists()


@pytest.mark.slow
def test_a_second_detach_starts_nothing_and_a_killed_detached_night_dies_and_resumes(
    night: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault_server
) -> None:  # type: ignore[no-untyped-def]
    from test_sleep_faults import answer_like_scripts, openai_args

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    answer_like_scripts(fault_server, monkeypatch, delay_s=0.3)  # slow enough to find the night running
    args = openai_args(f"{fault_server.url}/v1")
    code, out, err = invoke(*args, "--detach", "--json")
    assert code == 0, err
    first = json.loads(out)
    state = Nights(night).folder(1) / "state.json"
    try:
        for _ in range(1200):  # until the live skill is scored: from then on a stopped night resumes
            if state.exists():
                break
            time.sleep(0.05)
        assert state.exists(), Path(first["log"]).read_text()[-2000:]
        s = json.loads(invoke("status", "--json")[1])
        now = s["nights"]["recent"][0]
        assert now["status"] == "running" and now["pid"] == first["pid"] and now["log"] == first["log"]
        assert now["calls"] > 0 and now["tokens"] > 0 and now["progress"]["steps"] == 2
        code, out, err = invoke(*args, "--detach")
        assert code == 1 and f"night 1 is already running (pid {first['pid']}" in err and first["log"] in err
        assert sorted(p.name for p in (night / "nights").iterdir()) == ["0001"]
    finally:
        os.kill(first["pid"], signal.SIGKILL)
        wait_gone(first["pid"])
    s = json.loads(invoke("status", "--json")[1])
    assert s["nights"]["recent"][0]["status"] == "died" and "died" in invoke("status")[1]
    answer_like_scripts(fault_server, monkeypatch)  # no delay now
    code, out, err = invoke(*args, "--json")
    assert code == 0, err
    assert "· resuming night 1 of " in "\n".join(plain_lines(err.splitlines()))  # --json: as an event
    assert json.loads(out)["night"] == 1 and json.loads(out)["resumed"] is True


@pytest.mark.slow
def test_two_detach_at_once_start_one_night_and_the_other_says_so(
    night: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault_server
) -> None:  # type: ignore[no-untyped-def]
    from test_sleep_faults import answer_like_scripts, openai_args

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    answer_like_scripts(fault_server, monkeypatch, delay_s=1.0)
    cmd = [
        sys.executable,
        "-m",
        "skillsleep.slash_commands.cli",
        *openai_args(f"{fault_server.url}/v1"),
        "--detach",
        "--json",
    ]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    done = [(p.wait(), *p.communicate()) for p in procs]
    won = [json.loads(out) for code, out, _ in done if code == 0]
    try:
        assert len(won) == 1, done
        lost = next(err for code, _, err in done if code != 0)
        assert f"night {won[0]['night']} is already running (pid {won[0]['pid']}" in lost, done
        assert sorted(p.name for p in (night / "nights").iterdir()) == [f"{won[0]['night']:04d}"]
    finally:
        for w in won:
            os.kill(w["pid"], signal.SIGKILL)
            wait_gone(w["pid"])
