"""`skillsleep harvest --transcript PATH` and `--hook claude-code` (Claude Code's SessionEnd hook):
exactly one transcript through the normal harvest path (cursors, redaction); the hook is quiet
and always exits 0, and what went wrong is one line in <data>/logs/hooks.log."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from skillsleep.core.models.store import Store
from skillsleep.harnesses.plugin_bundle import bundle_text
from skillsleep.slash_commands import session_hook
from skillsleep.slash_commands.cli import main

ENDED = "aaaaaaaa-0000-4000-8000-000000000001"
OTHER = "bbbbbbbb-0000-4000-8000-000000000002"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def record(kind: str, sid: str, n: int, text: str) -> str:
    message = (
        {"role": kind, "content": text}
        if kind == "user"
        else {"id": f"m{n}", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}]}
    )
    return (
        json.dumps(
            {
                "type": kind,
                "sessionId": sid,
                "uuid": f"{kind}{n}",
                "cwd": "/work/app",
                "timestamp": f"2026-11-30T10:0{n}:00Z",
                "message": message,
            }
        )
        + "\n"
    )


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Claude config dir with two sessions' transcripts; the data dir and HOME are private."""
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    for name in ("CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    project = tmp_path / "claude" / "projects" / "-work-app"
    project.mkdir(parents=True)
    (project / f"{ENDED}.jsonl").write_text(
        record("user", ENDED, 1, f"clone it with {TOKEN} and fix the build") + record("assistant", ENDED, 2, "Fixed.")
    )
    (project / f"{OTHER}.jsonl").write_text(record("user", OTHER, 1, "write the release notes"))
    return tmp_path / "claude"


def transcript(claude: Path, sid: str = ENDED) -> Path:
    return claude / "projects" / "-work-app" / f"{sid}.jsonl"


def hook(payload: object) -> Result:
    """Claude Code running the hook: the event's JSON on stdin."""
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    return CliRunner().invoke(main, ["harvest", "--hook", "claude-code"], input=stdin)


def session_end(path: Path, sid: str = ENDED) -> dict[str, str]:
    return {
        "session_id": sid,
        "transcript_path": str(path),
        "cwd": "/work/app",
        "hook_event_name": "SessionEnd",
        "reason": "other",
    }


def stored(data: Path) -> dict[str, list[str]]:
    store = Store(data / "state.db")
    try:
        return {s.id: s.prompts() for s in store.sessions("claude-code")}
    finally:
        store.close()


def hook_log(data: Path) -> list[str]:
    log = data / "logs" / "hooks.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_the_hook_harvests_only_the_session_it_ends_quietly_redacted_and_incrementally(
    claude: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    result = hook(session_end(transcript(claude)))
    assert result.exit_code == 0 and result.output == "", result.output
    sessions = stored(data)
    assert list(sessions) == [ENDED]  # not the other session in the same folder
    assert TOKEN not in sessions[ENDED][0] and "[REDACTED:" in sessions[ENDED][0]
    with transcript(claude).open("a") as fh:
        fh.write(record("user", ENDED, 3, "now tag the release"))
    assert hook(session_end(transcript(claude))).exit_code == 0
    assert stored(data)[ENDED][1:] == ["now tag the release"]
    assert hook_log(data) == []

    # the full harvest shares its cursors: it reads only the file the hook did not
    full = CliRunner().invoke(main, ["harvest", "--harness", "claude-code", "--json"])
    report = json.loads(full.output)
    assert report["files_read"] == 1 and report["sessions"] == {"claude-code": 1}
    assert set(stored(data)) == {ENDED, OTHER}


def test_harvest_transcript_reads_that_one_file_and_reports_it(claude: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["harvest", "--harness", "claude-code", "--transcript", str(transcript(claude)), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["sessions"] == {"claude-code": 1} and report["files_seen"] == 1 and report["turns"] == 2
    assert list(stored(tmp_path / "data")) == [ENDED]
    status = json.loads(CliRunner().invoke(main, ["status", "--json"]).output)
    assert status["last_harvest"]["sessions"] == {"claude-code": 1}  # the last harvest, as status shows it


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--transcript", "{missing}", "--harness", "claude-code"], "no transcript at {missing}"),
        (["--transcript", "{folder}", "--harness", "claude-code"], "is a folder, not a transcript file"),
        (["--transcript", "{file}"], "--transcript needs --harness claude-code, codex or openclaw"),
        (
            ["--transcript", "{file}", "--harness", "chat"],
            "--transcript needs --harness claude-code, codex or openclaw",
        ),
        (["--hook", "claude-code", "--harness", "codex"], "--hook claude-code reads the transcript Claude Code names"),
    ],
)
def test_harvest_transcript_refuses_what_it_cannot_read_and_stores_nothing(
    claude: Path, tmp_path: Path, args: list[str], words: str
) -> None:
    paths = {"missing": tmp_path / "gone.jsonl", "folder": claude / "projects", "file": transcript(claude)}
    result = CliRunner().invoke(main, ["harvest", *(a.format(**paths) for a in args)])
    assert result.exit_code == 2 and words.format(**paths) in result.stderr, result.output
    assert not (tmp_path / "data" / "state.db").exists()


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        ("not json", "the hook's input is not JSON"),
        (json.dumps({"session_id": ENDED}), "the hook's input names no transcript_path"),
        (json.dumps({"transcript_path": "{gone}"}), "no transcript at {gone}"),
    ],
)
def test_the_hook_never_fails_the_agent_and_logs_one_line(claude: Path, tmp_path: Path, stdin: str, words: str) -> None:
    gone = tmp_path / "gone.jsonl"
    result = hook(stdin.replace("{gone}", str(gone)))
    assert result.exit_code == 0 and result.output == ""
    (line,) = hook_log(tmp_path / "data")
    assert "claude-code SessionEnd hook" in line and words.format(gone=gone) in line


