"""`skillsleep compare`'s result as text, markdown and a self-contained HTML page, all from the one
`CompareResult` (compare_runner.py). Task ids come from the user's task file: escaped as markdown,
shown as they are in plain text, escaped in HTML."""

from __future__ import annotations

from pathlib import Path

from skillsleep.core.report.paired_html import paired_page
from skillsleep.core.shared.display import counted, md_line, plain_line
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.train.paired import PairedComparison
from skillsleep.slash_commands.compare_runner import CompareResult


def _cell(mean: float, samples: list[float]) -> str:
    """A task's score under one skill: its mean, and its samples when there are several."""
    return f"{mean:.2f}" + (f" ({', '.join(f'{v:.3g}' for v in samples)})" if len(samples) > 1 else "")


def _rows(c: PairedComparison, plain: bool) -> list[str]:
    """The per-task table: aligned columns in plain text, a markdown table otherwise."""
    show = plain_line if plain else md_line
    cells = [(show(p.id), _cell(p.a_mean, p.a), _cell(p.b_mean, p.b), f"{p.diff:+.2f}") for p in c.tasks]
    if not plain:
        return ["| task | A | B | B − A |", "|---|---|---|---|", *(f"| {' | '.join(row)} |" for row in cells)]
    head = ("task", "A", "B", "B − A")
    widths = [max(len(row[i]) for row in [head, *cells]) for i in range(4)]
    return [
        "  "
        + "  ".join(f"{v:<{w}}" if i == 0 else f"{v:>{w}}" for i, (v, w) in enumerate(zip(row, widths, strict=True)))
        for row in [head, *cells]
    ]


def interval_line(c: PairedComparison) -> str:
    """The mean difference and how its interval was made."""
    how = (
        f"paired bootstrap over tasks, seed {c.seed}"
        if c.ci_method == "bootstrap"
        else "every task's difference is the same: nothing to resample"
    )
    return (
        f"mean A {c.a_mean:.2f}, B {c.b_mean:.2f}: B − A {c.mean_diff:+.2f}, {c.confidence:.0%} interval "
        f"[{c.ci_low:.2f}, {c.ci_high:.2f}] ({how})"
    )


def stats_lines(c: PairedComparison) -> list[str]:
    """The statistics under the table, one line each."""
    return [
        interval_line(c),
        f"wins / ties / losses (B against A): {c.wins} / {c.ties} / {c.losses}",
        f"McNemar on pass/fail (a task passes when its mean is ≥ {c.pass_at:g}): {counted(c.b_only, 'task')} "
        f"pass only with B, {c.a_only} only with A; exact p = {c.mcnemar_p:.3f}",
        f"repeatability: {c.repeatability.note}",
    ]


def failed_line(r: CompareResult) -> str:
    """How many runs failed, each scored 0, and the first one's error ("" when none failed)."""
    if r.error is None:
        return ""
    runs = r.comparison.n_tasks * r.samples
    return f"failed runs, each scored 0: A {r.failed_a} of {runs}, B {r.failed_b} of {runs}; the first: {r.error}"


def compare_text(r: CompareResult, plain: bool) -> str:
    """The comparison: the verdict, what ran, the per-task table, the statistics and the cost."""
    show = plain_line if plain else md_line
    c = r.comparison
    bullet = "" if plain else "- "
    out = [
        c.verdict if plain else f"**{c.verdict}**",
        "",
        f"{bullet}A: {show(r.a)}",
        f"{bullet}B: {show(r.b)}",
        f"{bullet}on {show(r.tasks)}: {counted(c.n_tasks, 'task')} × {counted(r.samples, 'sample')}, harness "
        f"{r.harness}, metric {r.metric}",
        *([f"{bullet}{show(failed_line(r))}"] if r.error else []),
        "",
        *_rows(c, plain),
        "",
        *(f"{bullet}{line}" for line in stats_lines(c)),
        "",
        f"{counted(r.calls_made, 'model call')}, {r.cache_hits} from the cache, {r.tokens:,} tokens, ${r.cost_usd:.4f}",
    ]
    if r.html:
        out.append(f"HTML: {show(r.html)}")
    return "\n".join(out)


def compare_html(r: CompareResult) -> str:
    """The comparison as one self-contained HTML page with a paired dot plot per task."""
    c = r.comparison
    facts = [
        ("A", r.a),
        ("B", r.b),
        ("tasks", f"{r.tasks}: {counted(c.n_tasks, 'task')} × {counted(r.samples, 'sample')}"),
        ("harness, metric", f"{r.harness}, {r.metric}"),
        *([("failed runs", failed_line(r).partition(": ")[2])] if r.error else []),
        *((line.partition(":")[0], line.partition(":")[2].strip()) for line in stats_lines(c)[1:]),
        ("difference", interval_line(c)),
        ("cost", f"{counted(r.calls_made, 'model call')}, {r.cache_hits} from the cache, {r.tokens:,} tokens"),
    ]
    return paired_page(c, title="skillsleep compare: B against A", facts=facts)


def write_html(path: Path, page: str) -> None:
    """The page at `path`; one that cannot be written is an error naming it."""
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"--html {path}: cannot write it ({exc.strerror}); give a file in a folder you may write"
        ) from None
