"""Issue 29, item 4: wherever a paired comparison is reported — `compare`, the night's report (md and
HTML) and `train`'s test split — it says how much of the spread is within-task (the samples of a
task disagreeing) and how much across tasks when there are several samples per task, and that the
interval covers the task variation only when there is one."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import pytest
from test_report import full_report

from skillsleep.core.report.evidence import held_out_comparison
from skillsleep.core.report.html import render_html
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.report.result import NightResult
from skillsleep.core.train.paired import SAMPLE_MORE_NIGHT, PairedComparison, compare_scores
from skillsleep.slash_commands.compare_render import compare_text
from skillsleep.slash_commands.compare_runner import CompareResult
from skillsleep.slash_commands.train_runner import paired_lines

# 3 samples per task at a temperature above 0: they disagree within tasks 2 and 4
A = {"t1": [0.0, 0.0, 0.0], "t2": [1.0, 0.0, 1.0], "t3": [0.5, 0.5, 0.5], "t4": [0.0, 1.0, 0.0]}
B = {"t1": [1.0, 1.0, 1.0], "t2": [0.0, 1.0, 0.0], "t3": [0.5, 0.5, 0.5], "t4": [1.0, 1.0, 0.0]}
SPLIT = re.compile(
    r"about (\d+)% of the spread of the per-task differences is sampling noise \(the samples of a task "
    r"disagreeing\) and (\d+)% is variation across tasks"
)
ONE = "one sample per task: the interval covers the variation across tasks only; sampling noise is not measured"


def _shares(text: str) -> tuple[int, int]:
    found = SPLIT.search(text)
    assert found is not None, text
    return int(found[1]), int(found[2])


def _expected(c: PairedComparison) -> tuple[int, int]:
    share = c.repeatability.sampling_share
    assert share is not None and 0 < share < 1
    return round(share * 100), round((1 - share) * 100)


def _compare(c: PairedComparison, samples: int) -> str:
    r = CompareResult(
        a="A.md",
        b="B.md",
        tasks="tasks.jsonl",
        harness="chat",
        metric="mixed",
        samples=samples,
        comparison=c,
        html=None,
        calls_made=0,
        cache_hits=0,
        tokens=0,
        cost_usd=0.0,
    )
    return compare_text(r, True)


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_the_night_report_splits_the_spread_with_samples_and_says_task_variation_only_without(
    render: Callable[[NightResult], str],
) -> None:
    r = full_report()
    assert r.gate is not None
    sampled = held_out_comparison(r.gate, A, B)
    assert sampled is not None and sampled.repeatability.samples_min == 3
    assert _shares(render(r.model_copy(update={"paired": sampled}))) == _expected(sampled)
    one = held_out_comparison(r.gate, {t: s[:1] for t, s in A.items()}, {t: s[:1] for t, s in B.items()})
    text = html.unescape(render(r.model_copy(update={"paired": one})))
    assert f"{ONE} ({SAMPLE_MORE_NIGHT})" in text and SPLIT.search(text) is None


def test_compare_splits_the_spread_with_samples_and_says_task_variation_only_without() -> None:
    sampled = compare_scores(A, B)
    assert _shares(_compare(sampled, 3)) == _expected(sampled)
    text = _compare(compare_scores({t: s[:1] for t, s in A.items()}, {t: s[:1] for t, s in B.items()}), 1)
    assert f"repeatability: {ONE} (--samples 3 with" in text and SPLIT.search(text) is None


def test_train_splits_the_spread_with_samples_and_says_task_variation_only_without() -> None:
    sampled = compare_scores(A, B, names=("seed", "best"))
    lines = paired_lines(sampled)
    assert lines[1].startswith("  repeatability: ") and _shares(lines[1]) == _expected(sampled)
    one = compare_scores({t: s[:1] for t, s in A.items()}, {t: s[:1] for t, s in B.items()}, names=("seed", "best"))
    assert paired_lines(one)[1].startswith(f"  repeatability: {ONE}")
