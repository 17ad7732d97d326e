"""`skillsleep compare A B --tasks FILE` on the chat harness with a scripted target: the verdict, the
sample-size hint, the response cache (a second compare makes no model call), the HTML page, and the
outputs in every format against tests/fixtures/verbs/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from golden import check
from test_cli import RULE, SEED, invoke, project  # noqa: F401  (project: the fixture, a task file of 10 tasks)

# B's skill holds the ANSWER rule, A's does not; the first rule that matches answers
BETTER_ON_8 = [
    {"match": "Question [89]:", "reply": "It is 4."},  # q8, q9: wrong under both skills
    {"match": "ANSWER:", "reply": "Two and two.\nANSWER: 4"},
    {"match": "What is", "reply": "It is 4."},
]
BETTER_ON_1 = [
    {"match": "Question [1-9]:", "reply": "It is 4."},
    {"match": "ANSWER:", "reply": "Two and two.\nANSWER: 4"},
    {"match": "What is", "reply": "It is 4."},
]


def _setup(project: Path, rules: list[dict[str, str]]) -> list[str]:
    (project / "script.json").write_text(json.dumps(rules))
    (project / "B.md").write_text(SEED + f"- {RULE}\n")
    return [
        "compare",
        str(project / "SKILL.md"),
        str(project / "B.md"),
        "--tasks",
        str(project / "tasks.jsonl"),
        "--target",
        f"scripted:{project / 'script.json'}",
    ]


def test_b_better_on_8_of_10_tasks_is_b_is_better_with_p_below_005(project: Path) -> None:
    code, out, err = invoke(*_setup(project, BETTER_ON_8), "--json")
    assert code == 0, err
    data = json.loads(out)
    c = data["comparison"]
    assert c["better"] == "B" and c["mcnemar_p"] < 0.05 and c["mcnemar_p"] == pytest.approx(2 / 2**8)
    assert (c["wins"], c["ties"], c["losses"]) == (8, 2, 0) and c["ci_low"] > 0
    assert c["verdict"].startswith("B is better: +0.80 [") and c["verdict"].endswith("p = 0.008, 10 tasks × 1 sample")
    assert [t["id"] for t in c["tasks"]] == [f"q{i}" for i in range(10)]
    assert data["calls_made"] == 20 and data["harness"] == "chat" and data["metric"] == "hard"


def test_a_difference_on_one_task_is_no_detectable_difference_with_a_sample_size_hint(project: Path) -> None:
    code, out, err = invoke(*_setup(project, BETTER_ON_1), "--format", "text")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("no detectable difference: +0.10 [") and "p = 1.000, 10 tasks × 1 sample" in first
    assert re.search(r"with this spread \(sd 0\.32\) about 79 tasks would be needed to detect \+0\.1$", first), first


def test_a_second_compare_of_the_same_skills_makes_no_model_call(project: Path) -> None:
    args = _setup(project, BETTER_ON_8)
    first = json.loads(invoke(*args, "--json")[1])
    code, out, err = invoke(*args, "--json")
    again = json.loads(out)
    assert code == 0, err
    assert first["calls_made"] == 20 and again["calls_made"] == 0 and again["cache_hits"] == 20
    assert again["comparison"] == first["comparison"]


def test_a_skill_compared_with_itself_is_scored_once(project: Path) -> None:
    """One Evaluator for both: its memo holds A's rollouts when B is the same skill."""
    args = _setup(project, BETTER_ON_8)
    args[2] = args[1]
    code, out, err = invoke(*args, "--json")
    data = json.loads(out)
    assert code == 0, err
    assert data["calls_made"] == 10 and data["comparison"]["ties"] == 10
    assert "every task's difference is the same (sd 0)" in data["comparison"]["verdict"]


def test_samples_are_drawn_for_both_skills_and_their_agreement_is_reported(project: Path) -> None:
    code, out, err = invoke(*_setup(project, BETTER_ON_8), "--samples", "3", "--metric", "mixed", "--json")
    data = json.loads(out)
    assert code == 0, err
    c = data["comparison"]
    assert data["samples"] == 3 and all(len(t["a"]) == len(t["b"]) == 3 for t in c["tasks"])
    assert c["verdict"].endswith("10 tasks × 3 samples") and data["metric"] == "mixed"
    assert c["repeatability"]["sampling_share"] == 0.0 and "agreed" in c["repeatability"]["note"]


def test_the_html_page_is_self_contained_with_a_paired_dot_plot_per_task(project: Path) -> None:
    page = project / "compare.html"
    code, out, err = invoke(*_setup(project, BETTER_ON_8), "--html", str(page), "--format", "md")
    assert code == 0, err
    assert f"HTML: {page}" in out
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "default-src 'none'" in html
    assert html.count('<g class="task">') == 10 and html.count("<svg") == 2
    assert "B is better: +0.80" in html and "<title>q0: A 0.00 (0), B 1.00 (1), B − A +1.00</title>" in html
    assert not re.search(r"(src|href)=|https?://|<script", html)


def test_bad_flags_are_refused_before_any_model_call(project: Path) -> None:
    args = _setup(project, BETTER_ON_8)
    code, _, err = invoke(*args, "--html", str(project))
    assert code == 2 and "is a folder" in err and "compare.html" in err
    code, _, err = invoke(*args, "--html", str(project / "nowhere" / "c.html"))
    assert code == 2 and "no folder" in err
    code, _, err = invoke(*args, "--target-model", "m")
    assert code == 2 and "chat harness" in err
    code, _, err = invoke(*args, "--harness", "codex")  # --target is the chat harness's; an agent's is --target-model
    assert code == 2 and "--target-model" in err
    code, _, err = invoke(*args[:-2], "--harness", "cursor")
    assert code == 2 and "unknown harness" in err
    code, _, err = invoke(*args, "--json", "--format", "md")
    assert code == 2 and "--json is the same as --format json" in err
    code, _, err = invoke(*args[:2], str(project / "missing.md"), *args[3:])
    assert code == 2 and "missing.md" in err
    assert not list((project / "home").glob("**/ledger.jsonl"))


def test_compare_prints_its_golden_outputs(project: Path) -> None:
    args = _setup(project, BETTER_ON_8)
    for fmt in ("json", "md", "text"):
        code, out, err = invoke(*args, "--format", fmt)
        assert code == 0, err
        check(f"compare.{fmt}", out, {str(project): "<ROOT>"})
