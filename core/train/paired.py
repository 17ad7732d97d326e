"""One paired comparison of two skills, A and B, on the same tasks: is B better, and how sure is that?

Input: each task's sample scores under A and under B (the counts may differ between tasks and
between A and B); a task's score is the mean of its samples, and the task is the unit of evidence.

- **Mean difference** B − A over the tasks, with a paired bootstrap 95% confidence interval
  (`scipy.stats.bootstrap`, `paired=True`: the task is the resampling unit, its A and B scores
  drawn together; BCa, seeded, so the same scores give the same interval). When every task's
  difference is the same (one task, all ties, all-equal scores) there is nothing to resample: the
  interval is that difference, [d, d].
- **Exact McNemar test** on hard scores: a task *passes* under a skill when its mean score is at
  least `PASS_AT` (0.5). The tasks that pass under one skill and fail under the other are the
  discordant pairs; under "no difference" each goes either way with probability ½, so the two-sided
  p-value is `scipy.stats.binomtest(b_only, b_only + a_only, 0.5)` (1 with no discordant pair).
- **Wins / ties / losses**: tasks where B's mean is higher / the same / lower.
- **Verdict**: "B is better" (or "A is better") only when both agree: the interval lies wholly on
  one side of 0 AND McNemar's p < 0.05 in the same direction. Anything else is "no detectable
  difference", with a sample-size hint from the normal approximation for a paired mean difference:
  n = ((z₀.₉₇₅ + z₀.₈₀) · sd / δ)² tasks to detect δ = +0.1 at the 5% level with 80% power, sd
  being the observed standard deviation of the per-task differences, and never fewer than
  `MIN_TASKS` (6), the fewest tasks on which exact McNemar can reach p < 0.05 at all.
- **Repeatability**: how much of the spread of the per-task differences is sampling noise (the
  samples of one task disagreeing, measured only with more than one sample per task) and how much
  is real variation across tasks. With one sample per task the interval covers task variation only.

Pure: no I/O, no model call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats

from skillsleep.core.train.intervals import ALPHA, bootstrap_ci

PASS_AT = 0.5  # a task passes (hard score 1) when its mean score is at least this
POWER = 0.8  # the power the sample-size hint is for
DETECT = 0.1  # the difference the sample-size hint is for
MIN_TASKS = 6  # the fewest discordant tasks for which exact McNemar can give p < 0.05 (2·½⁶ = 0.031)
_EPS = 1e-12


class TaskPair(BaseModel):
    """One task's scores under A and B: the samples, their means, B − A, and pass (mean ≥ PASS_AT)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    a: list[float]
    b: list[float]
    a_mean: float
    b_mean: float
    diff: float
    a_pass: bool
    b_pass: bool


class Repeatability(BaseModel):
    """How much of the spread of per-task differences is sampling noise and how much is across tasks."""

    model_config = ConfigDict(extra="forbid")

    samples_min: int
    samples_max: int
    total_var: float  # variance of the per-task differences (0 with one task)
    sampling_var: float | None  # the part the samples' own noise explains; None: one sample per task
    sampling_share: float | None  # sampling_var / total_var, at most 1
    note: str


class PairedComparison(BaseModel):
    """A paired comparison of B against A: per task, then the statistics and the verdict."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[TaskPair]
    n_tasks: int
    a_mean: float
    b_mean: float
    mean_diff: float  # B − A
    sd_diff: float  # sample sd of the per-task differences (0 with one task)
    ci_low: float
    ci_high: float
    confidence: float
    ci_method: Literal["bootstrap", "degenerate"]
    wins: int  # tasks where B scores higher
    ties: int
    losses: int
    a_only: int  # tasks passing under A and failing under B (discordant)
    b_only: int  # tasks passing under B and failing under A (discordant)
    mcnemar_p: float
    pass_at: float
    better: Literal["A", "B", "none"]
    detect: float
    tasks_needed: int | None  # about how many tasks would detect `detect`; None: no spread to size it from
    repeatability: Repeatability
    seed: int
    verdict: str


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _pairs(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]]) -> list[TaskPair]:
    """The tasks in A's order, checked: the same tasks under A and B, each with a sample."""
    if not a:
        raise ValueError("no tasks to compare: give each skill's scores on at least one task")
    if missing := [t for t in a if t not in b] + [t for t in b if t not in a]:
        raise ValueError(f"A and B must be scored on the same tasks; only one of them has {', '.join(missing)}")
    if empty := [t for t in a if not a[t] or not b[t]]:
        raise ValueError(f"every task needs at least one sample under A and B; none for {', '.join(empty)}")
    rows = []
    for tid, sa in a.items():
        ma, mb = _mean(sa), _mean(b[tid])
        rows.append(
            TaskPair(
                id=tid,
                a=[float(x) for x in sa],
                b=[float(x) for x in b[tid]],
                a_mean=ma,
                b_mean=mb,
                diff=mb - ma,
                a_pass=ma >= PASS_AT - _EPS,
                b_pass=mb >= PASS_AT - _EPS,
            )
        )
    return rows


