"""bench/quality.py without a model: its families are well formed, bad input ends in a clear
message, and its summary computes the issue's targets."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bench_script import load_bench

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Edit, Judge, Run
from skillsleep.core.train.checks import run_checks
from skillsleep.core.train.judges import judge_problems
from skillsleep.core.train.step_record import StepRecord

FAMILIES = ("structure", "answer-format", "reasoning", "findings", "labels", "brief", "sign-off", "language")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("quality")


@pytest.mark.parametrize("name", FAMILIES)
def test_each_family_has_disjoint_fixed_splits_and_a_usable_judge(bench: ModuleType, name: str) -> None:
    family = bench.load_family(name)
    sizes = {split: len(keys) for split, keys in family.splits.items()}
    assert sizes == {"train": 8, "val": 6, "test": 10}
    keys = [k for ks in family.splits.values() for k in ks]
    assert len(keys) == len(set(keys))
    judge = Judge.model_validate({**family.judge, "answer": "1"} if "answer" in family.judge else family.judge)
    assert judge_problems(judge) == []
    # the reference differs from the seed by what the seed lacks, and both are valid skills
    seed, reference = Skill(family.seed_skill.read_text()), Skill(family.reference_skill.read_text())
    assert seed.hash != reference.hash


@pytest.mark.parametrize("name", FAMILIES)
def test_tasks_built_from_the_shared_data_keep_their_split(bench: ModuleType, name: str) -> None:
    if not bench.DATA.is_dir():
        pytest.skip("../shared/data/tasks is absent (CI provides it)")
    family = bench.load_family(name)
    tasks = bench.build_tasks(family)
    for split, keys in family.splits.items():
        assert [t.id for t in tasks if t.split == split] == [f"{name}-{k}" for k in keys]
    assert all("{input}" not in t.prompt and "{target}" not in (t.judge.answer or "") for t in tasks)


def test_every_family_on_disk_is_tested(bench: ModuleType) -> None:
    names = bench.family_names()
    assert sorted(names) == sorted(FAMILIES)
    kept = [bench.load_family(n).held_out for n in names]  # those kept for the end come last
    assert kept == sorted(kept) and any(kept) and names == sorted(names, key=lambda n: (kept[names.index(n)], n))


def test_the_structure_judge_wants_a_summary_section(bench: ModuleType) -> None:
    judge = Judge.model_validate(bench.load_family("structure").judge)
    assert all(r.passed for r in run_checks(judge, Run(response="## Summary\nShort.\n\nMore text.")))
    failed = run_checks(judge, Run(response="Just an answer."))
    assert not failed[0].passed and "`Summary`" in failed[0].feedback


def test_an_unknown_family_is_named_with_the_known_ones(bench: ModuleType) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--families", "structur"])
    assert "no task family 'structur'" in str(exc.value) and "structure" in str(exc.value)


def test_missing_shared_data_says_where_it_is_read_from(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "DATA", tmp_path / "absent")
    with pytest.raises(SystemExit) as exc:
        bench.main(["--families", "structure"])
    assert "../shared/data/tasks" in str(exc.value) and str(tmp_path / "absent") in str(exc.value)


def test_bad_seeds_are_a_usage_error(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--seeds", "0,one"])
    assert exc.value.code == 2 and "--seeds takes whole numbers" in capsys.readouterr().err


def _row(optimizer: str, seed: int, best: float, tokens: int, applicable: int, moot: int = 0) -> dict[str, Any]:
    return {
        "family": "f",
        "optimizer": optimizer,
        "seed": seed,
        "test": {"seed": 0.2, "best": best, "final": best},
        "steps": 2,
        "steps_applicable": applicable,
        "steps_moot": moot,
        "steps_dead_end": 2 - applicable - moot,
        "accepted": int(best > 0.2),
        "tokens": tokens,
    }


def test_the_summary_measures_gain_against_the_headroom(bench: ModuleType) -> None:
    rows = [_row("o", 0, 0.6, 9000, 2), _row("o", 1, 0.8, 14000, 2), _row("o", 2, 0.4, 12000, 1)]
    (s,) = bench.summarise(rows, {"f": 1.0})
    assert s["gain_mean"] == pytest.approx(0.4) and s["gain_min"] == pytest.approx(0.2)
    assert s["headroom"] == pytest.approx(0.8) and s["headroom_fraction"] == pytest.approx(0.5)
    assert s["target_gain"] and s["target_tokens"]
    assert s["applicable_rate"] == pytest.approx(5 / 6, abs=1e-3) and not s["target_applicable"]
    (over,) = bench.summarise([_row("o", 0, 0.3, 15001, 2)], {"f": 1.0})
    assert not over["target_gain"] and not over["target_tokens"] and over["target_applicable"]
    (none,) = bench.summarise([_row("o", 0, 0.2, 100, 0)], {"f": 0.2})
    assert none["headroom_fraction"] is None and not none["target_gain"]
    json.dumps([s, over, none])  # the summary is the JSON line's content


def _step(selected: list[Edit], applied: list[Edit], moot: list[Edit]) -> StepRecord:
    return StepRecord(
        epoch=0,
        step=0,
        learning_rate=1,
        batch=[],
        train_score=0.0,
        proposed=len(selected),
        merged=len(selected),
        selected=selected,
        applied=applied,
        moot=moot,
    )


def test_a_step_whose_proposals_the_skill_holds_is_moot_not_a_dead_end(bench: ModuleType) -> None:
    rule, heading = Edit(op="add", content="Every reply must include `## Summary`."), Edit(op="add", content="## X")
    assert bench.step_outcome(_step([rule], [rule], [])) == "applicable"
    assert bench.step_outcome(_step([rule], [], [rule.model_copy()])) == "moot"
    assert bench.step_outcome(_step([rule, heading], [], [rule])) == "dead_end"  # the heading was refused
    assert bench.step_outcome(_step([], [], [])) == "dead_end"  # nothing selected (all dropped, or none proposed)


def test_the_summary_counts_moot_steps_apart_from_dead_ends(bench: ModuleType) -> None:
    # structure, seed 0: step 1 applied (accepted), step 2 proposed the accepted line again
    (s,) = bench.summarise([_row("o", 0, 0.9, 13934, 1, moot=1), _row("o", 1, 0.2, 9000, 1)], {"f": 1.0})
    assert (s["steps"], s["steps_applicable"], s["steps_moot"], s["steps_dead_end"]) == (4, 2, 1, 1)
    assert s["applicable_rate"] == pytest.approx(2 / 3, abs=1e-3) and not s["target_applicable"]
    (held,) = bench.summarise([_row("o", 0, 0.9, 13934, 1, moot=1)], {"f": 1.0})
    assert held["applicable_rate"] == 1.0 and held["target_applicable"]
    assert "moot 1, dead-end 0, skipped 0" in bench._summary_line(held)


def test_the_summary_counts_the_steps_skipped_at_the_top_score(bench: ModuleType) -> None:
    # findings, seed 0: step 1 put every selection task at the top score, step 2 was skipped
    one = {**_row("o", 0, 1.0, 9000, 1), "steps": 1, "steps_dead_end": 0, "steps_skipped": 1}
    (s,) = bench.summarise([one, _row("o", 1, 0.2, 9000, 1)], {"f": 1.0})  # a row written before: none skipped
    assert (s["steps"], s["steps_applicable"], s["steps_dead_end"], s["steps_skipped"]) == (3, 2, 1, 1)
    assert s["applicable_rate"] == pytest.approx(2 / 3, abs=1e-3)  # a skipped step is not one that needed an edit
    assert "dead-end 1, skipped 1 (67% of the non-moot apply)" in bench._summary_line(s)


def test_candidates_reach_the_run_config_and_split_the_summary(bench: ModuleType, tmp_path: Path) -> None:
    from skillsleep.core.train.config import load_config

    family = bench.load_family("structure")
    config = load_config(bench.write_run_config(tmp_path, family, "scripted:x", 0, 2, candidates=2))
    assert config.train.candidates == 2
    rows = [_row("o", 0, 0.6, 9000, 2), {**_row("o", 0, 0.8, 12000, 2), "candidates": 2}]
    one, two = bench.summarise(rows, {"f": 1.0})
    assert (one["candidates"], one["gain_mean"]) == (1, pytest.approx(0.4))
    assert (two["candidates"], two["gain_mean"]) == (2, pytest.approx(0.6))
    assert "candidates 2" in bench._summary_line(two)


def test_candidates_out_of_range_are_a_usage_error(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--candidates", "9"])
    assert exc.value.code == 2 and "--candidates takes 1 to 8" in capsys.readouterr().err
