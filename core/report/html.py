"""The report as ONE self-contained page for a person (report.html): the CSS of
`styles/report.css` inline, an inline SVG chart of the score over nights, tables, the coloured
diff.

Every piece of untrusted text (task prompts, edits, reasons, the diff) is escaped; the page loads
nothing from anywhere (no script, font, image or URL; a Content-Security-Policy forbids it too).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from functools import cache
from importlib.resources import files

from skillsleep.core.report.evidence import evidence_html
from skillsleep.core.report.paired_html import PLOT_CSS
from skillsleep.core.report.result import REPORT_VERSION, HistoryPoint, NightResult, chart_points
from skillsleep.core.report.wording import (
    change_text,
    intents_by_id,
    next_step,
    numbered,
    score_text,
    summary_rows,
    title,
)
from skillsleep.core.shared.records import Edit

_e = html.escape


@cache
def _css() -> str:
    """The page's style sheet, a package file like the prompts."""
    return files("skillsleep.core.report").joinpath("styles", "report.css").read_text(encoding="utf-8")


def render_html(r: NightResult) -> str:
    """The report as one self-contained HTML page."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>skillsleep night {r.night}: {_e(r.skill_name)}</title>",
        f"<style>\n{_css()}{PLOT_CSS if r.paired else ''}</style></head><body>",
        "<header>",
        f"<h1>skillsleep — night {r.night}: {_e(r.skill_name)}</h1>",
        f'<p><span class="badge {r.outcome}">{_e(title(r))}</span> {_e(r.reason)}</p>',
    ]
    if r.stop:
        parts.append(
            f'<div class="stop"><p><strong>Why it stopped:</strong> {_e(r.stop.message)}</p>'
            f"<p><strong>What to do:</strong> {_e(r.stop.advice)}</p></div>"
        )
    parts.append(f"<p>{_code_spans(next_step(r))}</p>")
    parts.append(
        "<table>"
        + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in summary_rows(r))
        + "</table></header>"
    )
    parts += ["<section><h2>Score over nights</h2>", render_chart(chart_points(r)), "</section>"]
    parts.append(_html_deltas(r))
    parts.append(evidence_html(r.paired, r.validation))
    parts.append(_html_tasks(r))
    parts.append(_html_edits(r))
    parts += [
        "<section><h2>Diff against the live skill</h2>",
        _html_diff(numbered(r) if r.changes else r.diff),
        "</section>",
    ]
    if r.problems:
        parts.append(
            "<section><h2>Problems (the night went on without these)</h2><ul>"
            + "".join(f"<li>{_e(p)}</li>" for p in r.problems)
            + "</ul></section>"
        )
    parts.append(_html_usage(r))
    parts.append(f'<footer><p class="muted">skillsleep report, format version {REPORT_VERSION}.</p></footer>')
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p) + "\n"


def _code_spans(text: str) -> str:
    """Our own wording with `code` spans, escaped first."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _table(head: Sequence[str], rows: list[str]) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    return "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"


def _num(v: str, cls: str = "") -> str:
    return f'<td class="{f"num {cls}".strip()}">{_e(v)}</td>'


def _trend(before: float | None, after: float | None) -> str:
    if before is None or after is None or math.isclose(before, after, abs_tol=1e-9):
        return ""
    return "up" if after > before else "down"


def _html_deltas(r: NightResult) -> str:
    if not r.gate:
        return ""
    intents = intents_by_id(r)
    rows = [
        f"<tr><td>{_e(d.task_id)}</td><td>{_e(intents.get(d.task_id, ''))}</td>"
        + _num(score_text(d.before, 2))
        + _num(score_text(d.after, 2))
        + _num(change_text(d.before, d.after, 2), _trend(d.before, d.after))
        + "</tr>"
        for d in r.gate.deltas
    ]
    out = [
        "<section><h2>Held-out tasks: before → after</h2>",
        f"<p>Gate: {_e(r.gate.reason)}</p>",
        _table(("task", "intent", "before", "after", "change"), rows),
    ]
    if r.test:
        out.append(
            f"<p>Test split ({r.test.tasks} tasks): {score_text(r.test.before)} → {score_text(r.test.after)} "
            f'<span class="{_trend(r.test.before, r.test.after)}">'
            f"({change_text(r.test.before, r.test.after)})</span></p>"
        )
    out.append("</section>")
    return "\n".join(out)


def _html_tasks(r: NightResult) -> str:
    rows = [
        f"<tr><td>{_e(t.id)}</td><td>{_e(t.intent)}</td><td>{_e(t.split or '—')}</td>"
        f"{_num(str(t.recurrence))}<td>{_e(t.origin)}</td></tr>"
        for t in r.tasks
    ]
    return (
        "<section><h2>Tasks used</h2>"
        + _table(("task", "intent", "split", "recurrence", "origin"), rows)
        + "</section>"
        + _html_mined(r)
    )


def _html_mined(r: NightResult) -> str:
    """The mined tasks with their member requests (redacted), as report.md lists them."""
    items = []
    for t in (t for t in r.tasks if t.requests):
        where = f"{t.split}, " if t.split else ""
        sessions = f" in {t.sessions} session(s)" if t.sessions else ""
        requests = [f"<li>{_e(q.text)}" + (f" (×{q.times})" if q.times > 1 else "") + "</li>" for q in t.requests]
        if t.more_requests:
            requests.append(f"<li>… and {t.more_requests} more distinct request(s)</li>")
        head = f"{_e(t.id)} ({_e(where)}asked {t.recurrence} time(s){sessions})"
        items.append(f"<li>{head}<ul>{''.join(requests)}</ul></li>")
    return f"<section><h2>Mined tasks and their requests</h2><ul>{''.join(items)}</ul></section>" if items else ""


