"""`doctor --repair` and a running `skillsleep watch`: the watch writes the state database a repair
moves aside and rebuilds, so the repair names it (pid, since when) with how to stop it, and
changes nothing; once the watch is stopped (or killed) the repair goes ahead."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sleep_kit import invoke

from skillsleep.core.night.lock import Running, running

SKILLSLEEP = Path(sys.executable).parent / "skillsleep"
GARBAGE = b"this is no SQLite database\n" * 200


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var, name in (
        ("HOME", "home"),
        ("SKILLSLEEP_HOME", "data"),
        ("CLAUDE_CONFIG_DIR", "claude"),
        ("CODEX_HOME", "codex"),
        ("OPENCLAW_STATE_DIR", "openclaw"),
    ):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(var, str(tmp_path / name))
    for var in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "claude" / "projects").mkdir()
    return tmp_path / "data"


@contextmanager
def watching(*, sigint_ignored: bool = False) -> Iterator[subprocess.Popen[str]]:
    """A real `skillsleep watch`, once it has caught up and watches; stopped (Ctrl-C) afterwards.
    `sigint_ignored`: started with SIGINT ignored, as a background job of a script is (and as a
    test worker was in CI, which made the watch deaf to Ctrl-C)."""
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    watch = subprocess.Popen(
        [str(SKILLSLEEP), "watch", "--debounce", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore,
    )
    try:
        assert watch.stderr is not None
        line = watch.stderr.readline()
        assert "watching" in line, line + watch.stderr.read()
        yield watch
    finally:
        if watch.poll() is None:
            watch.send_signal(signal.SIGINT)
        try:
            watch.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # never leave it running into the next test
            watch.kill()
            _, err = watch.communicate()
            pytest.fail(f"skillsleep watch did not stop within 60 s of Ctrl-C; its stderr:\n{err[-3000:]}")


def test_repair_names_a_running_watch_with_its_pid_and_changes_nothing(data: Path) -> None:
    with watching() as watch:
        (data / "state.db").write_bytes(GARBAGE)  # damaged while the watch runs
        code, _, err = invoke("doctor", "--repair")
        assert code == 1, err
        assert f"`skillsleep watch` is running (pid {watch.pid}, skillsleep watch since " in err
        assert f"`kill {watch.pid}`" in err and "nothing was changed" in err
        assert (data / "state.db").read_bytes() == GARBAGE and not (data / "state-backups").exists()
    assert watch.returncode == 0
    code, out, err = invoke("doctor", "--repair")  # the watch was stopped: the repair goes ahead
    assert code == 0, err + out
    assert (data / "state-backups").is_dir() and "everything was repaired" in out


def test_a_killed_watch_does_not_stop_a_repair_and_its_mark_is_cleaned_up(data: Path) -> None:
    with watching() as watch:
        watch.kill()
        watch.wait(timeout=60)
    assert [p.name for p in (data / "running").iterdir()] == [f"watch-{watch.pid}.lock"]  # left by the kill
    assert running(data, "watch") == []
    (data / "state.db").write_bytes(GARBAGE)
    code, out, err = invoke("doctor", "--repair")
    assert code == 0 and "everything was repaired" in out, err
    with Running(data, "watch"):  # the next watch removes what the killed one left
        assert [p.name for p in (data / "running").iterdir()] == [f"watch-{os.getpid()}.lock"]
    assert list((data / "running").iterdir()) == []


def test_a_repair_that_leaves_the_state_database_alone_goes_ahead_beside_a_watch(data: Path) -> None:
    with watching():
        (data / "history.jsonl").write_bytes(b"\xff\n")
        code, out, err = invoke("doctor", "--repair")
        assert code == 0 and "everything was repaired" in out, err


def test_ctrl_c_stops_a_watch_started_with_sigint_ignored(data: Path) -> None:
    with watching(sigint_ignored=True) as watch:
        pass
    assert watch.returncode == 0 and running(data, "watch") == []  # a clean stop, its lock released
