"""Finding transcript files: nothing under a transcript folder is left out without being reported.

Folders named like transcripts, dangling symlinks and symlink loops need no privileges. Folders
that cannot be read need a user that `chmod 000` binds: tests run as root here and in CI, so
`skillsleep` runs as a subprocess as nobody (tests/unprivileged.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_harvest import SID, assistant, user
from unprivileged import nobody_skip_reason, run_as_nobody, shared_tmp

from skillsleep.slash_commands.cli import main

CHAT = b'{"id": "c1", "messages": [{"role": "user", "content": "summarise the meeting"}]}\n'


def agent_homes(root: Path) -> dict[str, Path]:
    """A transcript of each agent and a chat log, each beside a folder named like a transcript, a
    dangling symlink and a symlink to itself; the recursive layouts also hold a folder link back up."""
    claude = root / "claude" / "projects" / "-home-me-proj"
    codex = root / "codex" / "sessions" / "2026" / "11"
    openclaw = root / "openclaw" / "agents" / "main" / "sessions"
    chats = root / "chats" / "2026"
    for folder, name, data in (
        (claude, f"{SID}.jsonl", user("fix the test", 1) + assistant("done", 1)),
        (codex, f"rollout-2026-11-29T10-00-00-{SID}.jsonl", _codex_sample()),
        (openclaw, "s1.jsonl", _openclaw_sample()),
        (chats, "day.jsonl", CHAT),
    ):
        prefix = "rollout-" if folder == codex else ""
        folder.mkdir(parents=True)
        (folder / name).write_bytes(data)
        (folder / f"{prefix}unzipped.jsonl").mkdir()
        (folder / f"{prefix}gone.jsonl").symlink_to(folder / "deleted.jsonl")
        (folder / f"{prefix}loop.jsonl").symlink_to(folder / f"{prefix}loop.jsonl")
    (claude / SID / "subagents").parent.mkdir()
    (claude / SID / "subagents").symlink_to(claude)  # a session folder linked back to its project
    (codex / "back").symlink_to(codex.parent)
    (chats / "back").symlink_to(chats.parent)
    return {
        "CLAUDE_CONFIG_DIR": root / "claude",
        "CODEX_HOME": root / "codex",
        "OPENCLAW_STATE_DIR": root / "openclaw",
        "chats": root / "chats",
    }


def _codex_sample() -> bytes:
    return sorted((Path(__file__).parent / "fixtures" / "codex").glob("*.jsonl"))[0].read_bytes()


def _openclaw_sample() -> bytes:
    rows = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-29T10:00:00Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "m1",
            "timestamp": "2026-11-29T10:00:01Z",
            "message": {"role": "user", "content": "summarise the logs"},
        },
    ]
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def test_entries_that_are_no_transcript_file_are_counted_for_every_harness(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    homes = agent_homes(tmp_path)
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.setenv(var, str(homes[var]))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    result = CliRunner().invoke(main, ["harvest", "--chat-dir", str(homes["chats"]), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["sessions"] == {"claude-code": 1, "codex": 1, "openclaw": 1, "chat": 1}
    assert report["files_seen"] == 4 and report["unreadable"] == []
    walk_reasons = ("folder_named_like_a_transcript", "dangling_symlink", "symlink_loop", "not_a_regular_file")
    assert {k: v for k, v in report["skipped"].items() if k in walk_reasons} == {
        "folder_named_like_a_transcript": 4,
        "dangling_symlink": 4,
        "symlink_loop": 4 + 3,
    }
    text = CliRunner().invoke(main, ["harvest", "--chat-dir", str(homes["chats"])]).stdout
    assert "dangling_symlink 4, folder_named_like_a_transcript 4" in text and "symlink_loop 7" in text


def test_a_linked_folder_is_followed_and_a_file_reached_twice_is_listed_once(tmp_path: Path) -> None:
    from skillsleep.core.harvest.discovery import walk

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.jsonl").write_bytes(CHAT)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "logs" / "again").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "logs" / "own").mkdir()
    (tmp_path / "logs" / "own" / "mine.jsonl").write_bytes(CHAT)
    found = walk(
        tmp_path / "logs", wanted=lambda parts: parts[-1].endswith(".jsonl"), exclude=[tmp_path / "logs" / "own"]
    )
    assert found.files == [tmp_path / "logs" / "again" / "a.jsonl"] and not found.skipped and not found.unreadable
    assert walk(tmp_path / "missing", wanted=lambda parts: True).model_dump() == {
        "files": [],
        "unreadable": [],
        "skipped": {},
    }


# --- folders that cannot be read (as a user that chmod binds) --------------------------------------


@dataclass
class Unprivileged:
    """Runs `skillsleep` as nobody, whom `chmod 000` keeps out; `root` is a folder it may read."""

    root: Path

    def skillsleep(self, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        home = self.root / "home"
        home.mkdir(exist_ok=True)
        home.chmod(0o777)
        return run_as_nobody(list(args), {"HOME": str(home), "SKILLSLEEP_HOME": str(home / "skillsleep"), **env})


@pytest.fixture
def unprivileged() -> Iterator[Unprivileged]:
    if reason := nobody_skip_reason():
        pytest.skip(reason)
    with shared_tmp() as root:
        try:
            yield Unprivileged(root)
        finally:
            for folder, folders, _ in os.walk(root):
                for name in folders:
                    os.chmod(os.path.join(folder, name), 0o755)  # so that the folder can be removed


def locked(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o000)
    return folder


def test_unreadable_folders_are_reported_with_what_to_do(unprivileged: Unprivileged) -> None:
    homes = agent_homes(unprivileged.root)
    env = {var: str(homes[var]) for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR")}
    shut = [
        locked(homes["CLAUDE_CONFIG_DIR"] / "projects" / "-home-me-secret"),
        locked(homes["CODEX_HOME"] / "sessions" / "2026" / "12"),
        locked(homes["OPENCLAW_STATE_DIR"] / "agents" / "work" / "sessions"),
        locked(homes["chats"] / "private"),
    ]
    out = unprivileged.skillsleep("harvest", "--chat-dir", str(homes["chats"]), "--json", env=env)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["sessions"] == {"claude-code": 1, "codex": 1, "openclaw": 1, "chat": 1}
    assert sorted(report["unreadable"]) == sorted(f"{folder}: Permission denied" for folder in shut)
    assert report["skipped"]["unreadable_folder:PermissionError"] == 4

    text = unprivileged.skillsleep("harvest", "--chat-dir", str(homes["chats"]), env=env)
    assert f"could not read {shut[0]}: Permission denied (give your user read access" in text.stdout

    watched = unprivileged.skillsleep("watch", "--chat-dir", str(homes["chats"]), "--duration", "0", "--json", env=env)
    assert watched.returncode == 0, watched.stderr
    reports = [json.loads(line) for line in watched.stdout.splitlines()]
    assert sorted(u for r in reports for u in r["unreadable"]) == sorted(
        f"{folder}: Permission denied" for folder in shut
    )

    locked(homes["chats"])
    for verb in (["harvest"], ["watch", "--duration", "0"]):
        refused = unprivileged.skillsleep(*verb, "--chat-dir", str(homes["chats"]), env=env)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert (
            f"chat-log folder {homes['chats']} cannot be read (Permission denied) (set by --chat-dir)" in refused.stderr
        )
