"""The verbs that read or run something — harvest, watch, eval, train, demo, run --detach — in each of their
formats, byte for byte against tests/fixtures/verbs/ (tests/golden.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from golden import check
from sleep_kit import invoke, night_env, run_args, write_chat_logs, write_scripts
from test_cli import project  # noqa: F401  (the fixture: a task file, a skill and scripts for eval)
from test_demo import demo_script

KEY = "sk-ant-api03-" + "Q7xL2pZ9" * 6


def _chats(folder: Path) -> None:
    """Chat logs with a secret, a line not finished yet, and two entries that are no log."""
    write_chat_logs(folder)
    secret = {"id": "k1", "created": "2026-11-28T10:00:00Z", "messages": [{"role": "user", "content": f"use {KEY}"}]}
    (folder / "key.jsonl").write_text(json.dumps(secret) + "\n")
    (folder / "partial.jsonl").write_text('{"id": "p1", "created": "2026-11-28T11:00:00Z"')
    (folder / "folder.jsonl").mkdir()
    (folder / "gone.jsonl").symlink_to(folder / "nowhere.jsonl")


def _fresh_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / name))


def test_harvest_and_watch_print_their_golden_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each format on a data folder of its own, so each reads the same logs as new."""
    night_env(monkeypatch, tmp_path)
    _chats(tmp_path / "chats")
    names = {str(tmp_path): "<ROOT>"}
    claude_skills = Path(__file__).parent / "fixtures" / "claude" / "skills" / "projects"
    shutil.copytree(claude_skills, tmp_path / "home" / ".claude" / "projects")  # a user skill, invoked twice
    for fmt, flags in (("json", ("--json",)), ("text", ())):
        _fresh_data(tmp_path, monkeypatch, f"harvest-{fmt}")
        code, out, err = invoke("harvest", "--since", "2026-11-22", *flags)
        assert code == 0, err
        check(f"harvest.{fmt}", out, names)
    for fmt, flags in (("json", ("--json",)), ("text", ())):
        _fresh_data(tmp_path, monkeypatch, f"watch-{fmt}")
        code, out, err = invoke("watch", "--duration", "0", *flags)
        assert code == 0, err
        check(f"watch.{fmt}", out, names)


def test_eval_prints_its_golden_outputs(project: Path) -> None:
    """Three tasks answered right, three in the right form but wrong, the rest in neither."""
    rules = [
        {"match": "Question [123]:", "reply": "Two and two.\nANSWER: 4"},
        {"match": "Question [456]:", "reply": "Two and three.\nANSWER: 5"},
        {"match": "What is", "reply": "It is 4."},
    ]
    (project / "target.json").write_text(json.dumps(rules))
    args = ["--skill", str(project / "SKILL.md"), "--tasks", str(project / "tasks.jsonl"), "--metric", "mixed"]
    args += ["--target", f"scripted:{project / 'target.json'}"]
    for fmt, flags in (("json", ("--json",)), ("text", ())):
        code, out, err = invoke("eval", *args, *flags)
        assert code == 0, err
        check(f"eval.{fmt}", out, {str(project): "<ROOT>"})


def test_train_prints_its_golden_outputs(project: Path) -> None:
    """A run, the same run again from scratch as text (its calls answered from the cache now), then
    again: it had finished, so the summary it wrote."""
    names = {str(project): "<ROOT>"}
    runs = (("train.json", ("--json",)), ("train.text", ("--fresh",)), ("train-finished.json", ("--json",)))
    for name, flags in runs:
        code, out, err = invoke("train", "--config", str(project / "run.toml"), *flags)
        assert code == 0, err
        check(name, out, names)


def test_demo_prints_its_golden_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "user"))
    backend = f"scripted:{demo_script(tmp_path / 'script')}"
    for fmt, flags in (("json", ("--json",)), ("text", ())):
        code, out, err = invoke("demo", "--dir", str(tmp_path / fmt), "--backend", backend, *flags)
        assert code == 0, err
        check(f"demo.{fmt}", out, {str(tmp_path / fmt): "<DEMO>", str(tmp_path): "<ROOT>"})


def _wait_gone(pid: int) -> None:
    for _ in range(1200):
        if os.waitpid(pid, os.WNOHANG)[0]:
            return
        time.sleep(0.05)
    raise AssertionError(f"the detached night {pid} is still running")


@pytest.mark.slow
def test_run_detach_prints_its_golden_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")
    for fmt, flags in (("json", ("--json",)), ("md", ("--format", "md")), ("text", ("--format", "text"))):
        code, out, err = invoke(*run_args(tmp_path, "--detach", *flags))
        assert code == 0, err
        found = re.search(r'"pid": (\d+)|pid (\d+)', out)
        assert found, out
        pid = found.group(1) or found.group(2)
        check(f"run-detach.{fmt}", out, {str(tmp_path): "<ROOT>", pid: "<PID>"})
        _wait_gone(int(pid))
