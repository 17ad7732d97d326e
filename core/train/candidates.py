"""Several candidates per step (`[train] candidates = N`): the gate keeps the best that passes.

One reflection gives a ranked list of edits; the clip applies the first `learning rate` of them
together. A small optimizer's list often mixes a good edit with a harmful one, and the bundle then
fails the gate although the good edit alone would pass. With N > 1 a step also builds candidates
from each ranked edit on its own, in rank order (the best edit without its companions, then the
next-ranked edits the clip left out), until N distinct edit sets are built:

    candidate 1   the clip: ranked[:learning rate]      (what a step with N = 1 applies)
    candidate 2…  [ranked[0]], [ranked[1]], …           (each skipped when it equals an earlier set)

With N > 1 the candidates after the first come from other strategies first (the quoted-literal
form, a worked example: core/train/strategies.py), then from the ranked edits as above. With N = 1,
a clip that changes nothing (every edit dropped by the memory, refused or already in the skill)
gives its place to the first of those strategies that makes a new skill (`build`) when `[train] fallback = true`,
so a step whose own edits all fail still gates one other form.

Each candidate is gated on the selection split; identical candidate skills are gated once, and a
candidate equal to the current skill is not gated at all. The gate keeps the accepted candidate
with the highest selection score (ties → the lower number). Extra candidates cost at most one
model call of the optimizer (the worked example, asked for only when no reply of the batch passed),
and rollouts are memoised by skill (`Evaluator`), so only new skills are paid.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.events import EventSink, GateDecided, GateStarted, StepAt
from skillsleep.core.shared.records import Edit, GateDecision, Strategy, Task
from skillsleep.core.shared.rejected import RejectedEdit, distinct
from skillsleep.core.train.edits import EditLimits, EditResult, apply_edits
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import GateConfig, decide
from skillsleep.core.train.ranking import Selection


@dataclass(frozen=True)
class Candidate:
    """One candidate of a step: its number (from 1), the edits applied and skipped, and the number
    of an earlier candidate that made the same skill (None when it is the first to)."""

    number: int
    result: EditResult
    same_as: int | None = None
    strategy: Strategy = "optimizer"

    @property
    def skill(self) -> Skill:
        return self.result.skill


def edit_sets(ranked: Sequence[Edit], selected: list[Edit], n: int) -> list[list[Edit]]:
    """The edits of up to `n` candidates: the clip first, then each ranked edit on its own."""
    sets = [selected]
    for edit in ranked:
        if len(sets) >= n:
            break
        if [edit] not in sets:
            sets.append([edit])
    return sets


def build(
    current: Skill,
    first: EditResult,
    selection: Selection,
    limits: EditLimits,
    *,
    n: int,
    others: Sequence[tuple[Strategy, list[Edit]]] = (),
) -> list[Candidate]:
    """The step's candidates: `first` (the clip, already applied), the strategies' `others`
    (core/train/strategies.py), then the others of `edit_sets` up to `n`; with `n` = 1 and a clip
    that changed nothing, the first of `others` alone."""
    if n == 1 and first.skill == current and others:  # `[train] fallback`: the first strategy instead
        strategy, edits = others[0]
        return [Candidate(number=1, result=apply_edits(current, edits, limits), strategy=strategy)]
    others = list(others)[: n - 1]
    sets = edit_sets(selection.ranked, selection.selected, n - len(others))[1:]
    made: list[tuple[Strategy, EditResult]] = [("optimizer", first)]
    made += [(strategy, apply_edits(current, edits, limits)) for strategy, edits in others]
    made += [("optimizer", apply_edits(current, edits, limits)) for edits in sets]
    out: list[Candidate] = []
    for number, (strategy, result) in enumerate(made, 1):
        same = next((c.number for c in out if c.skill == result.skill), None)
        out.append(Candidate(number=number, result=result, same_as=same, strategy=strategy))
    return out


def named(candidates: list[Candidate]) -> bool:
    """Whether a step's record names its candidates' strategies: several, or one that is not the
    optimizer's clip (`build`)."""
    return len(candidates) > 1 or any(c.strategy != "optimizer" for c in candidates)


def label(c: Candidate, built: int) -> str:
    """How the next reflection's note names `c`, one of `built` candidates ("" for a lone clip)."""
    if built > 1:
        return f"candidate {c.number}/{built} ({c.strategy}) "
    return "" if c.strategy == "optimizer" else f"({c.strategy}, the optimizer's edits changed nothing) "


def to_gate(current: Skill, candidates: list[Candidate]) -> list[Candidate]:
    """The candidates the gate must score: each distinct skill once, none equal to `current`."""
    return [c for c in candidates if c.same_as is None and c.skill != current]


async def gate_all(
    ev: Evaluator,
    gate: GateConfig,
    current: Skill,
    candidates: list[Candidate],
    val: list[Task],
    *,
    at: StepAt,
    on_event: EventSink,
    built: int,
) -> dict[int, GateDecision]:
    """Each candidate's gate decision against `current` on `val`, by number; all are scored at once."""
    before = await ev.task_scores(current, val)
    for c in candidates:
        on_event(GateStarted(at=at, tasks=len(val), candidate=c.number, candidates=built))
    afters = await asyncio.gather(*(ev.task_scores(c.skill, val) for c in candidates))
    decisions: dict[int, GateDecision] = {}
    for c, after in zip(candidates, afters, strict=True):
        decision = decide(gate, before, after, baseline_hash=current.hash, candidate_hash=c.skill.hash)
        decisions[c.number] = decision
        on_event(
            GateDecided(at=at, accepted=decision.accepted, reason=decision.reason, candidate=c.number, candidates=built)
        )
    return decisions


def choose(decisions: dict[int, GateDecision]) -> int | None:
    """The accepted candidate with the best selection score (ties → the lower number), or None."""
    accepted = [(number, d) for number, d in sorted(decisions.items()) if d.accepted]
    return max(accepted, key=lambda nd: nd[1].candidate)[0] if accepted else None


def best_rejected(decisions: dict[int, GateDecision]) -> GateDecision:
    """The rejected decision with the best candidate score (ties → the lower number)."""
    return max((d for _, d in sorted(decisions.items())), key=lambda d: d.candidate)


def skipped(candidates: list[Candidate]) -> list[RejectedEdit]:
    """The edits the rules skipped in building `candidates`, each with its reason once."""
    return distinct(r for c in candidates for r in c.result.skipped)
