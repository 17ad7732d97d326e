"""A data folder (SKILLSLEEP_HOME, or the platform's) that is a file, cannot be created or is not
writable: every command says so in one clean error (exit 2) before any work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from unprivileged import nobody_skip_reason, run_as_nobody, shared_tmp

from skillsleep.slash_commands.cli import main

SKILL = "---\nname: s\n---\n# S\n- rule\n"


def project(root: Path) -> Path:
    """A skill, a scripted target, a task file and a run config: every command has valid input."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(SKILL)
    (root / "t.json").write_text(json.dumps([{"match": "[\\s\\S]", "reply": "ANSWER: 42"}]))
    (root / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "prompt": f"question {i}", "answer": "42"}) + "\n" for i in range(4))
    )
    (root / "run.toml").write_text(
        f'[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n[target]\nbackend = '
        f'"scripted:{root / "t.json"}"\n[optimizer]\nbackend = "scripted:{root / "t.json"}"\n'
    )
    for p in root.iterdir():
        p.chmod(0o644)
    return root


def commands(root: Path) -> dict[str, list[str]]:
    script = f"scripted:{root / 't.json'}"
    return {
        "harvest": ["harvest"],
        "run": ["run", "--backend", script, "--skill", str(root / "SKILL.md")],
        "train": ["train", "--config", str(root / "run.toml")],
        "eval": ["eval", "--skill", str(root / "SKILL.md"), "--tasks", str(root / "tasks.jsonl"), "--target", script],
        "status": ["status"],
        "adopt": ["adopt"],
        "config": ["config"],
        "watch": ["watch", "--duration", "0", "--chat-dir", str(root)],
        "diff": ["diff"],
        "reject": ["reject"],
        "rollback": ["rollback"],
    }


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return project(tmp_path / "proj")


@pytest.mark.parametrize("verb", list(commands(Path("/x"))))
def test_a_data_folder_that_is_a_file_stops_every_command_before_any_work(
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("mine\n")
    monkeypatch.setenv("SKILLSLEEP_HOME", str(home))
    result = CliRunner().invoke(main, commands(root)[verb])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), (result.output, result.exception)
    assert f"the skillsleep data folder {home} (SKILLSLEEP_HOME) is a file, not a folder" in result.stderr
    assert "point SKILLSLEEP_HOME at a folder" in result.stderr and "Traceback" not in result.output
    assert home.read_text() == "mine\n" and not (root / "runs").exists()  # nothing was done


def test_a_data_folder_that_is_a_pipe_is_named_once_as_not_a_folder(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-is-a-pipe"
    os.mkfifo(home)
    monkeypatch.setenv("SKILLSLEEP_HOME", str(home))
    result = CliRunner().invoke(main, commands(root)["status"])
    assert result.exit_code == 2, result.output
    assert f"{home} (SKILLSLEEP_HOME) is a pipe, socket or device, not a folder; point" in result.stderr
    assert result.stderr.count("not a folder") == 1


def test_a_data_folder_below_a_file_cannot_be_created(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "afile" / "data"))
    for verb in ("harvest", "status"):
        result = CliRunner().invoke(main, commands(root)[verb])
        assert result.exit_code == 2, result.output
        assert (
            f"{tmp_path / 'afile' / 'data'} (SKILLSLEEP_HOME) cannot be created: {tmp_path / 'afile'} is a file"
            in result.stderr
        )


def test_status_on_a_missing_data_folder_still_creates_nothing(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "new" / "data"))
    assert CliRunner().invoke(main, ["status"]).exit_code == 0
    assert not (tmp_path / "new").exists()


# --- not writable: only another user than root can see it ---------------------------------------


def _nobody() -> None:
    reason = nobody_skip_reason()
    if reason:
        pytest.skip(reason)


def _check_as_nobody(verbs: list[str], *, home: Path | None, user_home: Path, root: Path, words: str) -> None:
    env = {"HOME": str(user_home), **({"SKILLSLEEP_HOME": str(home)} if home else {})}
    for verb in verbs:
        done = run_as_nobody(commands(root)[verb], env, cwd=root)
        assert done.returncode == 2, (verb, done.stdout, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr, (verb, done.stderr)


@pytest.mark.parametrize("case", ["not writable", "cannot be created", "platform folder cannot be created"])
def test_an_unusable_data_folder_is_one_clean_error_for_another_user(case: str) -> None:
    _nobody()
    with shared_tmp() as tmp:
        root = project(tmp / "proj")
        locked = tmp / "locked"  # root's folder: nobody may read and enter it, not write in it
        locked.mkdir(mode=0o755)
        if case == "not writable":
            home, words = locked, f"the skillsleep data folder {locked} (SKILLSLEEP_HOME) is not writable by this user"
        elif case == "cannot be created":
            home, words = (
                locked / "data",
                f"{locked / 'data'} (SKILLSLEEP_HOME) cannot be created: {locked} is not writable",
            )
        else:
            home, words = (
                None,
                f"{locked / '.local' / 'share' / 'skillsleep'} (the platform's data folder; set "
                f"SKILLSLEEP_HOME to use another) cannot be created: {locked} is not writable",
            )
        # status and cost only read: a folder they can read will do (tests/test_readonly_data.py)
        _check_as_nobody(["harvest", "adopt"], home=home, user_home=locked, root=root, words=words)


@pytest.mark.slow
def test_a_data_folder_that_is_not_writable_stops_every_command_for_another_user() -> None:
    _nobody()
    with shared_tmp() as tmp:
        root = project(tmp / "proj")
        locked = tmp / "locked"
        locked.mkdir(mode=0o755)
        _check_as_nobody(
            [verb for verb in commands(root) if verb != "status"],  # status only reads
            home=locked,
            user_home=locked,
            root=root,
            words=f"the skillsleep data folder {locked} (SKILLSLEEP_HOME) is not writable by this user",
        )
        assert list(locked.iterdir()) == []
