"""`skillsleep schedule` / `unschedule`: the night in the user's crontab, with the real `crontab`.

Nothing here touches root's own crontab: every command that edits a crontab runs as nobody
(tests/unprivileged.py), whose crontab is saved and put back; in-process tests only `--print`.
The managed line is then run exactly as cron would run it: `/bin/sh -c` under `env -i` with
cron's PATH.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import AgentTools
from servers import Action, FaultServer
from sleep_kit import write_chat_logs, write_scripts
from unprivileged import NOBODY, crontab_skip_reason, nobody_crontab, run_as_nobody, shared_tmp

from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightEnd, NightRecord
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.cron_table import BEGIN, read_block

SKILLSLEEP = Path(sys.executable).parent / "skillsleep"
USER_LINES = '# my own jobs\nMAILTO=""\n*/10 * * * * /bin/true  # keep me\n'


def _needs_crontab() -> None:
    reason = crontab_skip_reason()
    if reason:
        pytest.skip(reason)


@dataclass
class World:
    """A folder nobody owns with a HOME, a data folder and chat logs; nobody's crontab in the test's hands."""

    root: Path
    crontab: Callable[[], str | None]

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.root / "home"), "SKILLSLEEP_HOME": str(self.root / "data")}

    def skillsleep(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_as_nobody(list(args), self.env(), cwd=self.root)

    def flags(self, *extra: str) -> list[str]:
        """The kit's night on the scripted backend; the chat-log folder relative to where `schedule` runs."""
        return [
            "--backend",
            "scripted",
            "--optimizer-model",
            str(self.root / "opt.json"),
            "--target-model",
            str(self.root / "target.json"),
            "--since",
            "3650d",
            "--chat-dir",
            "chats",
            *extra,
        ]

    def line(self) -> str:
        block = read_block(self.crontab() or "")
        assert block is not None and len(block) == 1, self.crontab()
        return block[0]

    def night(self, n: int = 1) -> dict[str, object]:
        return dict(json.loads((self.root / "data" / "nights" / f"{n:04d}" / "night.json").read_text()))


@contextmanager
def world(crontab: str | None = USER_LINES) -> Iterator[World]:
    _needs_crontab()
    with shared_tmp() as tmp, nobody_crontab(crontab) as read:
        write_scripts(tmp)
        for name in ("home", "data", "chats"):
            (tmp / name).mkdir()
            os.chown(tmp / name, NOBODY, NOBODY)
        for path in tmp.iterdir():
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield World(tmp, read)


def cron_command(line: str) -> str:
    """What cron runs for a crontab line: the text after the five schedule fields, `\\%` unescaped
    (an unescaped `%` would end the command there; the managed line must have none)."""
    command = line.split(None, 5)[5]
    assert "%" not in command.replace("\\%", ""), command
    return command.replace("\\%", "%")


def like_cron(line: str) -> list[str]:
    """The process cron starts for `line`: /bin/sh -c with cron's bare environment. It runs as the
    test's own user: nobody may not start this checkout's Python from a shell (it can live under
    /root, mode 0700), and what is tested is the line, not the user."""
    return [
        "env",
        "-i",
        "HOME=/nonexistent",
        "LOGNAME=nobody",
        "SHELL=/bin/sh",
        "PATH=/usr/bin:/bin",
        "/bin/sh",
        "-c",
        cron_command(line),
    ]


