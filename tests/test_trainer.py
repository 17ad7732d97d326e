"""The training loop end to end on a scripted world: gate decisions, buffer, resume, budget."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Budget, Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.models.store import Store
from skillsleep.core.shared.errors import BackendError, BudgetExceeded
from skillsleep.core.shared.events import Event, GateDecided, StepStarted
from skillsleep.core.shared.records import Check, CompletionRequest, Judge, Task
from skillsleep.core.train.config import TrainConfig, load_config
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import GateConfig
from skillsleep.core.train.run import SplitScores, score_test
from skillsleep.core.train.state import TrainState
from skillsleep.core.train.trainer import Trainer
from skillsleep.harnesses.chat import ChatHarness

RULE = "End every reply with a final line `ANSWER: <answer>`."
BAD = "Reply in French only."
SEED = "---\nname: sums\ndescription: add numbers\n---\n# Sums\n\n- Read the question.\n"


UNSOLVED = 9  # a held-out task whose reference answer no reply gives: the selection score tops out
# at 0.75, so a good rule never leaves every held-out task at the top (the trainer would skip the rest)


def make_tasks() -> list[Task]:
    judge = Judge(
        checks=[Check(type="last_line_regex", value=r"ANSWER: .+")],
        answer_pattern=r"ANSWER:\s*(.+)$",
        answer_match="number",
    )
    tasks = []
    for i in range(12):
        split = "train" if i < 6 else "val" if i < 10 else "test"
        tasks.append(
            Task(
                id=f"t{i}",
                prompt=f"What is {i}+{i + 3}?",
                judge=judge.model_copy(update={"answer": str(2 * i + 3 + (i == UNSOLVED))}),
                split=split,
            )
        )
    return tasks


def target(request: CompletionRequest) -> str:
    system = request.messages[0].content if request.messages[0].role == "system" else ""
    a, b = map(int, re.findall(r"(\d+)\+(\d+)", request.messages[-1].content)[0])
    if BAD in system:
        return "Bonjour."
    if "ANSWER:" in system:
        return f"{a} plus {b}.\nANSWER: {a + b}"
    return f"The sum is {a + b}."


class Optimizer:
    """Proposes the good rule first, then a harmful one; records every prompt it saw."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, request: CompletionRequest) -> str:
        text = "\n".join(m.content for m in request.messages)
        self.prompts.append(text)
        required = (request.json_schema or {}).get("required", [])
        if required == ["findings"]:
            content = BAD if RULE in text else RULE
            return json.dumps(
                {
                    "findings": [
                        {"kind": "skill_defect", "diagnosis": "d", "op": "add", "target": "", "content": content}
                    ]
                }
            )
        if required == ["groups"]:
            return json.dumps({"groups": []})
        if "order" in required:
            return json.dumps({"order": [1], "next_budget": 2})
        if required == ["guidance"]:
            return json.dumps({"guidance": ["Keep the final ANSWER line."]})
        if required == ["notes"]:
            return json.dumps({"notes": ["Format rules moved the score."]})
        raise BackendError(f"unexpected request {required}")


def write_config(tmp_path: Path, extra: str = "") -> TrainConfig:
    (tmp_path / "tasks.jsonl").write_text("\n".join(t.model_dump_json() for t in make_tasks()) + "\n")
    (tmp_path / "SKILL.md").write_text(SEED)
    (tmp_path / "run.toml").write_text(
        '[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'
        '[run]\nname = "t"\nout_dir = "runs"\n'
        '[target]\nbackend = "scripted:target"\n[optimizer]\nbackend = "scripted:opt"\n'
        "[train]\nepochs = 2\nbatch_size = 3\nminibatch_size = 3\n"
        '[lr]\nschedule = "constant"\nmax_edits = 1\nmin_edits = 1\n' + extra
    )
    return load_config(tmp_path / "run.toml")


def build(
    cfg: TrainConfig, tmp_path: Path, opt: Optimizer, *, ledger: Ledger | None = None, target_fn=target
) -> tuple[Trainer, ScriptedBackend, ScriptedBackend]:  # type: ignore[no-untyped-def]
    ledger = ledger or Ledger()
    store = Store(tmp_path / "state.db")
    tb = ScriptedBackend(BackendSettings(model="target"), target_fn)
    ob = ScriptedBackend(BackendSettings(model="opt"), opt)
    run_dir = RunDir(tmp_path / "runs" / "t")
    ev = Evaluator(
        ChatHarness(LLM(tb, ledger=ledger, store=store, max_tokens=64)),
        judge_llm=None,
        gate=GateConfig(),
        log_path=run_dir.rollouts_path,
    )
    splits: dict[str, list[Task]] = {}
    for t in make_tasks():
        splits.setdefault(t.split or "train", []).append(t)
    trainer = Trainer(
        cfg,
        splits=splits,
        seed_skill=Skill.parse(SEED),
        evaluator=ev,
        optimizer=LLM(ob, ledger=ledger, store=store),
        run_dir=run_dir,
    )
    return trainer, tb, ob


