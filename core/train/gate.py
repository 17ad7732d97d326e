"""The gate: a candidate skill is accepted only if it strictly improves the selection split.

Each rule is a small strategy; `decide()` applies the configured ones in order. Ties are
rejected, except with `allow_ties` (slow-update guidance, which only must not lower the score).
With `no_regress`, a candidate that lowers any single task is rejected too. With `min_wins` = M,
the candidate must also score higher on at least M selection tasks: a task is one unit of
evidence (its score is the mean of its K samples, which are not independent of each other), so a
higher mean carried by one task is not enough. With no task lowered, M winning tasks arise by
luck about once in 2^M (a sign test). With the gate off (`enabled = false`) every candidate is
accepted unchecked.

When every held-out task already has the top score, no candidate can pass (`saturated`): the
trainer skips the steps left rather than pay for candidates the gate must refuse.

A rejected candidate that moved no held-out task (`untouched`: every task scored as before, and
some task had room to rise) is a tie of another kind than a lower or a mixed score: its edits were
applied and the target did not follow them (core/train/memory.py remembers them as "ignored").
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.shared.records import GateDecision, TaskDelta

_EPS = 1e-9
NOT_ENOUGH = "not enough evidence"  # how every verdict on too little evidence begins


class GateConfig(BaseModel):
    """Gate settings: the metric, a minimum margin and per-task no-regression."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    metric: Literal["hard", "soft", "mixed"] = "hard"
    mixed_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    min_margin: float = Field(default=0.0, ge=0.0)
    no_regress: bool = False
    min_wins: int = Field(default=1, ge=1)  # selection tasks the candidate must score higher on

    def describe(self) -> str:
        """What the gate requires of a candidate, in words (the report states it)."""
        if not self.enabled:
            return "gate off: every candidate is accepted unchecked"
        margin = f" by more than {self.min_margin:g}" if self.min_margin else ""
        wins = f", higher on at least {self.min_wins} of them" if self.min_wins > 1 else ""
        lost = ", lower on none" if self.no_regress else ""
        return (
            f"a strictly higher mean {self.metric} score on the held-out tasks{margin}{wins}{lost} "
            "(each task counts once, its score the mean of its samples)"
        )


def mean(values: dict[str, float]) -> float:
    return sum(values.values()) / len(values) if values else 0.0


class Rule(Protocol):
    """One acceptance rule: a reason to reject, or None to pass."""

    def reject(self, base: float, cand: float, deltas: list[TaskDelta]) -> str | None: ...


class StrictImprovement:
    """Reject unless the candidate beats the baseline by more than the margin."""

    def __init__(self, margin: float) -> None:
        self.margin = margin

    def reject(self, base: float, cand: float, deltas: list[TaskDelta]) -> str | None:
        if cand > base + self.margin + _EPS:
            return None
        if abs(cand - base) <= _EPS:
            return f"no improvement: {cand:.3f} equals the current {base:.3f} (ties are rejected)"
        if cand < base:
            return f"worse: {cand:.3f} < current {base:.3f}"
        return f"improvement {cand - base:+.3f} is not above the required margin {self.margin:.3f}"


class NoTaskRegresses:
    """Reject when any single task scores lower than before."""

    def reject(self, base: float, cand: float, deltas: list[TaskDelta]) -> str | None:
        worse = [d.task_id for d in deltas if d.after < d.before - _EPS]
        return f"tasks regressed: {', '.join(worse)}" if worse else None


class EnoughEvidence:
    """Reject unless the candidate scores higher on at least `min_wins` tasks."""

    def __init__(self, min_wins: int) -> None:
        self.min_wins = min_wins

    def reject(self, base: float, cand: float, deltas: list[TaskDelta]) -> str | None:
        wins = sum(1 for d in deltas if d.after > d.before + _EPS)
        if wins >= self.min_wins:
            return None
        if len(deltas) < self.min_wins:
            return (
                f"{NOT_ENOUGH}: only {len(deltas)} held-out task(s), and the gate needs a higher score on at "
                f"least {self.min_wins}"
            )
        return (
            f"{NOT_ENOUGH}: higher on {wins} of {len(deltas)} held-out task(s), the gate needs at least "
            f"{self.min_wins} ({base:.3f} → {cand:.3f})"
        )


class NotWorse:
    """Accept ties (used for slow-update guidance, which must not lower the score)."""

    def reject(self, base: float, cand: float, deltas: list[TaskDelta]) -> str | None:
        return None if cand >= base - _EPS else f"worse: {cand:.3f} < current {base:.3f}"


def rules_for(cfg: GateConfig, *, allow_ties: bool = False) -> list[Rule]:
    """The rules a config asks for, in the order they are checked."""
    rules: list[Rule] = [NotWorse() if allow_ties else StrictImprovement(cfg.min_margin)]
    if cfg.no_regress:
        rules.append(NoTaskRegresses())
    if cfg.min_wins > 1 and not allow_ties:
        rules.append(EnoughEvidence(cfg.min_wins))
    return rules


def decide(
    cfg: GateConfig,
    baseline: dict[str, float],
    candidate: dict[str, float],
    *,
    baseline_hash: str,
    candidate_hash: str,
    allow_ties: bool = False,
) -> GateDecision:
    """Compare per-task selection scores of the current skill and a candidate."""
    deltas = [TaskDelta(task_id=t, before=baseline[t], after=candidate.get(t, 0.0)) for t in sorted(baseline)]
    base, cand = mean(baseline), mean(candidate)
    reason: str | None = None
    if cfg.enabled:
        for rule in rules_for(cfg, allow_ties=allow_ties):
            reason = rule.reject(base, cand, deltas)
            if reason:
                break
    accepted = reason is None
    if accepted:
        reason = _accepted_reason(cfg, base, cand, deltas)
    return GateDecision(
        baseline=base,
        candidate=cand,
        accepted=accepted,
        reason=reason or "",
        deltas=deltas,
        baseline_hash=baseline_hash,
        candidate_hash=candidate_hash,
    )


def _accepted_reason(cfg: GateConfig, base: float, cand: float, deltas: list[TaskDelta]) -> str:
    if not cfg.enabled:
        return "gate off (greedy): accepted without a check"
    if cand <= base + _EPS:
        return f"not worse: {base:.3f} → {cand:.3f}"
    if cfg.min_wins <= 1:
        return f"improved {base:.3f} → {cand:.3f}"
    wins = sum(1 for d in deltas if d.after > d.before + _EPS)
    lower = sum(1 for d in deltas if d.after < d.before - _EPS)
    return f"improved {base:.3f} → {cand:.3f}: higher on {wins} of {len(deltas)} held-out tasks, {lower} lower"


def saturated(cfg: GateConfig, score: float) -> bool:
    """Whether no candidate could pass the gate: it is on, a candidate must score strictly higher
    than `score` (the current skill's mean on the held-out tasks), and `score` is the top score
    already (each task's is at most 1). Only the slow update's guidance, which may tie, can still pass."""
    return cfg.enabled and score >= 1.0 - _EPS


def untouched(decision: GateDecision) -> bool:
    """Whether the gate rejected a candidate that moved no held-out task: it has per-task scores,
    each task scored as before (float noise aside), and not every task was at the top score
    already (then there was nothing to move, which says nothing about the target). A mean tie made
    of one task up and another down moved tasks, so it is not one."""
    deltas = decision.deltas
    return (
        not decision.accepted
        and bool(deltas)
        and all(abs(d.after - d.before) <= _EPS for d in deltas)
        and any(d.before < 1.0 - _EPS for d in deltas)
    )
