"""One tiny training run of the quality benchmark's answer-format family, the embedded
Qwen2.5-Coder-0.5B as target and as its own optimizer: what must hold whatever the model says."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from bench_script import load_bench
from click.testing import CliRunner

from skillsleep.core.document.skill import Skill
from skillsleep.core.train.step_record import StepRecord
from skillsleep.slash_commands.cli import main

pytestmark = pytest.mark.slow


def _bench() -> ModuleType:
    """bench/quality.py, which builds the family's tasks from ../shared/data/tasks."""
    module = load_bench("quality")
    if not module.DATA.is_dir():
        pytest.skip("../shared/data/tasks is absent (CI provides it)")
    return module


def _tiny_run(tmp_path: Path, model: Path) -> Path:
    """3 train and 2 selection tasks of the answer-format family, one step, the 0.5B everywhere."""
    bench = _bench()
    family = bench.load_family("answer-format")
    keep = {"train": 3, "val": 2}
    tasks = []
    for task in bench.build_tasks(family):
        if keep.get(task.split or "", 0) > 0:
            keep[task.split or ""] -= 1
            tasks.append(task)
    (tmp_path / "tasks.jsonl").write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in tasks))
    (tmp_path / "SKILL.md").write_bytes(family.seed_skill.read_bytes())
    (tmp_path / "run.toml").write_text(
        f'[run]\nname = "tiny"\nout_dir = "{tmp_path / "runs"}"\n'
        f'[data]\ntasks = "{tmp_path / "tasks.jsonl"}"\nskill = "{tmp_path / "SKILL.md"}"\n'
        f'[target]\nbackend = "local:{model}"\nmax_tokens = 96\n'
        f'[optimizer]\nbackend = "local:{model}"\nmax_tokens = 384\n'
        "[train]\nepochs = 1\nsteps_per_epoch = 1\nbatch_size = 3\nminibatch_size = 3\n"
        "[slow_update]\nsample_size = 2\n[cache]\nenabled = false\n"
    )
    config = tmp_path / "run.toml"
    return config


def test_a_tiny_run_on_the_embedded_model_changes_the_skill_only_through_the_gate(
    tmp_path: Path, local_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    config = _tiny_run(tmp_path, local_model_path)
    seed = (tmp_path / "SKILL.md").read_bytes()
    result = CliRunner().invoke(main, ["train", "--config", str(config), "--json"])

    # the run ends cleanly
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["done"] and summary["stopped"] is None and summary["failed"] is None
    assert summary["steps"] == 1
    # the ledger has the target's rollouts and the optimizer's reflection, made, not cached
    roles = summary["calls_by_role"]
    assert roles["target"]["calls"] >= 5 and roles["reflect"]["calls"] >= 1
    assert summary["tokens"] > 0 and summary["cost_usd"] == 0
    # the trained file itself is never written
    assert (tmp_path / "SKILL.md").read_bytes() == seed

    run = Path(summary["run_dir"])
    accepted = {Skill(seed.decode()).hash}
    for path in sorted(run.glob("steps/*/step.json")):
        step = StepRecord.model_validate_json(path.read_text())
        # a step says whether an edit applied: gated exactly when one did, with its candidate on disk
        assert (step.gate is not None) == bool(step.applied), step.model_dump_json()
        if step.gate is not None:
            candidate = Skill((run / "candidates" / f"e{step.epoch}s{step.step}.md").read_text())
            assert candidate.hash == step.gate.candidate_hash
            assert step.gate.accepted == (step.gate.candidate > step.gate.baseline)
            if step.gate.accepted:
                accepted.add(step.gate.candidate_hash)
    for path in run.glob("epochs/*.json"):
        gate = json.loads(path.read_text()).get("slow_update_gate")
        if gate and gate["accepted"]:
            accepted.add(gate["candidate_hash"])
    # the best and the final skill are the seed or a candidate some gate accepted
    state = json.loads((run / "state.json").read_text())
    assert Skill((run / "best_skill.md").read_text()).hash in accepted
    assert Skill(state["current"]).hash in accepted
    if len(accepted) == 1:
        assert (run / "best_skill.md").read_bytes() == seed
