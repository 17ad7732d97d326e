"""bench/quality.py on scripted backends (a target that follows only the quoted-literal instruction):
--versus (1 against 2 candidates at an equal token budget, compared per test task) and --resume
(of the quality runs and of --versus)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bench_script import load_bench

from skillsleep.core.shared.records import Check, Judge, Task

RULE = "End every reply with the line `ANSWER: <answer>`."
RULES = [
    {"match": r'"required": \["findings"\]', "reply": json.dumps({"findings": [
        {"kind": "skill_defect", "diagnosis": "d", "op": "add", "target": "", "content": RULE}]})},
    {"match": r'"required": \["groups"\]', "reply": '{"groups": []}'},
    {"match": r'"required": \["order"', "reply": '{"order": [1]}'},
    {"match": r'"required": \["reply"\]', "reply": '{"reply": "ANSWER: <answer>"}'},
    {"match": r'"required": \["guidance"\]', "reply": '{"guidance": []}'},
    {"match": r'"required": \["notes"\]', "reply": '{"notes": []}'},
    {"match": "a line starting with `ANSWER:`", "reply": "Done.\nANSWER: 7"},  # the quoted literal, followed
    {"match": ".", "reply": "Done."},
]  # fmt: skip


def _tasks() -> list[Task]:
    judge = Judge(checks=[Check(type="last_line_regex", value="ANSWER: .+")])
    sizes = {"train": 4, "val": 2, "test": 3}
    return [
        Task(id=f"v-{split}{i}", prompt=f"Question {split} {i}?", judge=judge, split=split)  # type: ignore[arg-type]
        for split, n in sizes.items()
        for i in range(n)
    ]


@pytest.fixture()
def bench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModuleType:
    module = load_bench("quality")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(RULES))
    monkeypatch.setattr(module, "TARGET", f"scripted:{script}")
    monkeypatch.setattr(module, "OPTIMIZERS", (f"scripted:{script}",))
    for where in (module, sys.modules["quality_families"]):
        monkeypatch.setattr(where, "build_tasks", lambda family: _tasks())
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    return module


def _args(bench: ModuleType, **over: Any) -> argparse.Namespace:
    values = {"families": ["answer-format"], "optimizers": list(bench.OPTIMIZERS), "seeds": [0], "steps": 1}
    return argparse.Namespace(
        **{**values, "verbose": False, "candidates": 1, "budget_tokens": 50_000, "resume": False, **over}
    )


def test_versus_runs_both_arms_at_one_budget_and_compares_them_per_test_task(bench: ModuleType, tmp_path: Path) -> None:
    result = asyncio.run(bench.versus(_args(bench), tmp_path / "work", bench.one_run, bench.TestScores))
    runs = result["runs"]
    assert [r["candidates"] for r in runs] == [1, 2]
    for r in runs:
        assert "[budget]\ntokens = 50000\n" in (Path(r["run_dir"]).parent / "run.toml").read_text()
        assert set(r["test_tasks"]) == {"v-test0", "v-test1", "v-test2"}
    assert runs[0]["test_tasks"] == dict.fromkeys(runs[0]["test_tasks"], 0.0)  # RULE is not followed
    assert runs[1]["test_tasks"] == dict.fromkeys(runs[1]["test_tasks"], 1.0)  # the quoted literal is
    assert runs[1]["strategies_kept"] == ["quoted literals"] and runs[0]["strategies_kept"] == []
    [c] = result["comparisons"]
    assert c["candidates"] == [1, 2] and c["gain"] == [0.0, 1.0] and c["mean_diff"] == 1.0
    assert c["strategies_kept"] == {"quoted literals": 1} and c["budget_tokens"] == 50_000
    assert c["verdict"].startswith("no detectable difference")  # 3 tasks: too few for McNemar


def test_compare_arms_pairs_the_tasks_of_every_seed(bench: ModuleType) -> None:
    import quality_versus

    def row(n: int, seed: int, scores: list[float]) -> dict[str, Any]:
        tasks = {f"t{i}": s for i, s in enumerate(scores)}
        return {"family": "f", "optimizer": "o", "candidates": n, "seed": seed, "tokens": 100 * n, "steps": 2,
                "test": {"seed": 0.0, "best": sum(scores) / len(scores)}, "test_tasks": tasks,
                "strategies_kept": ["worked example"] if n > 1 else []}  # fmt: skip

    rows = [row(1, s, [0.0] * 5) for s in (0, 1)] + [row(2, s, [1.0] * 5) for s in (0, 1)]
    [c] = quality_versus.compare_arms(rows, 15_000)
    assert c["seeds"] == 2 and c["tokens"] == [100, 200] and c["strategies_kept"] == {"worked example": 2}
    assert c["better"] == "2 candidates" and c["verdict"].startswith("B is better")  # 10 tasks, all for B
    assert quality_versus.arms(1) == (1, 2) and quality_versus.arms(3) == (1, 3)


def test_resume_keeps_the_runs_finished_with_this_engine_and_runs_the_rest(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    args = _args(bench, seeds=[0], resume=True, out=None)
    first = asyncio.run(bench.bench(args, work))
    [row] = first["runs"]
    assert row["fingerprint"] and (Path(row["run_dir"]).parent / "row.json").is_file()
    trained = _count_training(monkeypatch)
    again = asyncio.run(bench.bench(_args(bench, seeds=[0, 1], resume=True, out=None), work))
    assert trained == [1]  # seed 0 kept, seed 1 run
    assert again["runs"][0] == row and again["runs"][1]["seed"] == 1
    assert "finished before with this engine, not run again" in capsys.readouterr().err
    saved = Path(row["run_dir"]).parent / "row.json"
    saved.write_text(json.dumps({**row, "fingerprint": "from other code"}))  # as if the engine changed
    asyncio.run(bench.bench(_args(bench, seeds=[0], resume=True, out=None), work))
    assert trained == [1, 1] and "is from other code or settings: run again" in capsys.readouterr().err
    assert json.loads(saved.read_text())["fingerprint"] == row["fingerprint"]


def test_resume_needs_a_work_folder(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--resume", "--families", "structure"])
    assert exc.value.code == 2 and "give --work DIR" in capsys.readouterr().err


def _count_training(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import skillsleep.slash_commands.train_runner as runner

    trained: list[int] = []
    original = runner.run_training

    async def train(*a: Any, **k: Any) -> Any:
        trained.append(1)
        return await original(*a, **k)

    monkeypatch.setattr(runner, "run_training", train)
    return trained


def test_a_row_that_cannot_be_read_is_run_again_and_rewritten_whole(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    [row] = asyncio.run(bench.bench(_args(bench, resume=True, out=None), work))["runs"]
    saved = Path(row["run_dir"]).parent / "row.json"
    whole = saved.read_text()
    saved.write_text(whole[: len(whole) // 2])  # as a bench killed mid-write before rows were atomic
    trained = _count_training(monkeypatch)
    capsys.readouterr()
    [again] = asyncio.run(bench.bench(_args(bench, resume=True, out=None), work))["runs"]
    assert trained == [1] and "cannot be read: run again" in capsys.readouterr().err
    assert json.loads(saved.read_text())["fingerprint"] == row["fingerprint"] == again["fingerprint"]
    assert [p.name for p in saved.parent.iterdir() if p.name.startswith(".row.json")] == []  # no temporary left


def test_versus_resumes_arm_by_arm(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    args = _args(bench, resume=True)
    first = asyncio.run(bench.versus(args, work, bench.one_run, bench.TestScores, bench.engine_fingerprint()))
    trained = _count_training(monkeypatch)
    capsys.readouterr()
    again = asyncio.run(bench.versus(args, work, bench.one_run, bench.TestScores, bench.engine_fingerprint()))
    assert trained == [] and capsys.readouterr().err.count("finished before with this engine, not run again") == 2
    assert again["comparisons"] == first["comparisons"]
    assert [r["test_tasks"] for r in again["runs"]] == [r["test_tasks"] for r in first["runs"]]
    asyncio.run(bench.versus(_args(bench), work, bench.one_run, bench.TestScores, bench.engine_fingerprint()))
    assert trained == [1, 1]  # without --resume both arms train again
