"""The gate: a candidate skill is accepted only if it strictly improves the selection split.

Each rule is a small strategy; `decide()` applies the configured ones in order. Ties are
rejected, except with `allow_ties` (slow-update guidance, which only must not lower the score).
With `no_regress`, a candidate that lowers any single task is rejected too. With the gate off
(`enabled = false`) every candidate is accepted unchecked.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.records import GateDecision, TaskDelta

_EPS = 1e-9


class GateConfig(BaseModel):
    """Gate settings: the metric, a minimum margin and per-task no-regression."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    metric: Literal["hard", "soft", "mixed"] = "hard"
    mixed_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    min_margin: float = Field(default=0.0, ge=0.0)
    no_regress: bool = False


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


class NotWorse:
    """Accept ties (used for slow-update guidance, which must not lower the score)."""

    def reject(self, base: float, cand: float, deltas: list[TaskDelta]) -> str | None:
        return None if cand >= base - _EPS else f"worse: {cand:.3f} < current {base:.3f}"


def rules_for(cfg: GateConfig, *, allow_ties: bool = False) -> list[Rule]:
    """The rules a config asks for, in the order they are checked."""
    rules: list[Rule] = [NotWorse() if allow_ties else StrictImprovement(cfg.min_margin)]
    if cfg.no_regress:
        rules.append(NoTaskRegresses())
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
        reason = (
            "gate off (greedy): accepted without a check"
            if not cfg.enabled
            else (f"improved {base:.3f} → {cand:.3f}" if cand > base + _EPS else f"not worse: {base:.3f} → {cand:.3f}")
        )
    return GateDecision(
        baseline=base,
        candidate=cand,
        accepted=accepted,
        reason=reason or "",
        deltas=deltas,
        baseline_hash=baseline_hash,
        candidate_hash=candidate_hash,
    )
