"""`skillsleep watch` names what its harvests keep leaving out (a file it cannot read, an entry that
is no transcript) once, not in every harvest, and again once it changes."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_harvest import SID, assistant, user
from unprivileged import NOBODY, SKILLSLEEP, nobody_skip_reason, shared_tmp

from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.watcher import Told, WatchHarvest


def agent_homes(root: Path) -> dict[str, str]:
    env = {}
    for var, name in (
        ("HOME", "home"),
        ("SKILLSLEEP_HOME", "data"),
        ("CLAUDE_CONFIG_DIR", "claude"),
        ("CODEX_HOME", "codex"),
        ("OPENCLAW_STATE_DIR", "openclaw"),
    ):
        (root / name).mkdir(parents=True, exist_ok=True)
        env[var] = str(root / name)
    (root / "claude" / "projects" / "p").mkdir(parents=True)
    return env


def write_later(path: Path, delays: list[float]) -> threading.Thread:
    """Appends one exchange to `path` after each delay (seconds, one after the other)."""

    def run() -> None:
        for n, delay in enumerate(delays, 1):
            time.sleep(delay)
            with path.open("ab") as fh:
                fh.write(user(f"question {n}", n) + assistant(f"answer {n}", n))

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_an_entry_every_harvest_skips_is_named_once_not_in_every_harvest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var, value in agent_homes(tmp_path).items():
        monkeypatch.setenv(var, value)
    for var in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(var, raising=False)
    folder = tmp_path / "claude" / "projects" / "p"
    (folder / "gone.jsonl").symlink_to(tmp_path / "nowhere")  # found again by every harvest
    (folder / "old.jsonl").mkdir()
    writer = write_later(folder / f"{SID}.jsonl", [0.4, 0.5])
    result = CliRunner().invoke(main, ["watch", "--duration", "1.6", "--debounce", "0.1"])
    writer.join()
    assert result.exit_code == 0, result.output
    harvests = [line for line in result.stdout.splitlines() if " claude-code: sessions " in line]
    assert len(harvests) == 3, result.stdout  # the catch-up, then one harvest per write
    assert result.stdout.count("dangling_symlink 1, folder_named_like_a_transcript 1") == 1, result.stdout
    assert "skipped 2" in harvests[0] and "skipped 0" in harvests[2]


def test_what_is_left_out_is_said_again_when_it_changes_or_comes_back() -> None:
    told = Told()

    def report(unreadable: list[str], waiting: int = 0) -> WatchHarvest:
        skipped = {"unreadable_file:PermissionError": len(unreadable)} if unreadable else {}
        return WatchHarvest(
            harness="codex",
            at="2026-12-01T03:00:00+00:00",
            unreadable=unreadable,
            skipped=Counter({**skipped, "bad_line": 1}),
            waiting_files=1 if waiting else 0,
            waiting_bytes=waiting,
        )

    def news(r: WatchHarvest) -> WatchHarvest:
        out = told.news(r)
        assert isinstance(out, WatchHarvest)
        return out

    first = news(report(["/t/a.jsonl: Permission denied"], waiting=10))
    assert first.unreadable == ["/t/a.jsonl: Permission denied"] and first.waiting_bytes == 10
    again = news(report(["/t/a.jsonl: Permission denied"], waiting=10))
    assert again.unreadable == [] and again.waiting_files == 0
    assert again.skipped == {"bad_line": 1}  # what the new bytes held is new each time
    more = news(report(["/t/a.jsonl: Permission denied", "/t/b.jsonl: Permission denied"], waiting=25))
    assert more.unreadable == ["/t/b.jsonl: Permission denied"] and more.waiting_bytes == 25
    news(report([]))  # fixed …
    back = news(report(["/t/a.jsonl: Permission denied"]))  # … and broken again
    assert back.unreadable == ["/t/a.jsonl: Permission denied"]


@pytest.mark.slow
def test_a_transcript_this_user_cannot_read_is_named_once_while_watch_harvests_on() -> None:
    if reason := nobody_skip_reason():
        pytest.skip(reason)
    with shared_tmp() as root:
        env = agent_homes(root)
        os.chown(env["SKILLSLEEP_HOME"], NOBODY, NOBODY)
        folder = root / "claude" / "projects" / "p"
        for p in (root / "claude", root / "claude" / "projects", folder):
            p.chmod(0o755)
        secret = folder / "theirs.jsonl"
        secret.write_bytes(user("not yours", 1))
        secret.chmod(0o600)  # root's: nobody cannot read it
        mine = folder / f"{SID}.jsonl"
        mine.write_bytes(b"")
        mine.chmod(0o666)
        command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", str(SKILLSLEEP)]
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        with subprocess.Popen(
            [*command, "watch", "--duration", "4", "--debounce", "0.1"],
            env={**base, **env},
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as watch:
            assert watch.stderr is not None
            started = watch.stderr.readline()  # "watching …": the catch-up is done
            assert "watching" in started, started
            write_later(mine, [0.3, 0.5]).join()
            out, err = watch.communicate(timeout=60)
        assert watch.returncode == 0, err
        assert out.count(f"could not read {secret}: Permission denied") == 1, out
        assert len([line for line in out.splitlines() if " claude-code: sessions " in line]) == 3, out
