"""What a night's gate rests on, in the language of `skillsleep compare` (core/train/paired.py): the
held-out paired difference of the candidate (B) against the live skill (A), and the label of the
proposal.

- **The paired difference** (`NightResult.paired`): the candidate − the live skill on the held-out
  (val) tasks, task by task, with its paired bootstrap 95% interval, the exact McNemar p-value and
  the tasks × samples it rests on ("+0.31 [0.12, 0.50], p = 0.008, 6 tasks × 1 sample"). It is shown
  beside the gate's decision and never replaces it: the gate's rule stays the rule.
- **The label** (`NightResult.validation`, `validate()`): "validated" only when the gate (switched
  on) accepted the candidate on held-out tasks none of which is a training task, by stable task id
  (a dreamed task counts as the training task it was dreamed from); otherwise "suggestion — not
  validated", with the reason.

Pure: no I/O, no model call.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from pydantic import Field

from skillsleep.core.report.paired_html import paired_plot
from skillsleep.core.shared.records import GateDecision, Record
from skillsleep.core.train.paired import SAMPLE_MORE_NIGHT, PairedComparison, compare_scores, evidence

VALIDATED = "validated"
SUGGESTION = "suggestion — not validated"
PER_TASK_NOTE = (
    "the samples' own scores were not at hand: each task's mean score counts as one sample, so the interval "
    "covers the variation across tasks only"
)

_e = html.escape


class Validation(Record):
    """Whether a night's proposal is validated, and why (or why not)."""

    validated: bool
    label: str  # VALIDATED or SUGGESTION
    reason: str
    held_out: list[str] = Field(default_factory=list)  # the held-out task ids the gate decided on
    overlap: list[str] = Field(default_factory=list)  # held-out ids that are training tasks too

    def text(self) -> str:
        """ "validated — …" or "suggestion — not validated: …"."""
        return f"{self.label} — {self.reason}" if self.validated else f"{self.label}: {self.reason}"


def train_ids(ids: Iterable[str], parents: Iterable[str | None] = ()) -> set[str]:
    """The stable ids training saw: its tasks' own and those of the tasks its dreams came from."""
    return {*ids, *(p for p in parents if p)}


def validate(
    gate: GateDecision | None, *, gate_on: bool, held_out: Sequence[str], trained: Iterable[str]
) -> Validation:
    """The label of a night's candidate: validated only when the gate, switched on, accepted it on
    held-out tasks (`held_out`) disjoint from the training ones (`trained`, dreams' parents included)."""
    trained_ids = set(trained)
    overlap = sorted(t for t in held_out if t in trained_ids)
    ids = list(held_out)

    def no(reason: str) -> Validation:
        return Validation(validated=False, label=SUGGESTION, reason=reason, held_out=ids, overlap=overlap)

    if gate is None:
        return no("no candidate reached the gate")
    if not gate_on:
        return no("the gate was off, so it was accepted without a check on held-out tasks")
    if not gate.accepted:
        return no(f"the gate did not accept it ({gate.reason})")
    if not ids:
        return no("there were no held-out tasks to check it on")
    if overlap:
        return no(
            f"{len(overlap)} of the {len(ids)} held-out task(s) were trained on too ({', '.join(overlap)}), so the "
            "held-out score is not independent of training"
        )
    return Validation(
        validated=True,
        label=VALIDATED,
        reason=f"the gate accepted it on {len(ids)} held-out task(s), none of them a training task (by task id)",
        held_out=ids,
        overlap=[],
    )


def held_out_comparison(
    gate: GateDecision,
    base: dict[str, list[float]] | None = None,
    cand: dict[str, list[float]] | None = None,
    *,
    seed: int = 0,
) -> PairedComparison | None:
    """The candidate (B) against the live skill (A) on the gate's held-out tasks: from each task's
    sample scores (`base`, `cand`) when both are given for every task, else from the gate's per-task
    means as one sample each (the repeatability note says so). None when the gate has no tasks."""
    ids = [d.task_id for d in gate.deltas]
    if not ids:
        return None
    if base is not None and cand is not None and all(base.get(t) and cand.get(t) for t in ids):
        return compare_scores(
            {t: base[t] for t in ids}, {t: cand[t] for t in ids}, seed=seed, sample_more=SAMPLE_MORE_NIGHT
        )
    c = compare_scores(
        {d.task_id: [d.before] for d in gate.deltas},
        {d.task_id: [d.after] for d in gate.deltas},
        sample_more=SAMPLE_MORE_NIGHT,
    )
    rep = c.repeatability.model_copy(update={"note": PER_TASK_NOTE})
    return c.model_copy(update={"repeatability": rep})


def verdict_text(c: PairedComparison) -> str:
    """The comparison's verdict with the skills named: "the candidate is better: +0.31 […]"."""
    v = c.verdict
    for side, name in (("B", "the candidate"), ("A", "the live skill")):
        if v.startswith(f"{side} is better"):
            return name + v.removeprefix(side)
    return v


def short_text(c: PairedComparison | None) -> str:
    """The short form: "+0.31 [0.12, 0.50], p = 0.008, 6 tasks × 1 sample" ("" without one)."""
    return evidence(c) if c is not None else ""


def evidence_lines(c: PairedComparison | None, v: Validation | None) -> list[str]:
    """The held-out evidence as plain sentences (each renderer escapes them its own way)."""
    out = []
    if v is not None:
        out.append(f"Label: {v.text()}.")
    if c is not None:
        out += [
            f"Held-out paired difference, candidate − live skill ({c.confidence:.0%} interval, McNemar p): "
            f"{verdict_text(c)}.",
            f"Wins / ties / losses: {c.wins} / {c.ties} / {c.losses}; live skill {c.a_mean:.2f}, "
            f"candidate {c.b_mean:.2f}. Repeatability: {c.repeatability.note}.",
            "The gate's rule decides; these statistics only say how sure its decision is.",
        ]
    return out


def evidence_html(c: PairedComparison | None, v: Validation | None) -> str:
    """The report page's section: the sentences and a paired dot plot per task (A: live, B: candidate)."""
    if c is None and v is None:
        return ""
    parts = ["<section><h2>Held-out evidence</h2>", *(f"<p>{_e(line)}</p>" for line in evidence_lines(c, v))]
    if c is not None:
        parts.append('<p class="muted">● A: the live skill; ● B: the candidate.</p>' + paired_plot(c))
    return "\n".join([*parts, "</section>"])


def label_text(validated: bool | None, outcome: str | None, validation: str) -> str:
    """A night's label in brief (`status`): "validated"; "suggestion — not validated" when the gate
    said no (its verdict beside says why); with the reason when the gate accepted it all the same."""
    if validated is None:
        return ""
    if validated:
        return VALIDATED
    return validation if outcome == "accepted" else SUGGESTION
