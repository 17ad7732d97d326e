"""The epoch boundary: the slow update (previous vs current skill on the same tasks → guidance
in the protected region, gated so it cannot lower the score) and the meta skill (optimizer
memory carried to the next epoch, never written into the deployed skill)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from skillsleep.core.document.skill import Skill
from skillsleep.core.document.skill_lines import unstated
from skillsleep.core.shared.events import Notice
from skillsleep.core.shared.records import UnusableReply
from skillsleep.core.train.gate import decide
from skillsleep.core.train.meta_skill import EpochSummary, update_meta_skill
from skillsleep.core.train.slow_update import Comparison, classify, slow_update

if TYPE_CHECKING:
    from skillsleep.core.train.trainer import Trainer, TrainState


async def end_epoch(tr: Trainer, st: TrainState) -> None:
    """Run the slow update and the meta-skill update for the epoch that just ended."""
    record: dict[str, object] = {"epoch": st.epoch, "start_score": st.epoch_start_score}
    counts: dict[str, int] = {}
    previous, current = Skill(st.epoch_start), Skill(st.current)
    if tr.cfg.slow_update.enabled and previous != current:
        counts = await _slow_update(tr, st, previous, current, record)
    if tr.cfg.meta.enabled:
        accepted = [e for s in st.steps if s.epoch == st.epoch and s.gate and s.gate.accepted for e in s.applied]
        summary = EpochSummary(
            epoch=st.epoch,
            start_score=st.epoch_start_score,
            end_score=st.current_score,
            accepted=accepted,
            rejected=[r for r in st.rejected if r.epoch == st.epoch and r.stage == "gate"],
            slow_update_counts=counts,
        )
        result = await update_meta_skill(tr.optimizer, st.meta_skill, summary, max_lines=tr.cfg.meta.max_lines)
        st.meta_skill = tr.redactor.text(result.meta)  # the notes reach every later reflection
        record["meta_failure"] = _failure(result.problems)
    record["end_score"] = st.current_score
    st.epochs.append(record)
    tr.run_dir.write_json(f"epochs/e{st.epoch}.json", record)
    st.earlier_steps = []
    st.epoch_start, st.epoch_start_score = st.current, st.current_score


async def _slow_update(
    tr: Trainer, st: TrainState, previous: Skill, current: Skill, record: dict[str, object]
) -> dict[str, int]:
    tasks = list(tr.train_tasks)
    random.Random(f"{tr.cfg.run.seed}:slow:{st.epoch}").shuffle(tasks)
    tasks = tasks[: tr.cfg.slow_update.sample_size]
    before = await tr.ev.rollouts(previous, tasks, k=1)
    after = await tr.ev.rollouts(current, tasks, k=1)
    comparisons = [
        Comparison(task=t, before=b, after=a, outcome=classify(b.score, a.score))
        for t, b, a in zip(tasks, before, after, strict=True)
    ]
    result = await slow_update(
        tr.optimizer, previous, current, comparisons, max_lines=tr.cfg.slow_update.max_lines, redactor=tr.redactor
    )
    guidance = unstated(current, result.guidance, region="slow-update")  # what the skill says once is enough
    record["slow_update"] = {
        "counts": result.counts,
        "failure": _failure(result.problems),
        "guidance": guidance,
        "refused": [r.model_dump(mode="json") for r in result.refused],
    }
    for r in result.refused:
        tr.on_event(Notice(text=f"slow update: {r.reason()}"))
    if not guidance.strip() or guidance.strip() == current.region("slow-update").strip():
        return result.counts
    candidate = current.with_region("slow-update", guidance)
    base = await tr.ev.task_scores(current, tr.val)
    cand = await tr.ev.task_scores(candidate, tr.val)
    decision = decide(tr.gate, base, cand, baseline_hash=current.hash, candidate_hash=candidate.hash, allow_ties=True)
    record["slow_update_gate"] = decision.model_dump(mode="json")
    tr.run_dir.write_text(f"candidates/e{st.epoch}-slow-update.md", candidate.text)
    tr.on_event(Notice(text=f"slow update {'accepted' if decision.accepted else 'rejected'}: {decision.reason}"))
    if decision.accepted:
        tr.accept(st, candidate, decision.candidate, tie_ok=True)
    return result.counts


def _failure(problems: list[UnusableReply]) -> str | None:
    """What the epoch record keeps of a boundary stage's unusable reply: its line, or None."""
    return "; ".join(p.line() for p in problems) or None
