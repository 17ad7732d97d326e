"""Rollout and scoring: run tasks through a harness, judge them, remember every result.

A rollout is identified by (skill hash, task id, sample index) and is computed at most once per
run: results are memoised in memory and appended to `rollouts.jsonl` in the run directory, so
a resumed run reuses them. All rollouts of one call run concurrently through the executor
(core/train/executor.py: in this process by default, or on a cluster); the backend's own limit caps
how many are in flight. Only a rollout not held here is handed to the executor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import append_line
from skillsleep.core.shared.events import EventSink, RolloutDone
from skillsleep.core.shared.jsonl import read_records
from skillsleep.core.shared.records import Rollout, Task
from skillsleep.core.train.executor import Executor, LocalExecutor
from skillsleep.core.train.gate import GateConfig
from skillsleep.core.train.harness import Harness
from skillsleep.core.train.judges import metric, score

Key = tuple[str, str, int]


class Evaluator:
    """Runs and scores tasks for skills, never twice for the same (skill, task, sample)."""

    def __init__(
        self,
        harness: Harness,
        *,
        judge_llm: LLM | None,
        gate: GateConfig,
        rollouts_k: int = 1,
        timeout_s: float = 600.0,
        log_path: Path | None = None,
        on_event: EventSink | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.harness = harness
        self.executor = executor or LocalExecutor()
        self.judge_llm = judge_llm
        self.gate = gate
        self.k = rollouts_k
        self.timeout_s = timeout_s
        self.log_path = log_path
        self.on_event = on_event  # hears a RolloutDone for each rollout run and scored
        self._memo: dict[Key, Rollout] = {}
        self._pending: dict[Key, asyncio.Task[Rollout]] = {}
        if log_path is not None:
            # a line that cannot be read (torn by a crash, damaged): that rollout is simply redone
            for r in read_records(log_path, Rollout)[0]:
                self._memo[(r.skill_hash, r.task_id, r.sample)] = r

    @property
    def computed(self) -> int:
        """Rollouts held (computed in this run or loaded on resume)."""
        return len(self._memo)

    async def rollout(self, skill: Skill, task: Task, sample: int = 0) -> Rollout:
        """One scored rollout, memoised; concurrent requests for the same key share one run."""
        key = (skill.hash, task.id, sample)
        if key in self._memo:
            return self._memo[key]
        if key not in self._pending:
            self._pending[key] = asyncio.ensure_future(self._compute(skill, task, sample))
        try:
            return await self._pending[key]
        finally:
            self._pending.pop(key, None)

    async def _compute(self, skill: Skill, task: Task, sample: int) -> Rollout:
        run = await self.executor.run(self.harness, task, skill, sample=sample, timeout_s=self.timeout_s)
        verdict = await score(task, run, llm=self.judge_llm)
        result = Rollout(task_id=task.id, skill_hash=skill.hash, sample=sample, run=run, score=verdict)
        self._memo[(skill.hash, task.id, sample)] = result
        if self.log_path is not None:
            append_line(self.log_path, result.model_dump_json())  # private (0600), one write
        if self.on_event is not None:
            self.on_event(
                RolloutDone(
                    task=task.id,
                    sample=sample,
                    skill_hash=skill.hash,
                    hard=verdict.hard,
                    soft=verdict.soft,
                    error=run.error or None,
                )
            )
        return result

    async def rollouts(self, skill: Skill, tasks: list[Task], k: int | None = None) -> list[Rollout]:
        """Every task × sample for a skill, concurrently, in task order."""
        k = self.k if k is None else k
        runs = [asyncio.ensure_future(self.rollout(skill, t, s)) for t in tasks for s in range(k)]
        try:
            return list(await asyncio.gather(*runs))
        except BaseException:
            # a failure here is systemic (the harness contract): stop the other rollouts now rather
            # than leave them running, to fail later where no one sees their errors
            for run in runs:
                run.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
            raise

    def value(self, r: Rollout) -> float:
        return metric(r.score, self.gate.metric, self.gate.mixed_weight)

    async def sample_scores(self, skill: Skill, tasks: list[Task]) -> dict[str, list[float]]:
        """Per-task scores of a skill's K samples, by the gate metric, in task order."""
        by_task: dict[str, list[float]] = {}
        for r in await self.rollouts(skill, tasks):
            by_task.setdefault(r.task_id, []).append(self.value(r))
        return by_task

    def held(self, skill_hash: str, task_ids: list[str]) -> dict[str, list[float]] | None:
        """Each task's K sample scores (by the gate metric) of the skill with hash `skill_hash`, from the
        rollouts already held (none is run); None when one of them is not held."""
        out: dict[str, list[float]] = {}
        for t in task_ids:
            held = [self._memo.get((skill_hash, t, s)) for s in range(self.k)]
            if any(r is None for r in held):
                return None
            out[t] = [self.value(r) for r in held if r is not None]
        return out

    async def task_scores(self, skill: Skill, tasks: list[Task]) -> dict[str, float]:
        """Per-task score of a skill (mean over the K samples, by the gate metric)."""
        return {t: sum(v) / len(v) for t, v in (await self.sample_scores(skill, tasks)).items()}
