"""Once every held-out task has the top score, no candidate could pass the gate: the trainer skips
the steps left (and a night whose live skill is there already trains nothing) instead of paying for
candidates the gate must refuse."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.events import Event, Saturated
from skillsleep.core.shared.records import CompletionRequest, GateDecision
from skillsleep.core.train.gate import GateConfig, decide, saturated
from skillsleep.core.train.state import TrainState
from skillsleep.harnesses.skills import SkillTarget
from tests.sleep_kit import RULE as NIGHT_RULE
from tests.sleep_kit import Recorder, optimizer_rules
from tests.test_night_engine import (
    LIVE,
    live_file,
    night,
    root,  # noqa: F401  (a fixture: pytest finds it by name)
    settings,
)
from tests.test_trainer import BAD, RULE, SEED, UNSOLVED, Optimizer, build, target, write_config


def solves_all(request: CompletionRequest) -> str:
    """The trainer tests' target, which also gives the held-out task UNSOLVED its own reference answer."""
    a, b = map(int, re.findall(r"(\d+)\+(\d+)", request.messages[-1].content)[0])
    reply = target(request)
    return reply.replace(f"ANSWER: {a + b}", f"ANSWER: {a + b + 1}") if a == UNSOLVED else reply


def test_only_a_top_score_under_a_gate_that_is_on_is_saturated() -> None:
    assert saturated(GateConfig(), 1.0) and saturated(GateConfig(min_wins=2, no_regress=True), 1.0 - 1e-12)
    assert not saturated(GateConfig(), 0.999)
    assert not saturated(GateConfig(enabled=False), 1.0)  # greedy: every candidate is taken anyway
    # what it stands for: at the top, not even a candidate at the top passes (ties are rejected)
    top = {"a": 1.0, "b": 1.0}
    decision: GateDecision = decide(GateConfig(), top, top, baseline_hash="x", candidate_hash="y")
    assert not decision.accepted


async def test_once_a_step_puts_every_held_out_task_at_the_top_the_steps_left_are_skipped(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)  # 2 epochs × 2 steps
    opt = Optimizer()  # the good rule first, the harmful one after
    trainer, tb, _ = build(cfg, tmp_path, opt, target_fn=solves_all)
    events: list[Event] = []
    trainer.on_event = events.append
    st = await trainer.run()
    assert st.done and st.stopped is None and (st.seed_score, st.best_score, st.current_score) == (0.0, 1.0, 1.0)
    assert len(st.steps) == 1 and st.steps[0].gate and st.steps[0].gate.accepted and st.skipped == 3
    assert RULE in st.best and not any(BAD in p for p in opt.prompts)  # the harmful edit was never proposed
    assert not st.rejected  # and nothing was remembered as rejected for want of room to rise
    kinds = [e.kind for e in events]
    assert kinds.count("step_started") == 1 and kinds.count("epoch_end") == 1  # the epoch under way still ends
    assert kinds.index("saturated") < kinds.index("epoch_end")
    [told] = [e for e in events if isinstance(e, Saturated)]
    assert told == Saturated(score=1.0, tasks=4, skipped=3)
    assert told.describe() == (
        "every held-out task already has the top score (1.000 on 4): no candidate could score higher, "
        "so the remaining 3 step(s) are skipped"
    )
    assert [e.slow_update is not None for e in st.epochs] == [True]  # the slow update (ties pass) still ran
    saved = trainer.run_dir.load("state.json", TrainState)
    assert saved is not None and saved.done and saved.skipped == 3 and saved.epoch == cfg.train.epochs
    calls = len(tb.requests)
    again = await trainer.run(saved)  # a finished, saturated run resumed: nothing more is asked
    assert again.done and again.skipped == 3 and len(tb.requests) == calls


async def test_a_seed_already_at_the_top_trains_nothing_and_asks_the_optimizer_nothing(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    trainer, tb, ob = build(cfg, tmp_path, Optimizer(), target_fn=solves_all)
    trainer.seed_skill = Skill.parse(SEED + f"- {RULE}\n")
    events: list[Event] = []
    trainer.on_event = events.append
    st = await trainer.run()
    assert st.done and st.seed_score == 1.0 and st.steps == [] and st.epochs == [] and st.skipped == 4
    assert ob.requests == []  # no reflection, no slow update, no meta skill: nothing happened to note
    assert len(tb.requests) == 4  # the seed's score on the 4 held-out tasks, no more
    assert [e.kind for e in events if e.kind != "rollout_done"] == ["plan", "seed_scoring", "saturated"]


async def test_with_the_gate_off_every_step_runs(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "[gate]\nenabled = false\n")
    trainer, _, _ = build(cfg, tmp_path, Optimizer(), target_fn=solves_all)
    st = await trainer.run()
    assert st.done and len(st.steps) == 4 and st.skipped == 0


def test_a_night_whose_live_skill_is_at_the_top_trains_nothing_and_says_so(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (root / "opt.json").write_text(json.dumps(optimizer_rules()))
    skill: SkillTarget = live_file(root, LIVE + f"- {NIGHT_RULE}\n")  # the target passes every task with it
    rec = Recorder(monkeypatch)
    result = night(root, settings(root), skill)
    assert result.outcome == "no-candidate" and result.gate is None
    assert result.reason == (
        "the live skill already has the top score on every held-out task (2): no candidate could score higher, "
        "so nothing was trained"
    )
    assert "reflect" not in rec.roles() and "slow_update" not in rec.roles() and "meta" not in rec.roles()
    assert skill.path.read_text() == LIVE + f"- {NIGHT_RULE}\n"