def _difference(a: Any, b: Any, axis: int = -1) -> Any:
    return np.mean(b, axis=axis) - np.mean(a, axis=axis)


CiMethod = Literal["bootstrap", "degenerate"]


def paired_ci(pairs: Sequence[TaskPair], *, confidence: float, seed: int) -> tuple[float, float, CiMethod]:
    """The paired bootstrap interval of the mean difference (task = resampling unit), or [d, d] when
    every task's difference is the same (nothing to resample: one task, all ties)."""
    diffs = [p.diff for p in pairs]
    if max(diffs) - min(diffs) <= _EPS:
        return diffs[0], diffs[0], "degenerate"
    data = (np.array([p.a_mean for p in pairs]), np.array([p.b_mean for p in pairs]))
    found = bootstrap_ci(data, _difference, paired=True, confidence=confidence, seed=seed)
    if found is not None:
        return found[0], found[1], "bootstrap"
    return min(diffs), max(diffs), "degenerate"  # pragma: no cover - percentile is finite on finite data


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value from the discordant pairs (1 when there are none)."""
    n = a_only + b_only
    return 1.0 if n == 0 else float(stats.binomtest(b_only, n, 0.5).pvalue)


def tasks_needed(sd: float, *, detect: float = DETECT, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """About how many tasks a paired test needs to detect `detect` given the sd of per-task
    differences: ((z_{1-α/2} + z_{power}) · sd / detect)², at least MIN_TASKS; None when sd is 0."""
    if sd <= _EPS:
        return None
    z = float(stats.norm.ppf(1 - alpha / 2)) + float(stats.norm.ppf(power))
    return max(MIN_TASKS, math.ceil((z * sd / detect) ** 2))


def _variance(values: Sequence[float]) -> float:
    return float(np.var(values, ddof=1)) if len(values) > 1 else 0.0


# how to measure sampling noise, in the words of the command that compared (compare's by default)
SAMPLE_MORE = "--samples 3 with the target's temperature above 0, [target] temperature, measures it"
SAMPLE_MORE_TRAIN = "[train] rollouts_k = 3 with the target's temperature above 0 measures it"
SAMPLE_MORE_NIGHT = "--rollouts-k 3 with the target's temperature above 0 measures it"


def repeatability(pairs: Sequence[TaskPair], *, sample_more: str = SAMPLE_MORE) -> Repeatability:
    """Sampling noise against task variation: the within-task variance of the samples, pooled over
    every task and skill with two samples or more, as the variance it adds to a task's difference
    (s²/n_A + s²/n_B, averaged over the tasks), against the variance of the per-task differences."""
    counts = [len(s) for p in pairs for s in (p.a, p.b)]
    total = _variance([p.diff for p in pairs])
    groups = [s for p in pairs for s in (p.a, p.b) if len(s) > 1]
    base = Repeatability(
        samples_min=min(counts),
        samples_max=max(counts),
        total_var=total,
        sampling_var=None,
        sampling_share=None,
        note="",
    )
    if not groups:
        note = (
            "one sample per task: the interval covers the variation across tasks only; sampling noise is not "
            f"measured ({sample_more})"
        )
        return base.model_copy(update={"note": note})
    pooled = sum((len(s) - 1) * _variance(s) for s in groups) / sum(len(s) - 1 for s in groups)
    sampling = _mean([pooled / len(p.a) + pooled / len(p.b) for p in pairs])
    if sampling <= _EPS:
        note = (
            "the samples of every task agreed (as at temperature 0): no sampling noise seen, "
            "the spread is all across tasks"
        )
        return base.model_copy(update={"sampling_var": 0.0, "sampling_share": 0.0, "note": note})
    share = min(1.0, sampling / total) if total > _EPS else 1.0
    note = (
        f"about {share:.0%} of the spread of the per-task differences is sampling noise (the samples of a "
        f"task disagreeing) and {1 - share:.0%} is variation across tasks"
        if share < 1.0
        else "the per-task differences vary no more than the samples' own noise explains: the spread is "
        "sampling noise, not a difference between tasks"
    )
    return base.model_copy(update={"sampling_var": sampling, "sampling_share": share, "note": note})


def compare_scores(
    a: Mapping[str, Sequence[float]],
    b: Mapping[str, Sequence[float]],
    *,
    seed: int = 0,
    confidence: float = 1 - ALPHA,
    detect: float = DETECT,
    names: tuple[str, str] = ("A", "B"),
    sample_more: str = SAMPLE_MORE,
) -> PairedComparison:
    """Compare B against A on paired per-task sample scores (task id → scores), tasks in A's order;
    the verdict calls them `names` ("best is better: …" with ("seed", "best"))."""
    pairs = _pairs(a, b)
    diffs = [p.diff for p in pairs]
    low, high, method = paired_ci(pairs, confidence=confidence, seed=seed)
    a_only = sum(1 for p in pairs if p.a_pass and not p.b_pass)
    b_only = sum(1 for p in pairs if p.b_pass and not p.a_pass)
    p_value = mcnemar_p(a_only, b_only)
    sd = math.sqrt(_variance(diffs))
    mean_diff = _mean(diffs)
    better: Literal["A", "B", "none"] = "none"
    if low > _EPS and p_value < ALPHA and b_only > a_only:
        better = "B"
    elif high < -_EPS and p_value < ALPHA and a_only > b_only:
        better = "A"
    result = PairedComparison(
        tasks=pairs,
        n_tasks=len(pairs),
        a_mean=_mean([p.a_mean for p in pairs]),
        b_mean=_mean([p.b_mean for p in pairs]),
        mean_diff=mean_diff,
        sd_diff=sd,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        ci_method=method,
        wins=sum(1 for d in diffs if d > _EPS),
        ties=sum(1 for d in diffs if abs(d) <= _EPS),
        losses=sum(1 for d in diffs if d < -_EPS),
        a_only=a_only,
        b_only=b_only,
        mcnemar_p=p_value,
        pass_at=PASS_AT,
        better=better,
        detect=detect,
        tasks_needed=tasks_needed(sd, detect=detect),
        repeatability=repeatability(pairs, sample_more=sample_more),
        seed=seed,
        verdict="",
    )
    return result.model_copy(update={"verdict": verdict(result, names=names)})


def evidence(c: PairedComparison) -> str:
    """ "+0.31 [0.12, 0.50], p = 0.008, 10 tasks × 3 samples": the difference, its interval, the
    McNemar p-value and what it rests on."""
    rep = c.repeatability
    n = f"{rep.samples_min}" if rep.samples_min == rep.samples_max else f"{rep.samples_min}–{rep.samples_max}"
    tasks = f"{c.n_tasks} task{'s' if c.n_tasks != 1 else ''}"
    samples = f"{n} sample{'s' if rep.samples_max != 1 else ''}"
    p = "p < 0.001" if c.mcnemar_p < 0.001 else f"p = {c.mcnemar_p:.3f}"
    return f"{c.mean_diff:+.2f} [{c.ci_low:.2f}, {c.ci_high:.2f}], {p}, {tasks} × {samples}"


def verdict(c: PairedComparison, *, names: tuple[str, str] = ("A", "B")) -> str:
    """The plain verdict: who is better with the evidence, or no detectable difference with why and
    about how many tasks would settle it. `names` are A's and B's names in it."""
    if c.better != "none":
        return f"{names[0] if c.better == 'A' else names[1]} is better: {evidence(c)}"
    out = f"no detectable difference: {evidence(c)}"
    ci_says = c.ci_low > _EPS or c.ci_high < -_EPS
    if ci_says and c.mcnemar_p >= ALPHA:
        out += f"; the interval excludes 0 but McNemar's test on pass/fail (mean ≥ {c.pass_at:g}) does not"
    elif c.mcnemar_p < ALPHA and not ci_says:
        out += "; McNemar's test on pass/fail sees a difference but the interval of the mean includes 0"
    if c.tasks_needed is None:
        why = "every task's difference is the same (sd 0)" if c.n_tasks > 1 else "one task has no spread"
        return out + f"; {why}, so nothing to size a larger comparison from"
    return out + (
        f"; with this spread (sd {c.sd_diff:.2f}) about {c.tasks_needed} tasks would be needed to detect "
        f"{c.detect:+.1f}"
    )
