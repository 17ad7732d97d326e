"""Several candidates per step (`[train] candidates`), on a scripted optimizer and target: each
distinct candidate is gated, the best that passes is kept, and no rollout is paid twice."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.document.skill_lines import repeated
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.events import CandidateChosen, Event, GateDecided, GateStarted, StepAt
from skillsleep.core.shared.records import Check, CompletionRequest, Edit, Judge, Task
from skillsleep.core.train.candidates import edit_sets
from skillsleep.core.train.config import load_config
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import GateConfig
from skillsleep.core.train.state import config_hash
from skillsleep.core.train.trainer import Trainer
from skillsleep.harnesses.chat import ChatHarness

GOOD = "End every reply with a final line `ANSWER: <answer>`."
HALF = "For even first numbers, end with a final line `ANSWER: <answer>`."
BAD = "Reply in French only."
QUOTED = "End every reply with a line starting with `ANSWER:`."  # the quoted-literal candidate
SEED = "# Sums\n\n- Read the question.\n"
QUOTING = SEED + "- " + QUOTED + "\n"  # the skill already quotes it: no quoted-literal candidate
VAL = 4  # selection tasks
BATCH = 3  # train tasks, one step


def tasks(unsolved: bool = False) -> list[Task]:
    """BATCH train tasks, VAL selection tasks; `unsolved`: one more selection task whose reference
    answer no reply gives, so that no skill leaves every held-out task at the top score (the trainer
    skips the steps left once one does)."""
    judge = Judge(checks=[Check(type="last_line_regex", value=r"ANSWER: .+")], answer_pattern=r"ANSWER:\s*(.+)$")
    return [
        Task(id=f"t{i}", prompt=f"What is {i}+{i + 3}?",
             judge=judge.model_copy(update={"answer": str(2 * i + 3 + (i == BATCH + VAL))}),
             split="train" if i < BATCH else "val")
        for i in range(BATCH + VAL + unsolved)
    ]  # fmt: skip


def target(request: CompletionRequest, *, follows: tuple[str, ...] = (), zero_passes: bool = False) -> str:
    """Follows GOOD (HALF on even numbers) and each of `follows` (the quoted literals, a worked
    example); `zero_passes`: the task 0+3 passes whatever the skill."""
    system = request.messages[0].content if request.messages[0].role == "system" else ""
    a, b = map(int, re.findall(r"(\d+)\+(\d+)", request.messages[-1].content)[0])
    if BAD in system:
        return "Bonjour."
    if (
        GOOD in system
        or (HALF in system and a % 2 == 0)
        or any(f in system for f in follows)
        or (zero_passes and a == 0)
    ):
        return f"{a} plus {b}.\nANSWER: {a + b}"
    return f"The sum is {a + b}."


def optimizer(findings: list[str], order: list[int], example: str = "") -> Callable[[CompletionRequest], str]:
    """Reflects `findings` (added lines; a '~' prefix makes an execution-lapse note), ranks them `order`,
    writes `example` when asked for an example reply."""

    def answer(request: CompletionRequest) -> str:
        required = (request.json_schema or {}).get("required", [])
        if required == ["reply"]:
            return json.dumps({"reply": example})
        if required == ["findings"]:
            out = [
                {"kind": "execution_lapse" if f.startswith("~") else "skill_defect", "diagnosis": "d", "op": "add",
                 "target": "", "content": f.lstrip("~")}
                for f in findings
            ]  # fmt: skip
            return json.dumps({"findings": out})
        if required == ["groups"]:
            return json.dumps({"groups": []})
        if required == ["guidance"]:
            return json.dumps({"guidance": ["- end every reply with a final line `ANSWER: <answer>`", "Stay calm."]})
        if required == ["notes"]:
            return json.dumps({"notes": []})
        return json.dumps({"order": order})

    return answer


def train(
    tmp_path: Path,
    findings: list[str],
    order: list[int],
    *,
    n: int,
    max_edits: int = 1,
    steps: int = 1,
    slow: bool = False,
    seed: str = SEED,
    follows: tuple[str, ...] = (),
    zero_passes: bool = False,
    example: str = "",
    fallback: bool = False,
    unsolved: bool = False,
) -> tuple[Trainer, ScriptedBackend, ScriptedBackend, list[Event]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "tasks.jsonl").write_text("\n".join(t.model_dump_json() for t in tasks(unsolved)) + "\n")
    (tmp_path / "SKILL.md").write_text(seed)
    (tmp_path / "run.toml").write_text(
        '[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n[run]\nname = "t"\nout_dir = "runs"\n'
        f"[train]\nepochs = 1\nsteps_per_epoch = {steps}\nbatch_size = {BATCH}\nminibatch_size = {BATCH}\ncandidates = {n}\n"
        f"fallback = {str(fallback).lower()}\n"
        f'[lr]\nschedule = "constant"\nmax_edits = {max_edits}\nmin_edits = 1\n'
        f"[slow_update]\nenabled = {str(slow).lower()}\n[meta]\nenabled = false\n"
    )
    cfg = load_config(tmp_path / "run.toml")
    ledger = Ledger()
    tb = ScriptedBackend(BackendSettings(model="target"), partial(target, follows=follows, zero_passes=zero_passes))
    ob = ScriptedBackend(BackendSettings(model="opt"), optimizer(findings, order, example))
    run_dir = RunDir(tmp_path / "runs" / "t")
    ev = Evaluator(
        ChatHarness(LLM(tb, ledger=ledger)), judge_llm=None, gate=GateConfig(), log_path=run_dir.rollouts_path
    )
    split = {s: [t for t in tasks(unsolved) if t.split == s] for s in ("train", "val")}
    events: list[Event] = []
    trainer = Trainer(
        cfg, splits=split, seed_skill=Skill.parse(seed), evaluator=ev, optimizer=LLM(ob, ledger=ledger),
        run_dir=run_dir, on_event=events.append,
    )  # fmt: skip
    return trainer, tb, ob, events


async def test_two_candidates_are_both_gated_and_the_better_one_is_kept(tmp_path: Path) -> None:
    trainer, _tb, ob, events = train(tmp_path, [HALF, GOOD], [1, 2], n=2, steps=2, follows=(QUOTED,), unsolved=True)
    st = await trainer.run()
    step = st.steps[0]
    assert step.candidates == 2 and step.chosen == 2
    assert step.strategies == {1: "optimizer", 2: "quoted literals"} and step.strategy == "quoted literals"
    assert {n: (d.accepted, d.candidate) for n, d in step.candidate_gates.items()} == {1: (True, 0.4), 2: (True, 0.8)}
    assert step.gate == step.candidate_gates[2] and [e.content for e in step.applied] == [QUOTED]
    assert QUOTED in st.current and HALF not in st.current and st.current_score == 0.8
    assert (tmp_path / "runs/t/candidates/e0s0c1.md").read_text().count(HALF) == 1
    first = [e for e in events if getattr(e, "at", StepAt(epoch=0, epochs=1, step=1, steps=2)).step == 0]
    assert [(e.candidate, e.candidates) for e in first if isinstance(e, GateStarted)] == [(1, 2), (2, 2)]
    assert [e.describe().split(": ", 1)[1] for e in first if isinstance(e, GateDecided)] == [
        "candidate 1/2 accepted: improved 0.000 → 0.400",
        "candidate 2/2 accepted: improved 0.000 → 0.800",
    ]
    chosen = [e for e in first if isinstance(e, CandidateChosen)]
    assert chosen == [
        CandidateChosen(
            at=StepAt(epoch=0, epochs=1, step=0, steps=2), built=2, gated=2, chosen=2, strategy="quoted literals"
        )
    ]
    assert chosen[0].describe().endswith("kept candidate 2 (quoted literals)")
    assert not [r for r in st.rejected if r.step == 0]  # a candidate that passed but was not kept is not rejected
    second_reflection = [r.messages[-1].content for r in ob.requests if "findings" in str(r.json_schema)][-1]
    assert "step 1: candidate 1/2 (optimizer) passed, not kept (0.000 → 0.400)" in second_reflection
    assert "step 1: candidate 2/2 (quoted literals) accepted (0.000 → 0.800)" in second_reflection


async def test_the_next_ranked_edit_gets_a_turn_when_the_clip_fails(tmp_path: Path) -> None:
    # the skill quotes the literal already and no example comes back: candidate 2 is the next ranked edit
    trainer, _, _, _ = train(tmp_path, [BAD, GOOD], [1, 2], n=2, seed=QUOTING)
    st = await trainer.run()
    assert st.steps[0].chosen == 2 and GOOD in st.current and BAD not in st.current
    assert st.steps[0].strategies == {1: "optimizer", 2: "optimizer"}
    assert [r.edit.content for r in st.rejected] == [BAD]  # remembered for the next reflection


async def test_with_one_candidate_the_step_is_as_before(tmp_path: Path) -> None:
    trainer, _, _, events = train(tmp_path, [BAD, GOOD], [1, 2], n=1)
    st = await trainer.run()
    step = st.steps[0]
    assert step.candidates == 1 and step.chosen is None and step.candidate_gates == {}
    assert step.gate is not None and not step.gate.accepted and st.current == SEED
    assert not any(isinstance(e, CandidateChosen) for e in events)
    assert [e.describe() for e in events if isinstance(e, GateDecided)] == [
        "epoch 1/1 step 1/1: rejected: no improvement: 0.000 equals the current 0.000 (ties are rejected)"
    ]


async def test_equal_scores_keep_the_first_candidate(tmp_path: Path) -> None:
    other = "Always finish with the line `ANSWER: <answer>` too. " + GOOD
    trainer, _, _, _ = train(tmp_path, [GOOD, other], [1, 2], n=2, follows=(QUOTED,))
    st = await trainer.run()
    assert {n: d.candidate for n, d in st.steps[0].candidate_gates.items()} == {1: 1.0, 2: 1.0}
    assert st.steps[0].chosen == 1 and st.steps[0].strategy == "optimizer" and QUOTED not in st.current


def rollouts_of(tb: ScriptedBackend) -> int:
    return len(tb.requests)


async def test_a_candidate_identical_to_the_current_skill_costs_no_rollout(tmp_path: Path) -> None:
    # candidate 2 adds a line the skill has: refused, so it is the current skill and is never scored
    trainer, tb, _, events = train(tmp_path, [GOOD, "read the question"], [1, 2], n=2, seed=QUOTING)
    st = await trainer.run()
    assert rollouts_of(tb) == VAL + BATCH + VAL  # seed, batch, candidate 1: nothing for candidate 2
    assert st.steps[0].candidates == 2 and list(st.steps[0].candidate_gates) == [1]
    assert [e.candidate for e in events if isinstance(e, GateStarted)] == [1]
    assert any("already has this line" in r.reason for r in st.steps[0].skipped)


async def test_identical_candidates_are_gated_once(tmp_path: Path) -> None:
    # the clip {GOOD, a line the skill has} and {GOOD} alone make the same skill
    trainer, tb, _, events = train(tmp_path, [GOOD, "- Read the question."], [1, 2], n=3, max_edits=2, seed=QUOTING)
    st = await trainer.run()
    assert rollouts_of(tb) == VAL + BATCH + VAL
    assert st.steps[0].candidates == 3 and list(st.steps[0].candidate_gates) == [1]
    assert next(e for e in events if isinstance(e, CandidateChosen)).gated == 1


async def test_extra_candidates_cost_at_most_the_example_call(tmp_path: Path) -> None:
    calls = {}
    for n in (1, 2, 3):
        trainer, _, ob, _ = train(tmp_path / str(n), [HALF, GOOD], [1, 2], n=n)
        await trainer.run()
        calls[n] = [str((r.json_schema or {}).get("required")) for r in ob.requests]
    assert calls[1] == calls[2] == ["['findings']", "['groups']", "['order']"]  # reflect, merge, rank
    assert calls[3] == [*calls[1], "['reply']"]  # no reply of the batch passed: the worked example is asked


async def test_the_trained_skill_never_says_a_line_twice(tmp_path: Path) -> None:
    findings = [GOOD, "~" + GOOD, "- end every reply with a final line `answer: <answer>`", "~Read the question"]
    trainer, _, _, _ = train(tmp_path, findings, [1, 2, 3, 4], n=4, max_edits=4, slow=True)
    st = await trainer.run()
    final = Skill(st.current)
    assert GOOD in final.body and final.region("appendix") == ""
    assert final.region("slow-update") == "- Stay calm."  # the guidance line the body states is left out
    assert not repeated(st.current.split("\n"))


def test_edit_sets_are_the_clip_then_each_ranked_edit_alone() -> None:
    a, b, c = (Edit(op="add", content=x) for x in "abc")
    assert edit_sets([a, b, c], [a, b], 4) == [[a, b], [a], [b], [c]]
    assert edit_sets([a, b, c], [a], 3) == [[a], [b], [c]]
    assert edit_sets([a], [a], 3) == [[a]]


@pytest.mark.parametrize("n", [0, 9])
def test_candidates_outside_1_to_8_is_a_config_error(tmp_path: Path, n: int) -> None:
    train(tmp_path, [], [], n=1)
    with pytest.raises(ConfigError, match=r"train\.candidates|candidates"):
        load_config(tmp_path / "run.toml", [f"train.candidates={n}"])


def test_one_candidate_keeps_the_config_hash_of_earlier_runs_so_they_resume(tmp_path: Path) -> None:
    train(tmp_path, [], [], n=1)
    one, two = load_config(tmp_path / "run.toml"), load_config(tmp_path / "run.toml", ["train.candidates=2"])
    # as saved before (the prices are left out since the built-in ones grew: they shape nothing)
    # (nor the keys added since, at their defaults: [train] context_chars, [edits] edit_frontmatter)
    exclude = {"budget": True, "prices": True, "train": {"candidates", "context_chars"}, "edits": {"edit_frontmatter"}}
    before = one.model_dump(mode="json", exclude=exclude)
    for role in ("target", "optimizer", "judge"):
        for k in ("retry", "timeout_s"):
            del before[role][k]
    assert (
        config_hash(one)
        == hashlib.sha256(json.dumps(before, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()[:16]
    )
    assert config_hash(two) != config_hash(one)
