"""The events a night emits through `NightDeps.on_event`: its stages in order, one RolloutDone per
rollout it ran, what it staged and adopted, a resumed night and a refused adopt. Driven like
tests/test_night_engine.py: `run_night` with the scripted backend and the chat harness."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.night.deps import NightModels
from skillsleep.core.night.record import NightRecord
from skillsleep.core.shared.errors import BackendUnavailable
from skillsleep.core.shared.events import (
    Adopted,
    AdoptRefused,
    Event,
    NightPlanned,
    NightResumed,
    ProposalPending,
    ProposalStaged,
    ReportWritten,
    RolloutDone,
)
from skillsleep.core.shared.records import Run, Task
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.harnesses.chat import ChatHarness
from tests.test_night_engine import LIVE, live_file, managed, night, plan_of, root, settings

__all__ = ["root"]  # the fixture, shared with test_night_engine

NIGHT_STAGES = [
    "mining",
    "asking_relevance",
    "writing_judges",
    "dreaming",
    "night_planned",
    "seed_scoring",
    "step_started",
    "gate_decided",
    "epoch_end",
    "final_scoring",
    "report_written",
    "proposal_staged",
    "adopted",
]


def kinds(events: list[Event]) -> list[str]:
    """The kinds in order, each run of one kind counted once."""
    return [kind for kind, _ in itertools.groupby(e.kind for e in events)]


def in_order(wanted: list[str], got: list[str]) -> bool:
    """Whether `wanted` occurs in `got` in this order (other kinds between them allowed)."""
    rest = iter(got)
    return all(kind in rest for kind in wanted)


def test_a_night_emits_its_stages_in_order_and_one_event_per_rollout(root: Path) -> None:
    events: list[Event] = []
    skill = live_file(root)
    result = night(root, settings(root, auto_adopt=True), skill, on_event=events.append)
    assert result.outcome == "accepted" and result.adopted
    assert in_order(NIGHT_STAGES, kinds(events)), kinds(events)
    assert kinds(events)[0] == "mining" and kinds(events)[-1] == "adopted"
    folder = root / "data" / "nights" / "0001"
    rollouts = [e for e in events if isinstance(e, RolloutDone)]
    assert len(rollouts) == len((folder / "rollouts.jsonl").read_text().splitlines()) > 0
    plan = plan_of(root)
    planned = next(e for e in events if isinstance(e, NightPlanned))
    split = plan.tasks()
    assert (planned.night, planned.val, planned.test) == (1, len(split["val"]), len(split["test"]))
    assert (planned.train, planned.dreamed, planned.harness) == (
        len(split["train"]),
        len(plan.dreams),
        "chat (scripted)",
    )
    assert next(e for e in events if isinstance(e, ReportWritten)) == ReportWritten(
        folder=str(folder), outcome="accepted"
    )
    staged = next(e for e in events if isinstance(e, ProposalStaged))
    assert staged.proposal == result.proposal and staged.accepted
    assert next(e for e in events if isinstance(e, Adopted)) == Adopted(proposal=staged.proposal, path=str(skill.path))


def test_the_managed_skill_is_not_asked_about_relevance_and_a_dry_run_stages_nothing(root: Path) -> None:
    events: list[Event] = []
    night(root, settings(root), managed(root), dry_run=True, on_event=events.append)
    assert "asking_relevance" not in kinds(events)
    assert kinds(events)[-1] == "report_written"  # nothing staged, nothing adopted


def test_a_pending_proposal_learned_again_is_reported_as_pending(root: Path) -> None:
    skill = live_file(root)
    first = night(root, settings(root), skill)
    events: list[Event] = []
    night(root, settings(root), skill, on_event=events.append)
    assert ProposalPending(proposal=first.proposal or "") in events
    assert not [e for e in events if isinstance(e, ProposalStaged)]


def test_a_resumed_night_says_so_before_anything_else(root: Path) -> None:
    skill = live_file(root)
    with pytest.raises(KeyboardInterrupt):
        night(root, settings(root), skill, interrupt_after=3)
    events: list[Event] = []
    night(root, settings(root), skill, on_event=events.append)
    assert events[0] == NightResumed(night=1, skill="release", stopped="the night was interrupted")
    assert "mining" not in kinds(events)  # the plan is kept, not made again


class Unreachable:
    """The chat harness, but the model server is gone from the `after`-th run on."""

    name = "chat"

    def __init__(self, inner: ChatHarness, after: int) -> None:
        self.inner, self.left = inner, after

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run:
        self.left -= 1
        if self.left < 0:
            raise BackendUnavailable("cannot reach the model server at http://127.0.0.1:9")
        return await self.inner.run(task, skill, sample=sample, timeout_s=timeout_s)


def test_a_night_resumed_after_a_backend_error_names_that_error_and_the_skill_by_its_name(root: Path) -> None:
    skill = live_file(root)

    def unreachable(models: NightModels) -> HarnessChoice:
        harness = Unreachable(ChatHarness(models.target, log_dir=root / "chat-replays"), 3)
        return HarnessChoice(harness=harness, label="chat (scripted)", timeout_s=30.0)

    stopped = night(root, settings(root), skill, open_harness=unreachable)
    assert stopped.outcome == "stopped-early" and stopped.stop is not None and stopped.stop.kind == "backend"
    events: list[Event] = []
    night(root, settings(root), skill, on_event=events.append)
    why = "backend: cannot reach the model server at http://127.0.0.1:9"
    assert events[0] == NightResumed(night=1, skill="release", stopped=why)
    assert events[0].describe() == f"resuming night 1 of release (stopped: {why})"


def test_an_adopt_refused_is_an_event_and_no_adopted_one(root: Path) -> None:
    skill = live_file(root)

    def edit_live_file(record: NightRecord) -> NightRecord:
        skill.path.write_text(LIVE + "- My own edit.\n")
        return record

    events: list[Event] = []
    result = night(root, settings(root, auto_adopt=True), skill, on_start=edit_live_file, on_event=events.append)
    refused = [e for e in events if isinstance(e, AdoptRefused)]
    assert len(refused) == 1 and refused[0].proposal == result.proposal and "changed since" in refused[0].error
    assert not [e for e in events if isinstance(e, Adopted)]


def test_a_second_night_tells_its_steps_in_nights_not_epochs(root: Path) -> None:
    skill = live_file(root)
    night(root, settings(root), skill)
    events: list[Event] = []
    night(root, settings(root), skill, on_event=events.append)
    lines = [e.describe() for e in events if e.kind in ("step_started", "gate_decided", "epoch_end")]
    assert lines and not [line for line in lines if "epoch" in line], lines
    assert any(line.startswith("night 2, step 1/") for line in lines), lines
    assert "night 2: end of the night (slow update, meta skill)" in lines
