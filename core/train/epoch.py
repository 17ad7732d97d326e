"""The epoch boundary: the slow update (previous vs current skill on the same tasks → guidance
in the protected region, gated so it cannot lower the score) and the meta skill (optimizer
memory carried to the next epoch, never written into the deployed skill). The trainer hands in
what it works with as a `Boundary`; what the epoch's end did is an `EpochRecord` in the state."""

from __future__ import annotations

import random
from dataclasses import dataclass

from skillsleep.core.document.skill import Skill
from skillsleep.core.document.skill_lines import unstated
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.events import EventSink, Notice
from skillsleep.core.shared.records import Task
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import decide
from skillsleep.core.train.meta_skill import EpochSummary, update_meta_skill
from skillsleep.core.train.slow_update import Comparison, classify, slow_update
from skillsleep.core.train.state import EpochRecord, SlowUpdateRecord, TrainState


@dataclass(frozen=True)
class Boundary:
    """What an epoch's end works with: the run's settings, the optimizer, the evaluator with the
    train tasks (the slow update's sample) and the val tasks (its gate), where the files go, the
    redactor of what the optimizer writes and the event sink."""

    cfg: TrainConfig
    optimizer: LLM
    evaluator: Evaluator
    train_tasks: list[Task]
    val: list[Task]
    run_dir: RunDir
    redactor: Redactor
    on_event: EventSink


async def end_epoch(b: Boundary, st: TrainState) -> None:
    """Run the slow update and the meta-skill update for the epoch that just ended; its record joins
    `st.epochs` and is written as epochs/e<N>.json."""
    record = EpochRecord(epoch=st.epoch, start_score=st.epoch_start_score, end_score=st.current_score)
    counts: dict[str, int] = {}
    previous, current = Skill(st.epoch_start), Skill(st.current)
    if b.cfg.slow_update.enabled and previous != current:
        counts = await _slow_update(b, st, previous, current, record)
    if b.cfg.meta.enabled:
        accepted = [e for s in st.steps if s.epoch == st.epoch and s.gate and s.gate.accepted for e in s.applied]
        summary = EpochSummary(
            epoch=st.epoch,
            start_score=st.epoch_start_score,
            end_score=st.current_score,
            accepted=accepted,
            rejected=[
                r for r in st.rejected if r.epoch == st.epoch and r.stage in ("gate", "ignored") and not r.repair
            ],
            slow_update_counts=counts,
        )
        result = await update_meta_skill(b.optimizer, st.meta_skill, summary, max_lines=b.cfg.meta.max_lines)
        st.meta_skill = b.redactor.text(result.meta)  # the notes reach every later reflection
        record.meta_failure = result.problem  # set, even to None: the meta skill ran
    record.end_score = st.current_score
    st.epochs.append(record)
    b.run_dir.write_json(f"epochs/e{st.epoch}.json", record)
    st.earlier_steps = []
    st.epoch_start, st.epoch_start_score = st.current, st.current_score


async def _slow_update(
    b: Boundary, st: TrainState, previous: Skill, current: Skill, record: EpochRecord
) -> dict[str, int]:
    tasks = list(b.train_tasks)
    random.Random(f"{b.cfg.run.seed}:slow:{st.epoch}").shuffle(tasks)
    tasks = tasks[: b.cfg.slow_update.sample_size]
    before = await b.evaluator.rollouts(previous, tasks, k=1)
    after = await b.evaluator.rollouts(current, tasks, k=1)
    comparisons = [
        Comparison(task=t, before=x, after=y, outcome=classify(x.score, y.score))
        for t, x, y in zip(tasks, before, after, strict=True)
    ]
    result = await slow_update(
        b.optimizer, previous, current, comparisons, max_lines=b.cfg.slow_update.max_lines, redactor=b.redactor
    )
    guidance = unstated(current, result.guidance, region="slow-update")  # what the skill says once is enough
    record.slow_update = SlowUpdateRecord(
        counts=result.counts, failure=result.problem, guidance=guidance, refused=result.refused
    )
    for r in result.refused:
        b.on_event(Notice(text=f"slow update: {r.why()}"))
    if not guidance.strip() or guidance.strip() == current.region("slow-update").strip():
        return result.counts
    candidate = current.with_region("slow-update", guidance)
    base = await b.evaluator.task_scores(current, b.val)
    cand = await b.evaluator.task_scores(candidate, b.val)
    decision = decide(
        b.cfg.gate, base, cand, baseline_hash=current.hash, candidate_hash=candidate.hash, allow_ties=True
    )
    record.slow_update_gate = decision
    b.run_dir.write_text(f"candidates/e{st.epoch}-slow-update.md", candidate.text)
    b.on_event(Notice(text=f"slow update {'accepted' if decision.accepted else 'rejected'}: {decision.reason}"))
    if decision.accepted and st.accept(candidate, decision.candidate, tie_ok=True):
        b.run_dir.write_text("best_skill.md", candidate.text)
    return result.counts
