"""core/train/paired.py on hand-built paired score tables: the exact McNemar p-value against the binomial
formula, the bootstrap interval (seeded, containing the mean, covering the truth about 95% of the time),
ties, all-equal scores, one task, unequal sample counts, and the verdict's wording."""

from __future__ import annotations

import math
import random

import pytest

from skillsleep.core.train.paired import (
    MIN_TASKS,
    compare_scores,
    mcnemar_p,
    repeatability,
    tasks_needed,
)


def _exact_mcnemar(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar by hand: twice the smaller binomial tail of the discordant pairs."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _table(a_only: int, b_only: int, both: int, neither: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """A paired pass/fail table as one-sample scores: a_only tasks pass under A alone, and so on."""
    rows = [(1.0, 0.0)] * a_only + [(0.0, 1.0)] * b_only + [(1.0, 1.0)] * both + [(0.0, 0.0)] * neither
    return {f"t{i}": [x] for i, (x, _) in enumerate(rows)}, {f"t{i}": [y] for i, (_, y) in enumerate(rows)}


@pytest.mark.parametrize(
    ("a_only", "b_only", "both", "neither"),
    [(0, 8, 1, 1), (2, 9, 3, 0), (1, 1, 4, 4), (3, 0, 0, 2), (0, 5, 0, 0), (0, 6, 0, 0), (4, 11, 2, 3)],
)
def test_mcnemar_p_is_the_exact_binomial_one(a_only: int, b_only: int, both: int, neither: int) -> None:
    a, b = _table(a_only, b_only, both, neither)
    c = compare_scores(a, b)
    assert (c.a_only, c.b_only) == (a_only, b_only)
    assert c.mcnemar_p == pytest.approx(_exact_mcnemar(a_only, b_only), rel=1e-12)
    assert mcnemar_p(a_only, b_only) == c.mcnemar_p


def test_the_issues_example_eight_of_ten_is_b_better_with_p_0008() -> None:
    a, b = _table(0, 8, 1, 1)
    c = compare_scores(a, b)
    assert c.mcnemar_p == pytest.approx(2 / 2**8)  # 0.0078
    assert (c.wins, c.ties, c.losses) == (8, 2, 0) and c.better == "B"
    assert c.mean_diff == pytest.approx(0.8) and 0 < c.ci_low <= c.mean_diff <= c.ci_high <= 1.0
    assert c.verdict.startswith("B is better: +0.80 [") and "p = 0.008, 10 tasks × 1 sample" in c.verdict


def test_a_better_is_said_the_other_way_round() -> None:
    b, a = _table(0, 8, 1, 1)
    c = compare_scores(a, b)
    assert c.better == "A" and c.verdict.startswith("A is better: -0.80 [") and c.ci_high < 0


def test_one_different_task_is_no_detectable_difference_with_a_sample_size_hint() -> None:
    a, b = _table(0, 1, 0, 9)
    c = compare_scores(a, b)
    assert c.better == "none" and c.mcnemar_p == 1.0 and c.ci_low <= 0 <= c.ci_high
    sd = math.sqrt(0.1)  # nine 0s and one 1: the sample variance is 0.1
    assert c.sd_diff == pytest.approx(sd)
    z = 1.959963984540054 + 0.8416212335729143
    assert c.tasks_needed == math.ceil((z * sd / 0.1) ** 2) == 79
    assert c.verdict == (
        f"no detectable difference: +0.10 [{c.ci_low:.2f}, {c.ci_high:.2f}], p = 1.000, 10 tasks × 1 sample; "
        "with this spread (sd 0.32) about 79 tasks would be needed to detect +0.1"
    )


def test_the_interval_is_seeded_and_contains_the_mean_difference() -> None:
    rng = random.Random(7)
    a = {f"t{i}": [rng.random() for _ in range(3)] for i in range(15)}
    b = {t: [min(1.0, x + rng.uniform(-0.1, 0.4)) for x in s] for t, s in a.items()}
    one, again, other = compare_scores(a, b, seed=1), compare_scores(a, b, seed=1), compare_scores(a, b, seed=2)
    assert (one.ci_low, one.ci_high) == (again.ci_low, again.ci_high) and one.ci_method == "bootstrap"
    assert (one.ci_low, one.ci_high) != (other.ci_low, other.ci_high)
    diffs = [p.diff for p in one.tasks]
    assert min(diffs) <= one.ci_low < one.mean_diff < one.ci_high <= max(diffs)
    assert one.mean_diff == pytest.approx(sum(diffs) / len(diffs))


def test_the_interval_covers_the_true_difference_about_95_percent_of_the_time() -> None:
    """200 draws of 20 tasks whose true difference is 0.2 (normal task effects, fixed seeds)."""
    rng = random.Random(11)
    covered = 0
    for draw in range(200):
        base = [rng.gauss(0.5, 0.2) for _ in range(20)]
        a = {f"t{i}": [x] for i, x in enumerate(base)}
        b = {f"t{i}": [x + 0.2 + rng.gauss(0, 0.15)] for i, x in enumerate(base)}
        c = compare_scores(a, b, seed=draw)
        covered += c.ci_low <= 0.2 <= c.ci_high
    assert 0.88 <= covered / 200 <= 0.99, covered


def test_all_ties_give_the_degenerate_interval_and_no_hint() -> None:
    a = {f"t{i}": [0.3 * (i % 3), 1.0] for i in range(5)}
    c = compare_scores(a, a)
    assert (c.ci_low, c.ci_high, c.ci_method) == (0.0, 0.0, "degenerate")
    assert (c.wins, c.ties, c.losses, c.a_only, c.b_only, c.mcnemar_p) == (0, 5, 0, 0, 0, 1.0)
    assert c.tasks_needed is None and c.better == "none"
    assert c.verdict.startswith("no detectable difference: +0.00 [0.00, 0.00], p = 1.000, 5 tasks × 2 samples")
    assert "every task's difference is the same (sd 0)" in c.verdict


def test_all_equal_scores_on_every_task_do_not_crash_the_bootstrap() -> None:
    """Every task +1 (zero variance of the differences): [1, 1], and with 6 tasks McNemar agrees."""
    a = {f"t{i}": [0.0, 0.0] for i in range(6)}
    b = {f"t{i}": [1.0, 1.0] for i in range(6)}
    c = compare_scores(a, b)
    assert (c.ci_low, c.ci_high, c.ci_method, c.sd_diff) == (1.0, 1.0, "degenerate", 0.0)
    assert c.mcnemar_p == pytest.approx(2 / 2**6) and c.better == "B"
    assert c.repeatability.sampling_share == 0.0 and "agreed" in c.repeatability.note


def test_too_few_tasks_are_never_better_even_when_all_win() -> None:
    """5 tasks all +1: the interval is [1, 1] but exact McNemar cannot go below 0.0625 with 5 pairs."""
    a, b = _table(0, 5, 0, 0)
    c = compare_scores(a, b)
    assert c.better == "none" and c.mcnemar_p == pytest.approx(0.0625)
    assert "the interval excludes 0 but McNemar's test on pass/fail (mean ≥ 0.5) does not" in c.verdict


def test_one_task() -> None:
    c = compare_scores({"only": [0.2, 0.4]}, {"only": [0.9]})
    assert c.n_tasks == 1 and (c.ci_low, c.ci_high) == pytest.approx((0.6, 0.6)) and c.sd_diff == 0.0
    assert c.better == "none" and c.mcnemar_p == 1.0 and c.tasks_needed is None
    assert "1 task × 1–2 samples" in c.verdict and "one task has no spread" in c.verdict


def test_unequal_sample_counts_average_within_each_task() -> None:
    a = {"x": [0.0, 1.0, 1.0], "y": [0.0], "z": [0.5, 0.5]}
    b = {"x": [1.0], "y": [1.0, 0.0, 1.0, 1.0], "z": [0.25, 0.75, 0.5]}
    c = compare_scores(a, b)
    rows = {p.id: p for p in c.tasks}
    assert rows["x"].a_mean == pytest.approx(2 / 3) and rows["y"].b_mean == pytest.approx(0.75)
    assert rows["z"].diff == pytest.approx(0.0) and rows["z"].a_pass and rows["z"].b_pass  # 0.5 passes
    assert (c.wins, c.ties, c.losses) == (2, 1, 0) and (c.a_only, c.b_only) == (0, 1)
    rep = c.repeatability
    assert (rep.samples_min, rep.samples_max) == (1, 4) and "1–4 samples" in c.verdict
    # pooled within-task variance: x_a (2 df, s² 1/3), z_a (1 df, 0), y_b (3 df, s² 1/4), z_b (2 df, 1/16)
    pooled = (2 * (1 / 3) + 0 + 3 * 0.25 + 2 * 0.0625) / (2 + 1 + 3 + 2)
    want = sum(pooled / na + pooled / nb for na, nb in ((3, 1), (1, 4), (2, 3))) / 3
    assert rep.sampling_var == pytest.approx(want)


def test_repeatability_splits_sampling_noise_from_task_variation() -> None:
    one = compare_scores({"a": [0.0], "b": [1.0]}, {"a": [1.0], "b": [1.0]}).repeatability
    assert one.sampling_var is None and "covers the variation across tasks only" in one.note
    a = {f"t{i}": [0.0, 0.2] for i in range(4)}
    b = {f"t{i}": [1.0, 0.8] if i < 2 else [0.0, 0.2] for i in range(4)}
    mixed = compare_scores(a, b).repeatability
    # every group's variance is 0.02, so a difference carries 0.02/2 + 0.02/2; the differences' is 0.64/3
    assert mixed.sampling_var == pytest.approx(0.02) and mixed.total_var == pytest.approx(0.64 / 3)
    assert mixed.sampling_share == pytest.approx(0.02 / (0.64 / 3))
    assert mixed.note.startswith("about 9% of the spread") and "91% is variation across tasks" in mixed.note
    noisy = compare_scores(
        {f"t{i}": [0.0, 1.0] for i in range(4)}, {f"t{i}": [float(i % 2), 1.0] for i in range(4)}
    ).repeatability
    assert noisy.sampling_share == 1.0 and "the spread is sampling noise, not a difference between tasks" in noisy.note
    assert repeatability(compare_scores({"t": [1.0]}, {"t": [1.0]}).tasks).total_var == 0.0


def test_tasks_needed_follows_the_normal_approximation() -> None:
    assert tasks_needed(0.0) is None
    assert tasks_needed(0.01) == MIN_TASKS  # never fewer than McNemar can ever decide on
    assert tasks_needed(0.5, detect=0.1) == math.ceil(((1.959963984540054 + 0.8416212335729143) * 5) ** 2)


@pytest.mark.parametrize(
    ("a", "b", "words"),
    [
        ({}, {}, "no tasks to compare"),
        ({"x": [1.0]}, {"y": [1.0]}, "same tasks"),
        ({"x": []}, {"x": [1.0]}, "at least one sample"),
    ],
)
def test_bad_tables_are_refused_naming_what_is_missing(
    a: dict[str, list[float]], b: dict[str, list[float]], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        compare_scores(a, b)


def test_the_page_escapes_task_ids_and_loads_nothing() -> None:
    from skillsleep.core.report.paired_html import paired_page

    bad = '<script>alert("x")</script>' + "x" * 40
    c = compare_scores({bad: [0.0], "ok": [1.0]}, {bad: [1.0], "ok": [1.0]})
    page = paired_page(c, title="A & B", facts=[("<k>", "<v>")])
    assert "<script>" not in page and "&lt;script&gt;alert(&quot;x&quot;)" in page
    assert "<title>A &amp; B</title>" in page and "<th>&lt;k&gt;</th><td>&lt;v&gt;</td>" in page
    assert page.count('<g class="task">') == 2 and "…</text>" in page  # a long id is cut beside its row
