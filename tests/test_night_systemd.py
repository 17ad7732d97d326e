"""`skillsleep schedule --systemd`: a user timer and service, checked by `systemd-analyze verify`.

No systemd user manager answers in these tests (XDG_RUNTIME_DIR points at an empty folder), so
`schedule` writes the units and prints the commands that start the timer; nothing on the
machine's own systemd is touched. Where a manager answers, it runs those commands itself.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.systemd_timer import systemd_quote

UNIT = "skillsleep-night"


@pytest.fixture
def user_units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private XDG_CONFIG_HOME and data folder, and no user manager to answer."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    (tmp_path / "run").mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "config" / "systemd" / "user"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_schedule_systemd_writes_a_timer_and_service_systemd_accepts(user_units: Path) -> None:
    code, out, err = invoke(
        "schedule",
        "--systemd",
        "--at",
        "03:00",
        "--json",
        "--backend",
        "local",
        "--preferences",
        'be 100% "sure" of $HOME; C:\\path',
    )
    assert code == 0, err
    s = json.loads(out)
    service, timer = user_units / f"{UNIT}.service", user_units / f"{UNIT}.timer"
    assert (s["via"], s["when"], s["installed"], s["replaced"]) == ("systemd", "03:00 daily", True, False)
    assert s["written"] == [str(service), str(timer)]
    assert s["todo"] == ["systemctl --user daemon-reload", f"systemctl --user enable --now {UNIT}.timer"]
    unit = service.read_text()
    assert "Type=oneshot" in unit and f"WorkingDirectory={user_units.parents[2]}" in unit
    assert 'ExecStart="/bin/sh" ' in unit
    assert systemd_quote('be 100% "sure" of $HOME; C:\\path') in unit
    assert f'"SKILLSLEEP_LOG_DIR={user_units.parents[2] / "data" / "logs"}"' in unit
    assert "OnCalendar=*-*-* 03:00:00" in timer.read_text() and "Persistent=true" in timer.read_text()
    if shutil.which("systemd-analyze"):
        verify = subprocess.run(
            ["systemd-analyze", "verify", str(service), str(timer)], capture_output=True, text=True, timeout=120
        )
        assert verify.returncode == 0 and UNIT not in verify.stderr, verify.stderr

    code, out, err = invoke("schedule", "--systemd", "--at", "04:30", "--json", "--backend", "local")
    assert code == 0, err
    assert json.loads(out)["replaced"] is True
    assert "OnCalendar=*-*-* 04:30:00" in timer.read_text() and "--preferences" not in service.read_text()

    code, out, err = invoke("status", "--json")
    assert code == 0, err
    assert [x for x in json.loads(out)["schedule"]["scheduled"] if x["via"] == "systemd"] == [
        {"via": "systemd", "when": "04:30 daily", "where": str(timer), "entry": "*-*-* 04:30:00"}
    ]
    assert "04:30 daily via systemd" in invoke("status")[1]

    wanted = user_units / "timers.target.wants"  # what `systemctl --user enable` links
    wanted.mkdir()
    (wanted / f"{UNIT}.timer").symlink_to(f"../{UNIT}.timer")
    code, out, err = invoke("unschedule", "--systemd", "--json")
    assert code == 0, err
    s = json.loads(out)
    assert s["removed"] is True and s["todo"] == [
        f"systemctl --user stop {UNIT}.timer",
        "systemctl --user daemon-reload",
    ]
    assert sorted(p.name for p in user_units.rglob("*")) == ["timers.target.wants"]
    code, out, _ = invoke("unschedule", "--systemd")
    assert code == 0 and "nothing was scheduled via systemd" in out


def test_a_unit_file_skillsleep_did_not_write_is_never_overwritten_or_removed(user_units: Path) -> None:
    user_units.mkdir(parents=True)
    mine = user_units / f"{UNIT}.timer"
    mine.write_text("[Timer]\nOnCalendar=hourly\n")
    for verb in (["schedule", "--systemd", "--at", "03:00"], ["unschedule", "--systemd"]):
        code, _, err = invoke(*verb)
        assert code == 2 and f"{mine} was not written by skillsleep" in err
    assert mine.read_text() == "[Timer]\nOnCalendar=hourly\n"
    assert not (user_units / f"{UNIT}.service").exists()


def test_systemd_takes_a_time_of_day_not_a_cron_expression(user_units: Path) -> None:
    code, _, err = invoke("schedule", "--systemd", "--cron", "0 3 * * 1")
    assert code == 2 and "--cron works with the crontab only; with --systemd give --at HH:MM" in err
    assert not user_units.exists()


def test_systemd_quoting_keeps_every_character_literal() -> None:
    assert systemd_quote("plain") == '"plain"'
    assert systemd_quote('a "b" \\c') == '"a \\"b\\" \\\\c"'
    assert systemd_quote("100% $HOME") == '"100%% $$HOME"'
    assert systemd_quote("100% $HOME", dollars=False) == '"100%% $HOME"'
