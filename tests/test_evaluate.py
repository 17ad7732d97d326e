"""The evaluator when rollouts fail: one systemic failure ends the call and stops the others."""

from __future__ import annotations

import asyncio
import gc

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.errors import BackendError
from skillsleep.core.shared.records import Run, Task
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import GateConfig


class DyingServer:
    """A harness whose model server is gone: the first task fails at once, the others a moment later."""

    name = "dying"

    def __init__(self) -> None:
        self.finished: list[str] = []

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run:
        if task.id != "t0":
            # long enough that a busy machine cannot finish them before t0's failure stops them
            await asyncio.sleep(1.0)
            self.finished.append(task.id)
        raise BackendError(f"the model server is gone ({task.id})")


def test_a_failed_rollout_stops_the_others_instead_of_leaving_them_to_fail_unseen(
    caplog: pytest.LogCaptureFixture,
) -> None:
    harness = DyingServer()
    evaluator = Evaluator(harness, judge_llm=None, gate=GateConfig())
    tasks = [Task(id=f"t{i}", prompt="p", split="val") for i in range(4)]

    async def command() -> None:
        with pytest.raises(BackendError, match=r"gone \(t0\)"):
            await evaluator.rollouts(Skill("# S\n"), tasks)
        await asyncio.sleep(1.2)  # what a command does next: close its clients, write its files

    asyncio.run(command())
    gc.collect()  # an exception nobody retrieved is logged when its task is collected
    assert harness.finished == []  # the other rollouts were stopped, not left running
    assert not [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
