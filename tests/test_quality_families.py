"""bench/quality.py's families of issue 27 without a model: each split is the one its seeded rule
draws, each judge scores a reply of the reference's shape 1 and a reply of the seed's kind 0 (both
written by hand), and the families kept for the end run only when named."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from bench_script import load_bench

from skillsleep.core.shared.records import Judge, Run
from skillsleep.core.train.checks import run_checks

# family: (what the reference states and the seed does not, a reply of the reference's shape,
# a reply as the seed skill gets them)
SHAPES = {
    "findings": (
        ["`Verdict: valid`", "`## Findings`"],
        "Verdict: invalid\n## Findings\n- Premise: no schoolmate of Sondra is a stepsister of Pricilla.\n"
        "- The conclusion swaps the two groups, which the premise does not allow.",
        "The argument is invalid. The premise says that no schoolmate of Sondra is a stepsister of "
        "Pricilla, but the conclusion does not follow from it.",
    ),
    "labels": (
        ["`Label: plausible`", "`Sport:`"],
        "Label: implausible\nSport: basketball",
        'No, the sentence "Elias Lindholm beat the buzzer." is not plausible: Elias Lindholm is an ice '
        "hockey player, and beating the buzzer belongs to basketball.",
    ),
    "brief": (
        ["exactly three sentences"],
        "Getting to know someone deeply starts with vulnerability. Share your fears and hopes and listen "
        "without judging! Over time you will trust each other more.",
        "Here are some ways to get to know someone on a deep level:\n\n1. Be vulnerable first.\n"
        "2. Ask open questions.\n3. Listen without judging.\n\nIn the end, trust takes time.",
    ),
    "sign-off": (
        ["`Ask your teacher if any step is unclear.`", "`\\boxed`"],
        "16 - 3 - 4 = 9 eggs are left to sell.\n9 x 2 = 18 dollars.\nJanet makes 18 dollars every day.\n"
        "Ask your teacher if any step is unclear.",
        "Step 1: 16 - 3 - 4 = 9 eggs.\nStep 2: 9 * 2 = 18.\nThe final answer is \\boxed{18} dollars.",
    ),
    "language": (
        ["in Spanish"],
        "Janet tiene 16 huevos cada día. Come 3 y usa 4 para los pasteles: 16 - 3 - 4 = 9 huevos.\n"
        "Vende los 9 huevos por 2 dólares: 9 × 2 = 18.\nJanet gana 18 dólares al día.",
        "Janet has 16 eggs each day. She eats 3 and bakes with 4: 16 - 3 - 4 = 9 eggs.\n"
        "She sells them for $2 each: 9 × 2 = 18.\nThe answer is 18 dollars.",
    ),
}
HELD_OUT = {"labels", "sign-off", "language"}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("quality")


def _hard(judge: Judge, reply: str) -> float:
    return float(all(result.passed for result in run_checks(judge, Run(response=reply))))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_judge_scores_the_reference_shape_1_and_a_seed_like_reply_0(bench: ModuleType, name: str) -> None:
    family = bench.load_family(name)
    judge = Judge.model_validate(family.judge)
    _, reference_reply, seed_reply = SHAPES[name]
    assert _hard(judge, reference_reply) == 1.0
    assert _hard(judge, seed_reply) == 0.0
    failed = [r for r in run_checks(judge, Run(response=seed_reply)) if not r.passed]
    assert failed and all(r.feedback for r in failed)  # plain words the optimizer can act on


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_reference_states_what_the_seed_lacks(bench: ModuleType, name: str) -> None:
    family = bench.load_family(name)
    seed, reference = family.seed_skill.read_text(), family.reference_skill.read_text()
    for literal in SHAPES[name][0]:
        assert literal in reference and literal not in seed


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_splits_are_the_ones_the_seeded_rule_draws(bench: ModuleType, name: str) -> None:
    family = bench.load_family(name)
    assert family.draw is not None and family.provenance.endswith("PROVENANCE.md")
    assert family.held_out == (name in HELD_OUT)
    if not bench.DATA.is_dir():
        pytest.skip("../shared/data/tasks is absent (CI provides it)")
    assert (bench.DATA / family.provenance).is_file()
    assert family.splits == bench.draw_splits(family)


def test_the_brief_draw_keeps_clear_of_structure_and_of_length_instructions(bench: ModuleType) -> None:
    if not bench.DATA.is_dir():
        pytest.skip("../shared/data/tasks is absent (CI provides it)")
    brief, structure = bench.load_family("brief"), bench.load_family("structure")
    keys = {k for ks in brief.splits.values() for k in ks}
    assert not keys & {k for ks in structure.splits.values() for k in ks}
    items = bench.read_items(brief)
    assert all(not re.match(r"(length_constraints|detectable_format)", i) for k in keys for i in items[k][2])


def test_the_gsm8k_format_reads_question_and_final_number(bench: ModuleType) -> None:
    if not bench.DATA.is_dir():
        pytest.skip("../shared/data/tasks is absent (CI provides it)")
    tasks = bench.build_tasks(bench.load_family("sign-off"))
    assert len(tasks) == 24 and all(t.prompt.strip() and "{input}" not in t.prompt for t in tasks)
    first = bench.read_items(bench.load_family("sign-off"))[0]
    assert first[0].startswith("Janet") and first[1] == "18"


def test_a_malformed_family_names_its_file_and_where_its_fields_are(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "family.json").write_text('{"about": "no source, no splits"}')
    monkeypatch.setattr(sys.modules["quality_families"], "FAMILIES", tmp_path)
    with pytest.raises(SystemExit) as exc:
        bench.load_family("broken")
    message = str(exc.value)
    assert str(tmp_path / "broken" / "family.json") in message and "source" in message
    assert "docs/benchmarks.md" in message


def test_a_split_key_the_source_lacks_is_named(bench: ModuleType) -> None:
    if not bench.DATA.is_dir():
        pytest.skip("../shared/data/tasks is absent (CI provides it)")
    family = bench.load_family("labels")
    family.splits["train"] = [*family.splits["train"][:-1], 100000]
    with pytest.raises(SystemExit) as exc:
        bench.build_tasks(family)
    assert "[100000] are not items of bbh/bbh/sports_understanding.json" in str(exc.value)


def test_held_out_families_run_only_when_named(bench: ModuleType) -> None:
    if not bench.DATA.is_dir():  # the bench's arguments are refused without its task data
        pytest.skip("../shared/data/tasks is absent (CI provides it)")
    default = bench._parse([]).families
    assert not HELD_OUT & set(default) and {"findings", "brief", "structure"} <= set(default)
    assert bench._parse(["--families", "all"]).families == bench.family_names()
    assert bench._parse(["--families", "labels"]).families == ["labels"]


def test_list_and_help_show_every_family_and_which_are_held_out(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    for flag in ("--list", "--help"):
        with pytest.raises(SystemExit) as exc:
            bench.main([flag])
        assert exc.value.code == 0
        lines = capsys.readouterr().out.splitlines()
        for name in bench.family_names():
            (line,) = [x for x in lines if x.startswith(f"{name} ")]
            assert ("held out" in line) == (name in HELD_OUT)