async def test_training_accepts_the_rule_and_rejects_the_harmful_edit(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    opt = Optimizer()
    trainer, _, _ = build(cfg, tmp_path, opt)
    st = await trainer.run()
    assert st.done and st.seed_score == 0.0 and st.best_score == 0.75
    decisions = [s.gate for s in st.steps if s.gate]
    assert decisions[0] is not None and decisions[0].accepted
    assert any(d is not None and not d.accepted for d in decisions)
    for d in decisions:  # every recorded decision matches its recorded scores
        assert d is not None and d.accepted == (d.candidate > d.baseline)
    best = (tmp_path / "runs/t/best_skill.md").read_text()
    assert RULE in best and BAD not in best
    assert best.startswith("---\nname: sums\n")  # frontmatter kept
    # the rejected edit, with its score before → after, reached a later reflection prompt
    assert st.rejected and st.rejected[0].edit.content == BAD
    later = [p for p in opt.prompts if "French" in p and "0.750" in p]
    assert later, "the rejected edit never reached a later prompt"
    scores, paired = await score_test(trainer, st)
    assert scores == SplitScores(seed=0.0, best=1.0, final=1.0)
    assert paired is not None and paired.a_mean == 0.0 and paired.b_mean == 1.0  # best (B) against seed (A)
    assert paired.wins == paired.n_tasks and paired.seed == cfg.run.seed


async def test_slow_update_guidance_lands_in_the_protected_region(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    trainer, _, _ = build(cfg, tmp_path, Optimizer())
    st = await trainer.run()
    final = Skill(st.current)
    assert "Keep the final ANSWER line." in final.region("slow-update")
    assert "Format rules moved the score." in st.meta_skill
    assert "Format rules" not in st.current and "Format rules" not in st.best  # meta stays optimizer-side


async def test_nothing_is_evaluated_twice(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    trainer, tb, _ = build(cfg, tmp_path, Optimizer())
    await trainer.run()
    keys = [(r.messages[0].content, r.messages[-1].content, r.sample) for r in tb.requests]
    assert len(keys) == len(set(keys))


async def test_resume_after_a_crash_redoes_no_finished_call(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    calls = {"n": 0}

    def flaky(request: CompletionRequest) -> str:
        calls["n"] += 1
        if calls["n"] == 20:
            raise BackendError("server went away")
        return target(request)

    trainer, tb1, _ob1 = build(cfg, tmp_path, Optimizer(), target_fn=flaky)
    with pytest.raises(BackendError):
        await trainer.run()
    saved = trainer.run_dir.load("state.json", TrainState)
    assert saved is not None and not saved.done
    first = {(r.messages[0].content, r.messages[-1].content) for r in tb1.requests[:19]}
    trainer2, tb2, _ = build(cfg, tmp_path, Optimizer())
    st = await trainer2.run(saved)
    assert st.done and st.best_score == 0.75
    again = {(r.messages[0].content, r.messages[-1].content) for r in tb2.requests}
    assert not (first & again), "a finished call was paid for again after resume"


async def test_budget_stops_cleanly_and_never_writes_an_unaccepted_best(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    ledger = Ledger(budget=Budget(tokens=15000))
    trainer, _, _ = build(cfg, tmp_path, Optimizer(), ledger=ledger)
    st = await trainer.run()
    assert 0 < len(st.steps) < 4
    assert st.stopped and st.stopped.startswith("budget") and not st.done
    best = tmp_path / "runs/t/best_skill.md"
    accepted = (
        {Skill.parse(SEED).text}
        | {
            (tmp_path / f"runs/t/candidates/e{s.epoch}s{s.step}.md").read_text()
            for s in st.steps
            if s.gate and s.gate.accepted
        }
        | {
            (tmp_path / f"runs/t/candidates/e{e.epoch}-slow-update.md").read_text()
            for e in st.epochs
            if e.slow_update_gate and e.slow_update_gate.accepted
        }
    )
    assert not best.exists() or best.read_text() in accepted
    assert ledger.spent_tokens <= 15000
    saved = trainer.run_dir.load("state.json", TrainState)
    assert saved is not None and saved.stopped == st.stopped and saved.step == st.step


async def test_budget_hit_while_scoring_the_seed_raises_and_writes_no_best(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    trainer, tb, _ = build(cfg, tmp_path, Optimizer(), ledger=Ledger(budget=Budget(tokens=50)))
    with pytest.raises(BudgetExceeded, match="raise --budget-tokens"):
        await trainer.run()
    assert tb.requests == [] and not (tmp_path / "runs/t/best_skill.md").exists()


async def test_plan_bounds_the_calls_actually_made(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    ledger = Ledger()
    trainer, _, _ = build(cfg, tmp_path, Optimizer(), ledger=ledger)
    messages: list[str] = []
    trainer.on_event = lambda event: messages.append(event.describe())
    st = await trainer.run()
    await score_test(trainer, st)
    plan = trainer.plan()
    assert plan["steps"] == 4 and ledger.calls_made <= plan["max_calls"]
    assert messages[0].startswith("plan: 2 epoch(s) × 2 step(s)")


async def test_training_emits_typed_events_in_order(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    trainer, _, _ = build(cfg, tmp_path, Optimizer())
    events: list[Event] = []
    trainer.on_event = events.append
    st = await trainer.run()
    kinds = [e.kind for e in events]
    assert kinds[:4] == ["plan", "seed_scoring", "step_started", "reflecting"]
    assert kinds.count("step_started") == len(st.steps)
    assert kinds.count("epoch_end") == cfg.train.epochs
    gates = [e for e in events if isinstance(e, GateDecided)]
    assert [g.accepted for g in gates] == [s.gate.accepted for s in st.steps if s.gate]
    assert gates[0].at.epoch == 0 and gates[0].at.epochs == cfg.train.epochs
    starts = [e for e in events if isinstance(e, StepStarted)]
    assert [(s.at.epoch, s.at.step) for s in starts] == [(s.epoch, s.step) for s in st.steps]
