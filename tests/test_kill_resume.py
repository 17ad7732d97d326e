"""A training process killed with SIGKILL mid-run resumes where it stopped and pays no finished call twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from servers import Action
from skillsleep.slash_commands.cli import main
from test_cli import OPTIMIZER, RULE, SEED


def _project(tmp_path: Path, url: str) -> Path:
    (tmp_path / "opt.json").write_text(json.dumps(OPTIMIZER))
    (tmp_path / "SKILL.md").write_text(SEED)
    lines = [json.dumps({"id": f"q{i}", "prompt": f"Question {i}: What is 2+2?", "answer": "4",
                         "split": "train" if i < 6 else "val"}) for i in range(10)]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "run.toml").write_text(
        '[run]\nname = "kill"\n[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'
        f'[target]\nbackend = "openai:m"\nbase_url = "{url}/v1"\nconcurrency = 1\n'
        f'[optimizer]\nbackend = "scripted:{tmp_path / "opt.json"}"\n'
        "[train]\nepochs = 2\nbatch_size = 2\n[slow_update]\nenabled = false\n"
    )
    return tmp_path / "run.toml"


@pytest.mark.slow
def test_sigkill_mid_run_then_resume(tmp_path: Path, fault_server, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    fault_server.default = Action(kind="ok", text="It is 4.", delay_s=0.15)
    config = _project(tmp_path, fault_server.url)
    env = {**os.environ, "SKILLSLEEP_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillsleep.slash_commands.cli", "train", "--config", str(config)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    state = tmp_path / "runs" / "kill" / "state.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if state.exists() and json.loads(state.read_text()).get("step", 0) >= 1:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = json.loads(state.read_text())  # never torn: written atomically
    assert not saved["done"] and saved["step"] >= 1
    before = [json.dumps(p.body, sort_keys=True) for p in fault_server.posts()]

    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(main, ["train", "--config", str(config), "--json"])
    assert result.exit_code == 0, result.stderr
    assert "resuming" in result.stderr
    summary = json.loads(result.stdout)
    assert summary["done"] and summary["steps"] == 6
    after = [json.dumps(p.body, sort_keys=True) for p in fault_server.posts()][len(before):]
    repeated = set(before) & set(after)
    assert len(repeated) <= 1, "finished calls were paid for again"  # at most the one in flight at the kill
    best = (tmp_path / "runs" / "kill" / "best_skill.md").read_text()
    assert best == SEED or RULE in best
