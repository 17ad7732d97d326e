"""Confidence intervals of mean scores, by the bootstrap, seeded so the same scores give the same
interval:

- `bootstrap_ci`: scipy's bootstrap (BCa, or the percentile interval where BCa's acceleration is
  undefined on these scores), which paired.py's paired interval and `mean_interval` share.
- `mean_interval`: one skill's mean score over tasks (`skillsleep eval`): the task is the
  resampling unit, its samples averaged first.
- `gain_interval`: the mean gain of trained over seed skill over runs × tasks (bench/quality.py):
  a two-level bootstrap, runs and tasks resampled independently.

Pure: no I/O, no model call."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats

ALPHA = 0.05  # the level of the tests, for a 95% interval
RESAMPLES = 9999
_EPS = 1e-12


def bootstrap_ci(
    data: tuple[Any, ...], statistic: Callable[..., Any], *, paired: bool, confidence: float, seed: int
) -> tuple[float, float] | None:
    """scipy's BCa bootstrap interval of `statistic` on `data` (vectorized), or the percentile one
    where BCa is undefined; None when neither is finite."""
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                res = stats.bootstrap(
                    data,
                    statistic,
                    paired=paired,
                    vectorized=True,
                    n_resamples=RESAMPLES,
                    confidence_level=confidence,
                    method=method,
                    rng=np.random.default_rng(seed),
                )
            except (RuntimeWarning, ValueError):
                continue
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            return low, high
    return None  # pragma: no cover - percentile is finite on finite data


class MeanInterval(BaseModel):
    """A mean score over tasks with its bootstrap interval (the task the unit); see `mean_interval`."""

    model_config = ConfigDict(extra="forbid")

    n_tasks: int
    mean: float
    ci_low: float
    ci_high: float
    confidence: float
    method: Literal["bootstrap", "degenerate"]
    seed: int

    def line(self) -> str:
        """ "mean 0.375, 95% interval [0.13, 0.63] over 10 tasks (…)": the interval and how it was made."""
        how = (
            f"bootstrap over the tasks, seed {self.seed}"
            if self.method == "bootstrap"
            else "every task scored the same: nothing to resample"
        )
        tasks = f"{self.n_tasks} task{'s' if self.n_tasks != 1 else ''}"
        return (
            f"mean {self.mean:.3f}, {self.confidence:.0%} interval [{self.ci_low:.2f}, {self.ci_high:.2f}] "
            f"over {tasks} ({how})"
        )


def _mean(values: Any, axis: int = -1) -> Any:
    return np.mean(values, axis=axis)


def mean_interval(scores: Sequence[float], *, seed: int = 0, confidence: float = 1 - ALPHA) -> MeanInterval:
    """The mean of per-task scores with its bootstrap interval (`bootstrap_ci`, the task the unit);
    [m, m] when every task scored the same (one task, all equal: nothing to resample)."""
    if not scores:
        raise ValueError("no task scores: give at least one")
    mean = float(np.mean(scores))
    base = MeanInterval(
        n_tasks=len(scores), mean=mean, ci_low=mean, ci_high=mean, confidence=confidence, method="degenerate", seed=seed
    )
    if max(scores) - min(scores) <= _EPS:
        return base
    found = bootstrap_ci((np.array(scores, dtype=float),), _mean, paired=False, confidence=confidence, seed=seed)
    if found is None:  # pragma: no cover - percentile is finite on finite data
        return base.model_copy(update={"ci_low": min(scores), "ci_high": max(scores)})
    return base.model_copy(update={"ci_low": found[0], "ci_high": found[1], "method": "bootstrap"})


class GainInterval(BaseModel):
    """The mean gain over runs × tasks (each run a training seed, each task a test task) with a
    two-level bootstrap interval; see `gain_interval`."""

    model_config = ConfigDict(extra="forbid")

    n_runs: int
    n_tasks: int
    mean: float
    ci_low: float
    ci_high: float
    confidence: float
    method: Literal["two-level bootstrap", "degenerate"]
    seed: int


def gain_interval(
    gains: Mapping[str, Mapping[str, float]], *, seed: int = 0, confidence: float = 1 - ALPHA
) -> GainInterval:
    """The mean of per-run, per-task gains (run → task id → gain, e.g. trained − seed skill on one
    test task) with a two-level (crossed) bootstrap interval: each of RESAMPLES resamples draws the
    runs with replacement and, independently, the tasks with replacement, and averages the gains
    over the drawn runs × tasks, so the interval covers both the variation between training seeds
    and that between tasks (a task's gains under different seeds stay together, not counted as
    independent); the percentile interval, numpy's generator seeded with `seed`. Every run must be
    scored on the same tasks. [g, g] when every gain is the same g (nothing to resample)."""
    runs = list(gains)
    if not runs or not (tasks := list(gains[runs[0]])):
        raise ValueError("no gains to summarise: give at least one run with one task")
    if odd := [r for r in runs if set(gains[r]) != set(tasks)]:
        raise ValueError(f"every run must be scored on the same tasks; {', '.join(odd)} differ from {runs[0]}")
    grid = np.array([[float(gains[r][t]) for t in tasks] for r in runs])
    mean_gain = float(grid.mean())
    base = GainInterval(
        n_runs=len(runs),
        n_tasks=len(tasks),
        mean=mean_gain,
        ci_low=mean_gain,
        ci_high=mean_gain,
        confidence=confidence,
        method="degenerate",
        seed=seed,
    )
    if float(grid.max() - grid.min()) <= _EPS:
        return base
    rng = np.random.default_rng(seed)
    n_r, n_t = grid.shape
    run_counts = rng.multinomial(n_r, np.full(n_r, 1 / n_r), size=RESAMPLES)  # how often each run is drawn
    task_counts = rng.multinomial(n_t, np.full(n_t, 1 / n_t), size=RESAMPLES)
    means = np.einsum("br,rt,bt->b", run_counts, grid, task_counts) / (n_r * n_t)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return base.model_copy(update={"ci_low": float(low), "ci_high": float(high), "method": "two-level bootstrap"})
