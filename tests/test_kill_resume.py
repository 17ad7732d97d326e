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
from test_cli import RULE, SEED, project  # noqa: F401  (the project fixture)

from skillsleep.slash_commands.cli import main


@pytest.mark.slow
def test_sigkill_mid_run_then_resume(project: Path, fault_server) -> None:  # type: ignore[no-untyped-def]
    fault_server.default = Action(kind="ok", text="It is 4.", delay_s=0.15)
    args = [
        "train",
        "--config",
        str(project / "run.toml"),
        "target.backend=openai:m",
        f"target.base_url={fault_server.url}/v1",
        "target.concurrency=1",
        "train.batch_size=2",
        "slow_update.enabled=false",
    ]
    proc = subprocess.Popen(  # the project fixture has set SKILLSLEEP_HOME in os.environ
        [sys.executable, "-m", "skillsleep.slash_commands.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state = project / "runs" / "cli" / "state.json"
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

    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.stderr
    assert "resuming" in result.stderr
    summary = json.loads(result.stdout)
    assert summary["done"] and summary["steps"] == 4  # 2 epochs × 4 train tasks / batch 2
    after = [json.dumps(p.body, sort_keys=True) for p in fault_server.posts()][len(before) :]
    repeated = set(before) & set(after)
    assert len(repeated) <= 1, "finished calls were paid for again"  # at most the one in flight at the kill
    best = (project / "runs" / "cli" / "best_skill.md").read_text()
    assert best == SEED or RULE in best
