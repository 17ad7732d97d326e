"""The report as markdown: what an agent shows after `/sleep`, and report.md in the proposal.

Untrusted text (task prompts, edits, reasons, problems) is escaped so it makes no markup or links
(`display.md_line`), or shown as it is for a terminal (`plain=True`); control characters are made
visible either way, and the diff sits in a fence longer than any run of backticks inside it.
"""

from __future__ import annotations

from collections.abc import Callable

from skillsleep.core.report.evidence import evidence_lines
from skillsleep.core.report.result import NightResult, chart_points
from skillsleep.core.report.wording import (
    change_text,
    edit_text,
    intents_by_id,
    next_step,
    numbered,
    score_text,
    summary_rows,
    title,
)
from skillsleep.core.shared.display import fence, md_line, plain_line, visible

Escape = Callable[[str], str]


def render_markdown(r: NightResult, *, plain: bool = False) -> str:
    """The report as markdown; `plain` shows untrusted text as it is (for a terminal) instead of
    escaping it for a markdown renderer. Control characters are made visible either way."""
    md = plain_line if plain else md_line
    out = [f"# skillsleep — night {r.night}: {md(r.skill_name)}", "", f"**{title(r)}** — {md(r.reason)}", ""]
    if r.stop:
        out += [f"**Why it stopped:** {md(r.stop.message)}", "", f"**What to do:** {md(r.stop.advice)}", ""]
    out += [next_step(r), "", "| | |", "|---|---|"]
    out += [f"| {label} | {md(text)} |" for label, text in summary_rows(r)]
    out.append("")
    out += _evidence(r, md)
    out += _tasks(r, md)
    out += _judges(r, md)
    out += _mined(r, md)
    out += _edits(r, md)
    out += _diff(r)
    if r.problems:
        out += _md_list("Problems (the night went on without these)", [md(p) for p in r.problems])
    out += _usage(r, md)
    out += ["## Score over nights", "", "| night | date | baseline | candidate | accepted |", "|---|---|---|---|---|"]
    out += [
        f"| {p.night} | {p.date.isoformat()} | {score_text(p.baseline)} | {score_text(p.candidate)} | "
        f"{'dry run' if p.dry_run else 'yes' if p.accepted else 'no'} |"
        for p in chart_points(r)
    ]
    return "\n".join(out) + "\n"


def _evidence(r: NightResult, md: Escape) -> list[str]:
    """The held-out paired difference beside the gate, and the label (core/report/evidence.py)."""
    lines = evidence_lines(r.paired, r.validation)
    return ["## Held-out evidence", "", *[f"- {md(line)}" for line in lines], ""] if lines else []


def _tasks(r: NightResult, md: Escape) -> list[str]:
    """The held-out tasks' scores before → after, and the tasks the night used."""
    out: list[str] = []
    intents = intents_by_id(r)
    if r.gate and r.gate.deltas:
        out += ["## Held-out tasks: before → after", ""]
        for d in r.gate.deltas:
            intent = f" — {md(intents[d.task_id])}" if d.task_id in intents else ""
            out.append(
                f"- {md(d.task_id)}: {score_text(d.before, 2)} → {score_text(d.after, 2)} "
                f"({change_text(d.before, d.after, 2)}){intent}"
            )
        out.append("")
    if r.tasks:
        out += ["## Tasks used", "", "| task | intent | split | recurrence | origin |", "|---|---|---|---|---|"]
        out += [f"| {md(t.id)} | {md(t.intent)} | {t.split or '—'} | {t.recurrence} | {t.origin} |" for t in r.tasks]
        out.append("")
    return out


def _judges(r: NightResult, md: Escape) -> list[str]:
    """What the real tasks' judges are built from: the sessions' evidence, or outcome signals only."""
    real = [t for t in r.tasks if t.origin == "real" and t.grounding]
    if not real:
        return []
    signals = [md(t.id) for t in real if t.grounding == "outcome-signals"]
    line = (
        f"Judges: {len(real) - len(signals)} of {len(real)} grounded in the sessions (every check and rubric "
        "sentence traced to the user's words)"
    )
    if signals:
        line += (
            f"; {len(signals)} built from outcome signals only (nothing the user wrote could be checked): "
            + ", ".join(signals)
        )
    return [line + ".", ""]


def _mined(r: NightResult, md: Escape) -> list[str]:
    """The mined tasks with their member requests (as harvested, redacted) and how often each recurred."""
    mined = [t for t in r.tasks if t.requests]
    if not mined:
        return []
    out = ["## Mined tasks and their requests", ""]
    for t in mined:
        where = f"{t.split}, " if t.split else ""
        sessions = f" in {t.sessions} session(s)" if t.sessions else ""
        out.append(f"- {md(t.id)} ({where}asked {t.recurrence} time(s){sessions}):")
        out += [f"  - {md(q.text)}" + (f" (×{q.times})" if q.times > 1 else "") for q in t.requests]
        if t.more_requests:
            out.append(f"  - … and {t.more_requests} more distinct request(s)")
    return [*out, ""]


def _edits(r: NightResult, md: Escape) -> list[str]:
    out = ["## Edits", ""]
    out += _md_list(
        "Accepted", [md(edit_text(e)) + (f" — {md(e.rationale)}" if e.rationale else "") for e in r.accepted_edits]
    )
    out += _md_list(
        "Rejected by the gate",
        [
            f"{md(edit_text(g.edit))} — {md(g.reason)}"
            + (
                f" ({score_text(g.before)} → {score_text(g.after)})"
                if g.before is not None and g.after is not None
                else ""
            )
            for g in r.rejected_edits
        ],
    )
    out += _md_list(
        "Refused by the safety screen (never reached the gate)",
        [f"{md(edit_text(s.edit))} — {md(s.why())}" for s in r.refused_edits],
    )
    return out


def _diff(r: NightResult) -> list[str]:
    out = ["## Diff against the live skill", ""]
    if r.changes:
        shown = visible(numbered(r).rstrip("\n"))
        out += [
            f"{len(r.changes)} change(s), numbered as `/sleep diff` shows them: `/sleep adopt --edits 1` (or "
            "`skillsleep adopt --edits 1`) adopts only change 1.",
            "",
            fence(shown) + "diff",
            shown,
            fence(shown),
            "",
        ]
    elif r.diff.strip():
        mark = fence(r.diff)
        out += [mark + "diff", visible(r.diff.rstrip("\n")), mark, ""]
    else:
        out += ["(no change)", ""]
    return out


def _usage(r: NightResult, md: Escape) -> list[str]:
    if not r.usage.by_role:
        return []
    out = [
        "## Model calls",
        "",
        "| role | calls | cache hits | tokens in | tokens out | cost |",
        "|---|---|---|---|---|---|",
    ]
    for role, u in [*sorted(r.usage.by_role.items()), ("total", r.usage.total())]:
        out.append(
            f"| {md(role)} | {u.calls} | {u.cache_hits} | {u.input_tokens:,} | {u.output_tokens:,} "
            f"| ${u.cost_usd:.4f} |"
        )
    out.append("")
    return out


def _md_list(title: str, items: list[str]) -> list[str]:
    return [f"### {title} ({len(items)})", "", *([f"- {i}" for i in items] or ["none"]), ""]
