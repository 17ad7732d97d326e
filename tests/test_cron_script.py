"""cron/run_sleep_cron.sh run for real, in cron's bare environment (`env -i`, PATH=/usr/bin:/bin).

It is quiet and exits 0 when the night ran to its end, says one line and exits non-zero on a real
failure, never runs twice at once, reads the user's env file (only one that is theirs alone) and
keeps the newest logs.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sleep_kit import run_args, write_chat_logs, write_scripts

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "cron" / "run_sleep_cron.sh"
SKILLSLEEP = Path(sys.executable).parent / "skillsleep"


def night_root(root: Path, *, learn: bool = True) -> Path:
    """Scripts for the scripted backend, a HOME, and chat logs with recurring tasks (`learn`)."""
    write_scripts(root)
    (root / "home").mkdir()
    (root / "chats").mkdir()
    if learn:
        write_chat_logs(root / "chats")
    return root


def cron_env(root: Path) -> dict[str, str]:
    """What the managed crontab line sets: the rest of cron's environment is empty."""
    data = root / "data"
    return {
        "HOME": str(root / "home"),
        "SKILLSLEEP_HOME": str(data),
        "SKILLSLEEP_LOG_DIR": str(data / "logs"),
        "SKILLSLEEP_ENV_FILE": str(data / "night.env"),
        "PATH": "/usr/bin:/bin",
    }


def run_script(root: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`env -i … /bin/sh run_sleep_cron.sh SKILLSLEEP FLAGS` from `root` (flags default: the kit's night)."""
    given = env if env is not None else cron_env(root)
    flags = flags or (*run_args(root)[1:], "--chat-dir", str(root / "chats"))
    return subprocess.run(
        ["env", "-i", *(f"{k}={v}" for k, v in given.items()), "/bin/sh", str(SCRIPT), str(SKILLSLEEP), *flags],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def logs(root: Path) -> list[Path]:
    return sorted((root / "data" / "logs").glob("cron-*.log"))


def night(root: Path, n: int = 1) -> dict[str, object]:
    return dict(json.loads((root / "data" / "nights" / f"{n:04d}" / "night.json").read_text()))


def one_line(text: str) -> str:
    assert text.endswith("\n") and text.count("\n") == 1, repr(text)
    return text


@pytest.mark.slow
def test_a_night_with_nothing_new_to_learn_is_quiet_and_exits_0(tmp_path: Path) -> None:
    root = night_root(tmp_path, learn=False)
    done = run_script(root)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert night(root)["outcome"] == "no-candidate"
    [log] = logs(root)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("skillsleep-cron: start ") and f"{SKILLSLEEP} run --backend scripted" in lines[0]
    assert "No candidate" in log.read_text()
    assert lines[-1].startswith("skillsleep-cron: end ") and lines[-1].endswith(": exit 0")


@pytest.mark.slow
def test_a_night_that_learns_is_quiet_too_and_only_the_newest_logs_are_kept(tmp_path: Path) -> None:
    root = night_root(tmp_path)
    folder = root / "data" / "logs"
    folder.mkdir(parents=True)
    old = [folder / f"cron-20200101T0000{i:02d}Z-1.log" for i in range(20)]
    for path in old:
        path.write_text("skillsleep-cron: end 2020-01-01T00:00:00Z: exit 0\n")
    done = run_script(root)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert night(root)["outcome"] == "accepted"
    kept = logs(root)
    assert len(kept) == 14 and kept[:13] == old[7:]  # the 7 oldest went; the night's own log is the newest
    assert "Accepted" in kept[-1].read_text()


@pytest.mark.slow
def test_a_broken_setting_is_one_line_on_stderr_and_exit_2(tmp_path: Path) -> None:
    root = night_root(tmp_path)
    (root / "data").mkdir()
    (root / "data" / "config.toml").write_text('[sleep]\nrollouts_k = "2"\n')
    done = run_script(root)
    assert done.returncode == 2 and done.stdout == ""
    line = one_line(done.stderr)
    assert "config.toml: [sleep] rollouts_k: expected an integer" in line and str(logs(root)[0]) in line
    assert logs(root)[0].read_text().splitlines()[-1].startswith("skillsleep-cron: end ")
    assert not (root / "data" / "nights").exists()


@pytest.mark.slow
def test_a_night_that_stops_early_is_one_line_and_the_env_file_reaches_it(tmp_path: Path) -> None:
    root = night_root(tmp_path)
    (root / "data").mkdir()
    env_file = root / "data" / "night.env"
    env_file.write_text(
        "# read by the night, never written into the crontab\nSKILLSLEEP_BUDGET_TOKENS=50\nSKILLSLEEP_KEEP_LOGS=1\n"
    )
    env_file.chmod(0o600)
    (root / "data" / "logs").mkdir()
    (root / "data" / "logs" / "cron-20200101T000000Z-1.log").write_text("an old night\n")
    done = run_script(root)
    assert done.returncode == 1 and done.stdout == ""
    assert "the night stopped early (exit 1): token budget reached" in one_line(done.stderr)
    assert "raise --budget-tokens to go on" in done.stderr and "\\" not in done.stderr  # text, not markdown
    assert night(root)["outcome"] == "stopped-early"
    [log] = logs(root)  # SKILLSLEEP_KEEP_LOGS=1 from the env file: only tonight's
    assert "token budget reached" in log.read_text()


def test_an_env_file_others_can_write_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    root = night_root(tmp_path)
    (root / "data").mkdir()
    env_file = root / "data" / "night.env"
    env_file.write_text("SKILLSLEEP_STEPS=1\n")
    env_file.chmod(0o664)
    done = run_script(root)
    assert done.returncode == 2 and done.stdout == ""
    assert f"refusing to read {env_file}" in one_line(done.stderr) and "chmod 600" in done.stderr
    assert not (root / "data" / "nights").exists()


def test_a_start_while_the_previous_night_runs_writes_one_log_line_and_exits_0(tmp_path: Path) -> None:
    root = night_root(tmp_path)
    folder = root / "data" / "logs"
    folder.mkdir(parents=True)
    fd = os.open(folder / "cron.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what the running night's script holds
        done = run_script(root)
    finally:
        os.close(fd)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    [log] = logs(root)
    [line] = log.read_text().splitlines()
    assert line.startswith("skillsleep-cron: skipped ") and line.endswith("the previous night is still running")
    assert not (root / "data" / "nights").exists()


def test_without_its_log_folder_the_script_says_what_to_do(tmp_path: Path) -> None:
    root = night_root(tmp_path)
    env = {k: v for k, v in cron_env(root).items() if k != "SKILLSLEEP_LOG_DIR"}
    done = run_script(root, env=env)
    assert done.returncode == 2
    assert "SKILLSLEEP_LOG_DIR is not set" in one_line(done.stderr) and "skillsleep schedule --print" in done.stderr
