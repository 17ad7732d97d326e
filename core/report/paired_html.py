"""A paired comparison (core/train/paired.py) as ONE self-contained HTML page: the report's style sheet
inline, an inline SVG paired dot plot (one row per task: A's and B's samples and means joined by a
line, green where B is higher, red where lower) and the mean difference with its interval.

Task ids and labels are escaped; the page loads nothing from anywhere (no script, font, image or URL;
a Content-Security-Policy forbids it too).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from functools import cache
from importlib.resources import files

from skillsleep.core.train.paired import PairedComparison, TaskPair

_e = html.escape
_LEFT, _RIGHT, _TOP, _ROW, _W = 170, 30, 34, 22, 760
_PLOT = _W - _LEFT - _RIGHT
_LABEL = 24  # characters of a task id shown beside its row (the whole id is in its tooltip)
PLOT_CSS = (
    "svg line.up{stroke:#1a7f37;stroke-width:2}svg line.down{stroke:#b3261e;stroke-width:2}"
    "svg line.tie{stroke:#c0c4cc;stroke-width:2}svg circle.sample{fill-opacity:.35;stroke:none}"
    "svg line.pass{stroke:#6a7282;stroke-dasharray:4 3}svg line.zero{stroke:#1d2330}"
    "svg line.ci{stroke:#2f6feb;stroke-width:3}\n"
)


@cache
def _css() -> str:
    """The report's style sheet (styles/report.css), a package file."""
    return files("skillsleep.core.report").joinpath("styles", "report.css").read_text(encoding="utf-8")


def _x(v: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return _LEFT + (min(hi, max(lo, v)) - lo) / (hi - lo) * _PLOT


def _axis(height: float, ticks: Sequence[float], lo: float, hi: float) -> list[str]:
    out = []
    for v in ticks:
        x = _x(v, lo, hi)
        out.append(
            f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP - 6}" y2="{height:.1f}" />'
            f'<text class="axis" x="{x:.1f}" y="{_TOP - 10}" text-anchor="middle">{v:.3g}</text>'
        )
    return out


def _row(i: int, p: TaskPair) -> str:
    """One task: its samples (faint), its means (solid) joined by a line coloured by who is higher."""
    y = _TOP + i * _ROW + _ROW / 2
    trend = "up" if p.diff > 1e-9 else "down" if p.diff < -1e-9 else "tie"
    tip = f"{p.id}: A {p.a_mean:.2f} ({', '.join(f'{v:.3g}' for v in p.a)}), B {p.b_mean:.2f} ({', '.join(f'{v:.3g}' for v in p.b)}), B − A {p.diff:+.2f}"
    label = p.id if len(p.id) <= _LABEL else p.id[: _LABEL - 1] + "…"
    parts = [
        f'<g class="task"><title>{_e(tip)}</title>',
        f'<text class="axis" x="{_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{_e(label)}</text>',
        f'<line class="{trend}" x1="{_x(p.a_mean):.1f}" x2="{_x(p.b_mean):.1f}" y1="{y:.1f}" y2="{y:.1f}" />',
    ]
    for cls, samples, dy in (("base", p.a, -4), ("cand", p.b, 4)):
        parts += [f'<circle class="{cls} sample" cx="{_x(v):.1f}" cy="{y + dy:.1f}" r="3" />' for v in samples]
    parts.append(f'<circle class="base" cx="{_x(p.a_mean):.1f}" cy="{y:.1f}" r="5" />')
    parts.append(f'<circle class="cand" cx="{_x(p.b_mean):.1f}" cy="{y:.1f}" r="5" />')
    return "".join(parts) + "</g>"


def paired_plot(c: PairedComparison) -> str:
    """The paired dot plot: one row per task, score 0 → 1, a dashed line where a task passes."""
    height = _TOP + len(c.tasks) * _ROW + 8
    out = [
        f'<svg class="chart" viewBox="0 0 {_W} {height}" width="{_W}" height="{height}" role="img" '
        f'aria-label="paired scores of {c.n_tasks} task(s)">',
        '<text class="base" x="4" y="14" stroke="none">● A</text><text class="cand" x="40" y="14">● B</text>'
        '<text class="axis" x="76" y="14">faint: each sample; solid: the task\'s mean; dashed: pass</text>',
        *_axis(height, (0.0, 0.25, 0.5, 0.75, 1.0), 0.0, 1.0),
        f'<line class="pass" x1="{_x(c.pass_at):.1f}" x2="{_x(c.pass_at):.1f}" y1="{_TOP}" y2="{height:.1f}" />',
    ]
    out += [_row(i, p) for i, p in enumerate(c.tasks)]
    return "".join(out) + "</svg>"


def difference_plot(c: PairedComparison) -> str:
    """The mean difference B − A on −1 → 1 with its interval, and 0 marked."""
    height, y = _TOP + 30, _TOP + 12
    tip = f"B − A {c.mean_diff:+.2f}, {c.confidence:.0%} interval [{c.ci_low:.2f}, {c.ci_high:.2f}]"
    return "".join(
        [
            f'<svg class="chart" viewBox="0 0 {_W} {height}" width="{_W}" height="{height}" role="img" '
            f'aria-label="{_e(tip)}"><title>{_e(tip)}</title>',
            *_axis(height, (-1.0, -0.5, 0.0, 0.5, 1.0), -1.0, 1.0),
            f'<text class="axis" x="{_LEFT - 8}" y="{y + 4}" text-anchor="end">B − A</text>',
            f'<line class="zero" x1="{_x(0, -1, 1):.1f}" x2="{_x(0, -1, 1):.1f}" y1="{_TOP}" y2="{height}" />',
            f'<line class="ci" x1="{_x(c.ci_low, -1, 1):.1f}" x2="{_x(c.ci_high, -1, 1):.1f}" y1="{y}" y2="{y}" />',
            f'<circle class="cand" cx="{_x(c.mean_diff, -1, 1):.1f}" cy="{y}" r="5" />',
            "</svg>",
        ]
    )


def paired_page(c: PairedComparison, *, title: str, facts: Sequence[tuple[str, str]]) -> str:
    """The whole page: `title`, the verdict, `facts` (label → text) as a table, both plots, and a
    table of the tasks."""
    rows = "".join(
        f'<tr><td>{_e(p.id)}</td><td class="num">{p.a_mean:.2f}</td><td class="num">{p.b_mean:.2f}</td>'
        f'<td class="num {"up" if p.diff > 1e-9 else "down" if p.diff < -1e-9 else ""}">{p.diff:+.2f}</td>'
        f'<td class="muted">{_e(", ".join(f"{v:.3g}" for v in p.a))} | {_e(", ".join(f"{v:.3g}" for v in p.b))}</td></tr>'
        for p in c.tasks
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title>",
            f"<style>\n{_css()}{PLOT_CSS}</style></head><body>",
            f"<header><h1>{_e(title)}</h1><p><strong>{_e(c.verdict)}</strong></p>",
            "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts) + "</table></header>",
            f"<section><h2>Per task</h2>{paired_plot(c)}</section>",
            f"<section><h2>Mean difference</h2>{difference_plot(c)}</section>",
            "<section><h2>Scores</h2><table><tr><th>task</th><th>A</th><th>B</th><th>B − A</th>"
            f"<th>samples (A | B)</th></tr>{rows}</table></section>",
            "</body></html>",
        ]
    )