def _edit_cells(e: Edit) -> str:
    return f"<td>{_e(e.op)}</td><td>{_e(e.target or '')}</td><td>{_e(e.content or '')}</td>"


def _html_edits(r: NightResult) -> str:
    accepted = [f"<tr>{_edit_cells(e)}<td>{_e(e.rationale)}</td>{_num(str(e.support))}</tr>" for e in r.accepted_edits]
    rejected = [
        f"<tr>{_edit_cells(g.edit)}<td>{_e(g.reason)}</td>"
        + _num(
            f"{score_text(g.before)} → {score_text(g.after)}" if g.before is not None and g.after is not None else ""
        )
        + "</tr>"
        for g in r.rejected_edits
    ]
    refused = [
        f"<tr>{_edit_cells(s.edit)}<td>{_e(s.rule or '')}</td><td>refused before the gate: {_e(s.reason)}</td>"
        f"<td><code>{_e(s.matched or '')}</code></td></tr>"
        for s in r.refused_edits
    ]
    return "\n".join(
        [
            "<section><h2>Edits</h2>",
            f"<h3>Accepted ({len(accepted)})</h3>",
            _table(("op", "target", "content", "rationale", "support"), accepted),
            f"<h3>Rejected by the gate ({len(rejected)})</h3>",
            _table(("op", "target", "content", "gate's reason", "score"), rejected),
            f"<h3>Refused by the safety screen ({len(refused)})</h3>",
            _table(("op", "target", "content", "rule", "why", "matched"), refused),
            "</section>",
        ]
    )


def _html_diff(diff: str) -> str:
    if not diff.strip():
        return '<p class="muted">(no change)</p>'
    spans = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            cls = "meta"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        spans.append(f'<span class="{cls}">{_e(line) or " "}</span>')
    return '<pre class="diff">' + "".join(spans) + "</pre>"


def _html_usage(r: NightResult) -> str:
    rows = (
        [
            f"<tr><td>{_e(role)}</td>"
            + _num(str(u.calls))
            + _num(str(u.cache_hits))
            + _num(f"{u.input_tokens:,}")
            + _num(f"{u.output_tokens:,}")
            + _num(f"${u.cost_usd:.4f}")
            + "</tr>"
            for role, u in [*sorted(r.usage.by_role.items()), ("total", r.usage.total())]
        ]
        if r.usage.by_role
        else []
    )
    return (
        "<section><h2>Model calls</h2>"
        + _table(("role", "calls", "cache hits", "tokens in", "tokens out", "cost"), rows)
        + "</section>"
    )


# --- the chart ----------------------------------------------------------------------------------

_W, _H = 640, 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 16, 28, 36
_MAX_LABELS = 12


def render_chart(points: Sequence[HistoryPoint]) -> str:
    """An inline SVG line chart of baseline and candidate score per night (y from 0 to 1);
    one `<g class="night">` per night, accepted nights ringed."""
    pw, ph = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    points = sorted(points, key=lambda p: p.night)
    n = len(points)

    def x(i: int) -> float:
        return _LEFT + pw / 2 if n == 1 else _LEFT + i * pw / (n - 1)

    def y(v: float) -> float:
        return _TOP + (1 - min(1.0, max(0.0, v))) * ph

    out = [
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img" '
        f'aria-label="score over {n} night(s)">'
    ]
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(
            f'<line class="grid" x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" />'
            f'<text class="axis" x="{_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>'
        )
    out.append(
        f'<text class="axis" x="{_LEFT}" y="14">■ baseline (live skill)</text>'
        f'<text class="cand" x="{_LEFT + 150}" y="14">■ candidate</text>'
        f'<text class="axis" x="{_LEFT + 240}" y="14">○ accepted</text>'
    )
    if not any(p.baseline is not None or p.candidate is not None for p in points):
        out.append(
            f'<text class="axis" x="{_LEFT + pw / 2:.1f}" y="{_TOP + ph / 2:.1f}" text-anchor="middle">'
            "no scores yet</text>"
        )
    for attr, cls in (("baseline", "base"), ("candidate", "cand")):
        coords = [f"{x(i):.1f},{y(v):.1f}" for i, p in enumerate(points) if (v := getattr(p, attr)) is not None]
        if len(coords) >= 2:
            out.append(f'<polyline class="{cls}" points="{" ".join(coords)}" />')
    stride = max(1, math.ceil(n / _MAX_LABELS))
    for i, p in enumerate(points):
        tip = (
            f"night {p.night} ({p.date.isoformat()}): baseline {score_text(p.baseline)}, "
            f"candidate {score_text(p.candidate)}{', accepted' if p.accepted else ''}{', dry run' if p.dry_run else ''}"
        )
        g = [f'<g class="night" data-night="{p.night}"><title>{_e(tip)}</title>']
        for attr, cls in (("baseline", "base"), ("candidate", "cand")):
            v = getattr(p, attr)
            if v is not None:
                g.append(f'<circle class="{cls}" data-score="{v:.4f}" cx="{x(i):.1f}" cy="{y(v):.1f}" r="4" />')
        mark = p.candidate if p.candidate is not None else p.baseline
        if p.accepted and mark is not None:
            g.append(f'<circle class="ring" cx="{x(i):.1f}" cy="{y(mark):.1f}" r="8" />')
        if i % stride == 0 or i == n - 1:
            g.append(f'<text class="axis" x="{x(i):.1f}" y="{_H - _BOTTOM + 16}" text-anchor="middle">{p.night}</text>')
        g.append("</g>")
        out.append("".join(g))
    out.append(f'<text class="axis" x="{_LEFT + pw / 2:.1f}" y="{_H - 4}" text-anchor="middle">night</text>')
    out.append("</svg>")
    return "\n".join(out)