def run_like_cron(line: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(like_cron(line), cwd="/", capture_output=True, text=True, timeout=300)


def line_of(summary: dict[str, object]) -> str:
    """The crontab line `schedule --json` installed or showed (its preview is the managed block)."""
    [line] = read_block(str(summary["preview"])) or []
    return line


def one_line(text: str) -> str:
    assert text.endswith("\n") and text.count("\n") == 1, repr(text)
    return text


# --- schedule, list, reschedule, unschedule -----------------------------------------------------


def test_schedule_then_reschedule_then_unschedule_keeps_the_users_own_lines() -> None:
    with world() as w:
        before = w.crontab()
        assert before == USER_LINES
        done = w.skillsleep("schedule", "--at", "03:00", *w.flags("--preferences", "be 100% sure"), "--json")
        assert done.returncode == 0, done.stderr
        s = json.loads(done.stdout)
        assert (s["via"], s["when"], s["installed"], s["replaced"]) == ("crontab", "03:00 daily", True, False)
        assert s["where"] == "the crontab of nobody"
        table = w.crontab()
        assert table is not None and table.startswith(USER_LINES) and table.count(BEGIN) == 1
        line = w.line()
        assert line.startswith("0 3 * * * ") and line == line_of(s)
        assert cron_command(line).endswith(shlex.join(w.flags("--preferences", "be 100% sure")))

        again = w.skillsleep("schedule", "--at", "4:15", "--steps", "1", "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["replaced"] is True
        table = w.crontab()
        assert table is not None and table.startswith(USER_LINES) and table.count(BEGIN) == 1
        line = w.line()
        assert line.startswith("15 4 * * * ") and line.endswith(" --steps 1") and "--preferences" not in line

        gone = w.skillsleep("unschedule", "--json")
        assert gone.returncode == 0, gone.stderr
        assert json.loads(gone.stdout)["removed"] is True
        assert w.crontab() == USER_LINES
        twice = w.skillsleep("unschedule")
        assert twice.returncode == 0 and "nothing was scheduled via crontab" in twice.stdout
        assert w.crontab() == USER_LINES


def test_unschedule_leaves_no_crontab_when_the_block_was_all_of_it() -> None:
    with world(crontab=None) as w:
        assert w.skillsleep("schedule", "--at", "03:00", *w.flags()).returncode == 0
        assert w.crontab() is not None
        assert w.skillsleep("unschedule").returncode == 0
        assert w.crontab() is None


@pytest.mark.slow
def test_the_exact_line_in_the_crontab_runs_a_night_in_crons_bare_environment() -> None:
    with world() as w:
        write_chat_logs(w.root / "chats")
        done = w.skillsleep("schedule", "--at", "03:00", *w.flags("--preferences", "be 100% sure"))
        assert done.returncode == 0, done.stderr
        night = run_like_cron(w.line())
        assert (night.returncode, night.stdout, night.stderr) == (0, "", "")
        record = w.night()
        assert record["outcome"] == "accepted" and record["sessions"] == 18
        [log] = sorted((w.root / "data" / "logs").glob("cron-*.log"))
        assert log.read_text().splitlines()[-1].endswith(": exit 0")
        for path in [w.root / "data", *(w.root / "data").rglob("*")]:  # as if cron had run it as nobody
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        status = w.skillsleep("status", "--json")
        assert status.returncode == 0, status.stderr
        schedule = json.loads(status.stdout)["schedule"]
        assert schedule["scheduled"] == [
            {"via": "crontab", "when": "03:00 daily", "where": "the crontab of nobody", "entry": w.line()}
        ]
        assert (schedule["last_run"]["outcome"], schedule["last_run"]["night"]) == ("accepted", 1)
        text = w.skillsleep("status").stdout
        assert "scheduled: 03:00 daily via crontab — last ran " in text and " UTC (accepted)" in text
        nothing_new = run_like_cron(w.line())  # the same sessions again: still quiet, still 0
        assert (nothing_new.returncode, nothing_new.stdout, nothing_new.stderr) == (0, "", "")


@pytest.mark.slow
def test_two_starts_at_once_run_one_night_and_the_key_comes_from_the_users_env_file() -> None:
    server = FaultServer(hang_s=300).start()
    server.default = Action(kind="hang")  # the first night waits in its first model call
    try:
        with world() as w:
            write_chat_logs(w.root / "chats")
            flags = [
                "--backend",
                "openai",
                "--optimizer-model",
                "m",
                "--target-model",
                "m",
                "--base-url",
                f"{server.url}/v1",
                "--retries",
                "0",
                "--since",
                "3650d",
                "--chat-dir",
                "chats",
            ]
            assert w.skillsleep("schedule", "--at", "03:00", *flags).returncode == 0
            env_file = w.root / "data" / "night.env"
            env_file.write_text("OPENAI_API_KEY=key-from-night-env\n")  # of the user who runs the line (like_cron)
            env_file.chmod(0o600)
            assert "key-from-night-env" not in (w.crontab() or "")
            first = subprocess.Popen(
                like_cron(w.line()), cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            try:
                deadline = time.monotonic() + 240
                while not server.posts() and first.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert server.posts(), "the first night never called the model server"
                second = run_like_cron(w.line())
                assert (second.returncode, second.stdout, second.stderr) == (0, "", "")
            finally:
                server.stop()  # the hanging call ends: the first night stops early
                out, err = first.communicate(timeout=240)
            assert first.returncode == 1 and out == ""
            assert "the night stopped early (exit 1): " in one_line(err)
            assert "([sleep] retries / call_timeout in config.toml" in err  # shown as text, not markdown
            assert server.posts()[0].headers["authorization"] == "Bearer key-from-night-env"
            logs = sorted((w.root / "data" / "logs").glob("cron-*.log"))
            texts = sorted((p.read_text() for p in logs), key=len)
            assert len(logs) == 2 and texts[0].count("\n") == 1
            assert "skipped" in texts[0] and "the previous night is still running" in texts[0]
    finally:
        server.stop()


# --- bad input changes nothing -------------------------------------------------------------------


def test_a_typo_in_the_run_flags_fails_at_schedule_and_leaves_the_crontab_as_it_was() -> None:
    with world() as w:
        for args, words in (
            (["--at", "03:00", "--rollouts-k", "0"], "--rollouts-k"),
            (
                ["--at", "03:00", "--harnes", "codex"],
                "No such option '--harnes'. (Did you mean one of: '--candidates', '--dreams', '--harness'?)",
            ),
            (["--at", "25:00"], "--at '25:00': expected a time of day HH:MM"),
        ):
            done = w.skillsleep("schedule", *args)
            assert done.returncode == 2, (args, done.stderr)
            assert words in done.stderr and "Traceback" not in done.stderr
        assert w.crontab() == USER_LINES


def test_a_user_cron_refuses_is_a_clear_error_and_nothing_changes() -> None:
    with world() as w:
        with cron_denied("nobody"):
            for verb in (["schedule", "--at", "03:00", *w.flags()], ["unschedule"]):
                done = w.skillsleep(*verb)
                assert done.returncode == 2, done.stderr
                assert "crontab refused to read the crontab of nobody" in done.stderr
                assert "not allowed" in done.stderr and "--systemd" in done.stderr and "Traceback" not in done.stderr
        assert w.crontab() == USER_LINES  # read once cron.deny is back: it refuses root's -u nobody too


def test_a_line_too_long_for_cron_is_refused_with_what_to_do_and_nothing_changes() -> None:
    with world() as w:
        done = w.skillsleep("schedule", "--at", "03:00", *w.flags("--preferences", "keep it short " * 80))
        assert done.returncode == 2, done.stderr
        assert "crontab refused to write the crontab of nobody" in done.stderr and "command too long" in done.stderr
        assert "move run flags into [sleep] in config.toml" in done.stderr and "nothing was changed" in done.stderr
        assert w.crontab() == USER_LINES


def test_a_crontab_whose_skillsleep_block_is_left_open_is_not_guessed_at() -> None:
    broken = f"{USER_LINES}{BEGIN}\n0 3 * * * /bin/true\n"
    with world(crontab=broken) as w:
        done = w.skillsleep("schedule", "--at", "03:00", *w.flags())
        assert done.returncode == 2
        assert "line 4 starts the skillsleep block without its end line" in done.stderr
        assert w.crontab() == broken


@contextmanager
def cron_denied(user: str) -> Iterator[None]:
    """`user` listed in /etc/cron.deny (crontab itself refuses them); the file put back as it was."""
    deny, allow = Path("/etc/cron.deny"), Path("/etc/cron.allow")
    if allow.exists():
        pytest.skip("/etc/cron.allow exists here, so /etc/cron.deny is not consulted")
    saved = deny.read_bytes() if deny.exists() else None
    deny.write_text(f"{(saved or b'').decode()}{user}\n")
    try:
        yield
    finally:
        if saved is None:
            deny.unlink()
        else:
            deny.write_bytes(saved)


# --- what the line carries (in-process: --print installs nothing) -------------------------------


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_print_shows_a_line_with_absolute_paths_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke("schedule", "--at", "03:00", "--print", "--json", "--backend", "local", "--steps", "1")
    assert code == 0, err
    s = json.loads(out)
    assert s["installed"] is False
    words = shlex.split(cron_command(line_of(s)))
    script = resources.files("skillsleep.cron") / "run_sleep_cron.sh"
    assert words[:2] == ["cd", str(tmp_path)] and words[2] == "&&"
    assert {
        "HOME=" + str(tmp_path / "home"),
        f"SKILLSLEEP_HOME={tmp_path / 'data'}",
        f"SKILLSLEEP_LOG_DIR={tmp_path / 'data' / 'logs'}",
        f"SKILLSLEEP_ENV_FILE={tmp_path / 'data' / 'night.env'}",
        "PATH=/usr/local/bin:/usr/bin:/bin",
    } <= set(words)
    assert words[-7:] == ["/bin/sh", str(script), str(SKILLSLEEP), "--backend", "local", "--steps", "1"]
    assert not (tmp_path / "data").exists()


def test_settings_of_this_shell_that_cron_will_not_see_are_named_and_no_key_is_ever_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("SKILLSLEEP_STEPS", "1")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-never-copied-0123456789")
    code, out, err = invoke("schedule", "--at", "03:00", "--print", "--backend", "deepseek")
    assert code == 0, err
    env_file = tmp_path / "data" / "night.env"
    assert "SKILLSLEEP_STEPS is set in this shell" in out and "--steps" in out
    assert (
        f"DEEPSEEK_API_KEY is set in this shell, but cron will not see it: add DEEPSEEK_API_KEY=… to {env_file}" in out
    )
    code, js, _ = invoke("schedule", "--at", "03:00", "--print", "--json", "--backend", "deepseek")
    assert "sk-never-copied" not in out + js
    (tmp_path / "data").mkdir()
    env_file.write_text("export DEEPSEEK_API_KEY=sk-never-copied-0123456789\n")
    env_file.chmod(0o600)
    code, out, _ = invoke("schedule", "--at", "03:00", "--print", "--backend", "deepseek")
    assert code == 0 and "DEEPSEEK_API_KEY is set" not in out
    env_file.chmod(0o666)
    code, _, err = invoke("schedule", "--at", "03:00", "--print", "--backend", "deepseek")
    assert code == 2 and f"{env_file} can be written by other users" in err and "chmod 600" in err


def test_schedule_without_crontab_installed_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no crontab on it
    for verb in (["schedule", "--at", "03:00"], ["unschedule"]):
        code, _, err = invoke(*verb)
        assert code == 2
        assert "crontab is not installed here" in err and "apt-get install cron" in err and "--systemd" in err


def test_at_and_cron_are_exclusive_and_one_is_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    code, _, err = invoke("schedule", "--print")
    assert code == 2 and "give --at HH:MM (every day at that time) or --cron" in err
    code, _, err = invoke("schedule", "--print", "--at", "03:00", "--cron", "0 3 * * 1")
    assert code == 2 and "--at or --cron, not both" in err
    code, out, err = invoke("schedule", "--print", "--json", "--cron", "30 2 * * 1-5")
    assert code == 0, err
    assert line_of(json.loads(out)).startswith("30 2 * * 1-5 cd ")


@pytest.mark.slow
def test_a_cli_harness_puts_its_agent_and_node_on_the_lines_path(
    agent_tools: AgentTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", agent_tools.path_env())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    code, out, err = invoke(
        "schedule", "--at", "03:00", "--print", "--json", "--harness", "codex", "--backend", "local"
    )
    assert code == 0, err
    words = shlex.split(cron_command(line_of(json.loads(out))))
    path = next(w for w in words if w.startswith("PATH=")).removeprefix("PATH=")
    assert {str(agent_tools.bin), str(agent_tools.node24)} <= set(path.split(":"))
    done = subprocess.run(
        ["env", "-i", f"PATH={path}", "/bin/sh", "-c", "codex --version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr  # cron's shell finds the agent and the node it runs on


def test_a_cli_harness_that_is_not_usable_here_fails_at_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no codex on it
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    code, _, err = invoke("schedule", "--at", "03:00", "--print", "--harness", "codex", "--backend", "local")
    assert code == 2 and "the codex harness is not usable here" in err


# --- status: what is scheduled and when it last ran ----------------------------------------------


@pytest.fixture
def no_crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder, and no crontab on PATH (status must not read this machine's own crontab)."""
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    (tmp_path / "data" / "logs").mkdir(parents=True)
    return tmp_path / "data"


def test_status_says_nothing_is_scheduled_and_how_to_schedule(no_crontab: Path) -> None:
    code, out, err = invoke("status")
    assert code == 0, err
    assert "scheduled: nothing (`skillsleep schedule --at 03:00` runs the night every day by itself)" in out
    s = json.loads(invoke("status", "--json")[1])
    assert s["schedule"] == {"scheduled": [], "last_run": None}


@pytest.mark.parametrize(
    ("log", "outcome", "shown"),
    [
        (
            "skillsleep-cron: skipped 2026-12-01T03:00:01Z: the previous night is still running\n",
            "skipped",
            "last ran 2026-12-01 03:00 UTC (skipped: the previous night is still running)",
        ),
        (
            "skillsleep-cron: start 2026-12-01T03:00:00Z: /x/skillsleep run\nError: bad\n"
            "skillsleep-cron: end 2026-12-01T03:00:02Z: exit 2: failed: invalid configuration, steps below 1\n",
            "failed",
            "last ran 2026-12-01 03:00 UTC (failed: invalid configuration, steps below 1; exit 2)",
        ),
        (
            "skillsleep-cron: start 2026-12-01T03:00:00Z: /x/skillsleep run\n"
            "skillsleep-cron: end 2026-12-01T03:09:00Z: exit 1: stopped early: token budget reached\n",
            "stopped-early",
            "last ran 2026-12-01 03:00 UTC (stopped early: token budget reached; exit 1)",
        ),
        (
            "skillsleep-cron: start 2026-12-01T03:00:00Z: /x/skillsleep run\n· harvesting new sessions\n",
            "unfinished",
            "last ran 2026-12-01 03:00 UTC (no end line yet: still running, or it was killed)",
        ),
        (
            "skillsleep-cron: start 2026-12-01T03:00:00Z: /x/skillsleep run\n"
            "skillsleep-cron: end 2026-12-01T03:04:00Z: exit 0\n",
            "finished",
            "last ran 2026-12-01 03:00 UTC (finished)",
        ),
    ],
)
def test_status_reads_the_last_run_from_the_newest_cron_log(
    no_crontab: Path, log: str, outcome: str, shown: str
) -> None:
    (no_crontab / "logs" / "cron-20261130T030000Z-1.log").write_text(
        "skillsleep-cron: start 2026-11-30T03:00:00Z: x\nskillsleep-cron: end 2026-11-30T03:01:00Z: exit 0\n"
    )
    (no_crontab / "logs" / "cron-20261201T030000Z-2.log").write_text(log)
    s = json.loads(invoke("status", "--json")[1])["schedule"]["last_run"]
    assert s["outcome"] == outcome and s["log"] == str(no_crontab / "logs" / "cron-20261201T030000Z-2.log")
    code, out, _ = invoke("status")
    assert code == 0 and f"scheduled: nothing — {shown}" in out


def test_status_takes_a_finished_nights_outcome_from_its_record(no_crontab: Path) -> None:
    (no_crontab / "logs" / "cron-20261201T030000Z-2.log").write_text(
        "skillsleep-cron: start 2026-12-01T03:00:00Z: x\nskillsleep-cron: end 2026-12-01T03:05:00Z: exit 0\n"
    )
    before = datetime(2026, 11, 30, 3, 0, 5, tzinfo=UTC)
    tonight = datetime(2026, 12, 1, 3, 0, 0, 412000, tzinfo=UTC)
    for n, started, outcome in ((1, before, "accepted"), (2, tonight, "no-candidate")):
        Nights(no_crontab).save(
            NightRecord(
                night=n,
                started=started,
                status="finished",
                harness="chat",
                skill_path="/x/SKILL.md",
                end=NightEnd(finished=started, outcome=outcome),
            )
        )
    last = json.loads(invoke("status", "--json")[1])["schedule"]["last_run"]
    assert (last["outcome"], last["night"], last["exit"]) == ("no-candidate", 2, 0)
    assert "— last ran 2026-12-01 03:00 UTC (no-candidate)" in invoke("status")[1]


@pytest.mark.parametrize("flag", [["--detach"], ["--format", "md"]])
def test_run_flags_that_make_no_sense_unattended_are_refused(
    flag: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path))
    out = CliRunner().invoke(main, ["schedule", "--at", "03:00", "--print", *flag])
    assert out.exit_code == 2, out.output
    assert f"{flag[0]} has no place in a scheduled night" in out.stderr
