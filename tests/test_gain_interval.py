"""Issue 29: the quality bench's per-family gain with a confidence interval over seeds × tasks, on
hand-built per-seed, per-task scores and no model: core/train/intervals.py `gain_interval` (a two-level
bootstrap, seeded) and bench/quality.py's summary line and per-task test scores; and `mean_interval`,
the interval of one skill's mean over tasks that `skillsleep eval` prints."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bench_script import load_bench

from skillsleep.core.train.intervals import gain_interval, mean_interval


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("quality")


def test_all_equal_gains_have_a_degenerate_interval() -> None:
    g = gain_interval({"s0": {"a": 0.5, "b": 0.5}, "s1": {"a": 0.5, "b": 0.5}})
    assert (g.mean, g.ci_low, g.ci_high, g.method) == (0.5, 0.5, 0.5, "degenerate")
    assert (g.n_runs, g.n_tasks, g.confidence) == (2, 2, 0.95)


def test_one_run_resamples_the_tasks_only() -> None:
    # one run, gains 0 and 1: a resample's mean is 0 (¼), ½ (½) or 1 (¼), so the 95% interval is [0, 1]
    g = gain_interval({"s0": {"a": 0.0, "b": 1.0}})
    assert (g.mean, g.ci_low, g.ci_high, g.method) == (0.5, 0.0, 1.0, "two-level bootstrap")


def test_the_variation_between_seeds_widens_the_interval() -> None:
    # seed 0 lifts every task by 1, seed 1 by none: over tasks alone the gain looks certain, but a
    # resample of the two seeds is {0, 0}, {0, 1} or {1, 1}, so the interval spans [0, 1]
    tasks = [f"t{i}" for i in range(10)]
    g = gain_interval({"s0": dict.fromkeys(tasks, 1.0), "s1": dict.fromkeys(tasks, 0.0)})
    assert g.mean == 0.5 and (g.ci_low, g.ci_high) == (0.0, 1.0)
    one_seed = gain_interval({"s0": {t: float(i % 2) for i, t in enumerate(tasks)}})
    assert 0.0 < one_seed.ci_low < 0.5 < one_seed.ci_high < 1.0  # ten tasks half lifted: narrower


def test_the_interval_is_seeded_contains_the_mean_and_stays_within_the_gains() -> None:
    gains = {f"s{r}": {f"t{t}": ((r + 2 * t) % 5 - 1) / 4 for t in range(8)} for r in range(3)}
    first, again, other = gain_interval(gains), gain_interval(gains), gain_interval(gains, seed=7)
    assert first == again and other.seed == 7
    assert -0.25 <= first.ci_low < first.mean < first.ci_high <= 0.75
    assert first.mean == pytest.approx(sum(v for run in gains.values() for v in run.values()) / 24)


def test_runs_on_different_tasks_or_none_are_refused() -> None:
    with pytest.raises(ValueError, match="same tasks"):
        gain_interval({"s0": {"a": 1.0}, "s1": {"b": 1.0}})
    with pytest.raises(ValueError, match="no gains"):
        gain_interval({})


def _run(seed: int, best: dict[str, float]) -> dict[str, Any]:
    base = dict.fromkeys(best, 0.0)
    mean = sum(best.values()) / len(best)
    return {
        "family": "f",
        "optimizer": "o",
        "seed": seed,
        "test": {"seed": 0.0, "best": mean, "final": mean},
        "test_per_task": {"seed": base, "best": best},
        "steps": 2,
        "steps_applicable": 2,
        "steps_moot": 0,
        "steps_dead_end": 0,
        "accepted": 1,
        "tokens": 100,
    }


def test_the_family_summary_gives_the_gain_with_its_interval(bench: ModuleType) -> None:
    rows = [
        _run(0, {"a": 1.0, "b": 1.0, "c": 0.0, "d": 0.0}),
        _run(1, {"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}),
        _run(2, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}),
    ]
    (s,) = bench.summarise(rows, {"f": 1.0})
    ci = s["gain_ci"]
    assert s["gain_mean"] == pytest.approx(7 / 12, abs=1e-3) and ci["mean"] == pytest.approx(7 / 12)
    assert (ci["n_runs"], ci["n_tasks"], ci["method"], ci["seed"]) == (3, 4, "two-level bootstrap", 0)
    assert ci == gain_interval({f"seed {r['seed']}": r["test_per_task"]["best"] for r in rows}).model_dump()
    line = bench._summary_line(s)
    assert f"gain +0.58, 95% CI [{ci['ci_low']:+.2f}, {ci['ci_high']:+.2f}] over 3 seeds × 4 tasks (sd " in line
    json.dumps(s)
    older = [{k: v for k, v in r.items() if k != "test_per_task"} for r in rows]  # rows without per-task scores
    (o,) = bench.summarise(older, {"f": 1.0})
    assert o["gain_ci"] is None and "gain +0.58 (sd 0.14, range [+0.50, +0.75])" in bench._summary_line(o)


def test_test_scores_are_kept_per_task_and_a_bare_mean_is_scored_again(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillsleep.slash_commands import eval_runner

    calls: list[Path] = []

    async def run_eval(opts: Any, *, on_event: Any) -> Any:
        calls.append(opts.skill)
        rows = [
            eval_runner.TaskScore(id=t, score=s, hard=s, soft=s, feedback="", error=None)
            for t, s in (("a", 1.0), ("b", 0.0))
        ]
        return eval_runner.EvalResult(
            skill=str(opts.skill),
            tasks="t",
            harness="chat",
            n=2,
            metric="hard",
            score=0.5,
            interval=mean_interval([1.0, 0.0]),
            per_task=rows,
            calls_made=0,
            tokens=0,
            cost_usd=0.0,
        )

    monkeypatch.setattr(eval_runner, "run_eval", run_eval)
    family = bench.load_family("structure")
    (tmp_path / "all.jsonl").write_text("{}\n")
    tests = bench.TestScores(tmp_path, family, False)
    skill = tmp_path / "SKILL.md"
    skill.write_text("be brief\n")
    tests.scores[tests._key(skill.read_text())] = 0.5  # what test-scores.json held before issue 29
    assert asyncio.run(tests.per_task(skill)) == {"a": 1.0, "b": 0.0} and len(calls) == 1
    assert asyncio.run(tests.score(skill)) == 0.5 and len(calls) == 1  # kept: not scored again
    again = bench.TestScores(tmp_path, family, False)  # read back from test-scores.json
    assert asyncio.run(again.per_task(skill)) == {"a": 1.0, "b": 0.0} and len(calls) == 1


def test_the_mean_over_tasks_has_a_seeded_bootstrap_interval() -> None:
    scores = [0.0, 1.0, 1.0, 1.0, 0.25, 0.25, 0.25, 0.0, 0.0, 0.0]  # the scores of eval's golden output
    m = mean_interval(scores)
    assert m == mean_interval(scores) and m.method == "bootstrap" and m.n_tasks == 10
    assert m.mean == pytest.approx(0.375) and 0.0 < m.ci_low < 0.375 < m.ci_high < 1.0
    assert (
        m.line()
        == f"mean 0.375, 95% interval [{m.ci_low:.2f}, {m.ci_high:.2f}] over 10 tasks (bootstrap over the tasks, seed 0)"
    )
    one = mean_interval([0.5])
    assert (one.ci_low, one.ci_high, one.method) == (0.5, 0.5, "degenerate")
    assert (
        one.line()
        == "mean 0.500, 95% interval [0.50, 0.50] over 1 task (every task scored the same: nothing to resample)"
    )
    with pytest.raises(ValueError):
        mean_interval([])
