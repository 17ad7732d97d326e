"""Gating a step's candidates: each new candidate skill scored on the held-out tasks, the best
accepted one kept (written as best_skill.md when it is the best so far), the rest remembered with
the proposals the repair rewrote into them, and a line for later reflections on each verdict."""

from __future__ import annotations

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.shared.events import CandidateChosen, EventSink, StepAt
from skillsleep.core.shared.records import Task
from skillsleep.core.shared.rejected import IGNORED
from skillsleep.core.train import candidates, memory
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import GateConfig
from skillsleep.core.train.repair import Landed
from skillsleep.core.train.state import TrainState
from skillsleep.core.train.step_notes import gate_note
from skillsleep.core.train.step_record import StepRecord

__all__ = ["gate_step"]


async def gate_step(
    st: TrainState,
    record: StepRecord,
    current: Skill,
    built: list[candidates.Candidate],
    landed: Landed,
    *,
    ev: Evaluator,
    gate: GateConfig,
    val: list[Task],
    run_dir: RunDir,
    at: StepAt,
    on_event: EventSink,
) -> None:
    """Gate every new candidate skill of the step in `built` on `val`, keep the best accepted one on
    `st` and `record`, remember the rest (with the proposals that `landed` repaired into them)."""
    several, gated = len(built) > 1, candidates.to_gate(current, built)
    for c in gated:
        run_dir.write_text(f"candidates/e{st.epoch}s{st.step}{f'c{c.number}' if several else ''}.md", c.skill.text)
    decisions = await candidates.gate_all(ev, gate, current, gated, val, at=at, on_event=on_event, built=len(built))
    record.chosen = candidates.choose(decisions)
    record.candidate_gates = decisions if several else {}
    kept = built[record.chosen - 1] if record.chosen else None
    record.strategy = kept.strategy if kept and candidates.named(built) else None
    if several:
        on_event(
            CandidateChosen(at=at, built=len(built), gated=len(gated), chosen=record.chosen, strategy=record.strategy)
        )
    record.gate = decisions[kept.number] if kept else candidates.best_rejected(decisions)
    if kept:
        record.applied = kept.result.applied
        if st.accept(kept.skill, record.gate.candidate):
            run_dir.write_text("best_skill.md", kept.skill.text)
    remembered = list(record.applied) if kept else []
    alone = [c.result.applied[0] for c in gated if len(c.result.applied) == 1 and not decisions[c.number].accepted]
    ignored = memory.unfollowed([(c.result.applied, decisions[c.number]) for c in gated])
    for c in gated:
        decision = decisions[c.number]
        edits = c.result.applied
        if not decision.accepted:
            new = [e for e in edits if e not in remembered]
            remembered += new
            memory.remember_gated(
                st.rejected,
                new,
                decision,
                on=current,
                alone=alone,
                repaired=landed.repaired,
                epoch=st.epoch,
                step=st.step,
                ignored=ignored,
            )
        verdict = ("accepted" if c is kept else "passed, not kept") if decision.accepted else "rejected"
        verdict += f" — {IGNORED}" if any([e] == edits for e, _ in ignored) else ""
        which = candidates.label(c, len(built))
        st.earlier_steps.append(gate_note(st.step, edits, decision.baseline, decision.candidate, which + verdict))