def test_a_damaged_state_database_is_logged_and_left_as_it_was(claude: Path, tmp_path: Path) -> None:
    db = tmp_path / "data" / "state.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    result = hook(session_end(transcript(claude)))
    assert result.exit_code == 0 and result.output == ""
    (line,) = hook_log(tmp_path / "data")
    assert "skillsleep doctor --repair" in line
    assert db.read_bytes() == b"this is not a database" * 100


def test_a_database_another_process_holds_is_logged_and_harvested_next_time(
    claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_hook, "BUSY_WAIT_S", 0.5)  # the hook waits 10 s for the writer to finish
    data = tmp_path / "data"
    Store(data / "state.db").close()
    holder = sqlite3.connect(data / "state.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer in the middle of a long write
    try:
        result = hook(session_end(transcript(claude)))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 0 and result.output == ""
    (line,) = hook_log(data)
    assert "is busy" in line and line.endswith("nothing was harvested")
    assert stored(data) == {}
    assert hook(session_end(transcript(claude))).exit_code == 0
    assert list(stored(data)) == [ENDED]


def test_a_data_folder_that_cannot_be_used_is_one_line_on_stderr_and_exit_0(
    claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "afile" / "data"))
    result = hook(session_end(transcript(claude)))
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "cannot be created" in result.stderr


def test_the_log_is_kept_small(claude: Path, tmp_path: Path) -> None:
    log = tmp_path / "data" / "logs" / "hooks.log"
    log.parent.mkdir(parents=True)
    log.write_text("old line\n" * 40_000)  # 360 kB: over the limit
    hook("not json")
    assert hook_log(tmp_path / "data")[-1].endswith("the hook's input is not JSON; nothing was harvested")
    assert log.stat().st_size < 1000 and (log.parent / "hooks.log.1").stat().st_size == 360_000


def test_the_installed_hook_returns_at_once_and_its_harvest_outlives_a_hangup(claude: Path, tmp_path: Path) -> None:
    """The hook command as `skillsleep install claude-code` writes it, run by a shell as Claude Code
    runs it: it exits before a `skillsleep` that takes 2 s to start has read anything, and the hangup
    that ends the session's process group (a closed terminal) does not stop the harvest."""
    wrapper = tmp_path / "bin" / "skillsleep"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nsleep 2\nexec {Path(sys.executable).parent / "skillsleep"} "$@"\n')
    wrapper.chmod(0o755)
    hooks = json.loads(bundle_text("claude-code/hooks/hooks.json", wrapper))["hooks"]["SessionEnd"]
    (command,) = [h["command"] for entry in hooks for h in entry["hooks"]]
    shell = subprocess.run(
        ["sh", "-c", f"echo $$ > {tmp_path / 'group'}; {command}"],
        input=json.dumps(session_end(transcript(claude))),
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,  # its own process group, as the session's
        env={k: os.environ[k] for k in ("PATH", "HOME", "SKILLSLEEP_HOME", "CLAUDE_CONFIG_DIR")},  # the fixture's
    )
    assert shell.returncode == 0 and shell.stdout == shell.stderr == ""
    assert not (tmp_path / "data" / "state.db").exists()  # the shell was done before the harvest began
    os.killpg(int((tmp_path / "group").read_text()), signal.SIGHUP)
    deadline = time.monotonic() + 60
    while not ((tmp_path / "data" / "state.db").exists() and stored(tmp_path / "data")) and time.monotonic() < deadline:
        time.sleep(0.1)
    made = (tmp_path / "data" / "state.db").exists()
    assert made and list(stored(tmp_path / "data")) == [ENDED], (made, hook_log(tmp_path / "data"))
    assert hook_log(tmp_path / "data") == []
