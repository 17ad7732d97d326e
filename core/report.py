"""The night's report: one record (`NightReport`) and three pure renderers.

    render_markdown(r)  what an agent shows after `/sleep` (and report.md in the proposal)
    render_json(r)      the record as JSON with a top-level "version" (report.json)
    render_html(r)      ONE self-contained page for a person (report.html): inline CSS, an inline
                        SVG chart of the score over nights, tables, the coloured diff

`report_files(r)` returns all three, keyed by file name, for `Proposals.stage(files=...)`.

A report is written for every night, including one that stopped early (budget reached, model
server down): it then says why it stopped and what to do. Every report says the live skill was
not changed (only `adopt` writes it). Task prompts, edits, reasons and the diff come from the
user's transcripts or from a model, so they are untrusted: the HTML escapes every piece of such
text, loads nothing from anywhere (no script, font, image or URL; a Content-Security-Policy
forbids it too), and the markdown escapes the characters that would make markup or links.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from skillsleep.core.changes import Change
from skillsleep.core.changes import render as render_changes
from skillsleep.core.display import fence, md_line, plain_line, visible
from skillsleep.core.errors import BackendError, BudgetExceeded
from skillsleep.core.records import Edit, GateDecision, Record, RejectedEdit, Split, Task
from skillsleep.core.safety import Refusal

REPORT_VERSION = 1

Outcome = Literal["accepted", "rejected", "no-candidate", "stopped-early"]

# --- the record ---------------------------------------------------------------------------------


class ReportTask(Record):
    """A task the night used: what it asks (short), where it went, how often it recurred."""

    id: str
    intent: str
    split: Split | None = None
    recurrence: int = Field(default=1, ge=1)
    origin: Literal["real", "dream"] = "real"

    @classmethod
    def from_task(cls, task: Task, *, recurrence: int = 1) -> ReportTask:
        return cls(id=task.id, intent=_short(task.prompt), split=task.split, recurrence=recurrence, origin=task.origin)


class GateRejection(Record):
    """An edit the gate turned down, with the gate's reason and the score it produced."""

    edit: Edit
    reason: str
    before: float | None = None
    after: float | None = None

    @classmethod
    def from_rejected(cls, rejected: RejectedEdit, reason: str) -> GateRejection:
        return cls(edit=rejected.edit, reason=reason, before=rejected.before, after=rejected.after)


class SafetyRefusal(Record):
    """An edit the safety screen refused before the gate (see core/safety.py)."""

    edit: Edit
    rule: str
    why: str
    matched: str

    @classmethod
    def from_refusal(cls, refusal: Refusal) -> SafetyRefusal:
        return cls(edit=refusal.edit, rule=refusal.rule, why=refusal.why, matched=refusal.matched)

    def reason(self) -> str:
        return Refusal(edit=self.edit, rule=self.rule, why=self.why, matched=self.matched).reason()


class RoleUsage(Record):
    """Model calls of one role (cache hits are not calls and cost nothing)."""

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    errors: int = 0


class NightUsage(Record):
    """Calls, tokens and cost by role."""

    by_role: dict[str, RoleUsage] = Field(default_factory=dict)

    @classmethod
    def from_ledger(cls, by_role: Mapping[str, Mapping[str, float]]) -> NightUsage:
        """From `Ledger.by_role()`."""
        fields = RoleUsage.model_fields
        return cls(
            by_role={
                role: RoleUsage(**{k: (float(v) if k == "cost_usd" else int(v)) for k, v in row.items() if k in fields})
                for role, row in by_role.items()
            }
        )

    def total(self) -> RoleUsage:
        rows = self.by_role.values()
        return RoleUsage(**{k: sum(getattr(r, k) for r in rows) for k in RoleUsage.model_fields})


class StopReason(Record):
    """Why a night ended early, and what the user can do about it."""

    kind: Literal["budget", "backend", "interrupted", "error"]
    message: str
    advice: str

    @classmethod
    def from_error(cls, exc: BaseException) -> StopReason:
        message = str(exc) or type(exc).__name__
        if isinstance(exc, BudgetExceeded):
            return cls(
                kind="budget",
                message=message,
                advice="Raise the budget (--budget-tokens / --budget-usd) or let the next night go on; "
                "what was measured tonight is kept.",
            )
        if isinstance(exc, BackendError):
            return cls(
                kind="backend",
                message=message,
                advice="Check that the model server is running and reachable (`skillsleep backends` "
                "lists the configured ones), then run `skillsleep run` again.",
            )
        if isinstance(exc, KeyboardInterrupt):
            return cls(
                kind="interrupted",
                message="the night was interrupted",
                advice="Run `skillsleep run` again when you are ready.",
            )
        return cls(
            kind="error",
            message=f"{type(exc).__name__}: {message}",
            advice="Run `skillsleep run` again; if it fails the same way, report it with this file.",
        )


class SplitResult(Record):
    """A split's mean score with the live skill (before) and with the candidate (after)."""

    before: float
    after: float
    tasks: int = Field(default=0, ge=0)


class HistoryPoint(Record):
    """One night on the chart."""

    night: int
    date: dt.date
    baseline: float | None = None
    candidate: float | None = None
    accepted: bool = False


class NightReport(Record):
    """Everything one night's report shows."""

    night: int = Field(ge=1)
    started: AwareDatetime
    finished: AwareDatetime
    harness: str
    skill_path: str
    skill_name: str
    outcome: Outcome
    reason: str
    stop: StopReason | None = None
    baseline: float | None = None  # the live skill's held-out score when no candidate reached the gate
    gate: GateDecision | None = None
    test: SplitResult | None = None
    tasks: list[ReportTask] = Field(default_factory=list)
    accepted_edits: list[Edit] = Field(default_factory=list)
    rejected_edits: list[GateRejection] = Field(default_factory=list)
    refused_edits: list[SafetyRefusal] = Field(default_factory=list)
    diff: str = ""
    changes: list[Change] = Field(default_factory=list)  # the diff's changes, numbered as `adopt --edits` takes them
    usage: NightUsage = Field(default_factory=NightUsage)
    history: list[HistoryPoint] = Field(default_factory=list)  # previous nights
    problems: list[str] = Field(default_factory=list)  # model replies that could not be used, and what was done

    @field_validator("started", "finished")
    @classmethod
    def _utc(cls, value: dt.datetime) -> dt.datetime:
        return value.astimezone(dt.UTC)

    @model_validator(mode="after")
    def _consistent(self) -> NightReport:
        if (self.outcome == "stopped-early") != (self.stop is not None):
            raise ValueError("a stopped-early night needs `stop` (why and what to do), and only it has one")
        if self.outcome in ("accepted", "rejected"):
            if self.gate is None:
                raise ValueError(f"an {self.outcome} night needs the gate decision")
            if self.gate.accepted != (self.outcome == "accepted"):
                raise ValueError(
                    f"outcome {self.outcome!r} contradicts the gate decision (accepted={self.gate.accepted})"
                )
        return self

    def baseline_score(self) -> float | None:
        return self.gate.baseline if self.gate else self.baseline

    def point(self) -> HistoryPoint:
        """This night as a chart point."""
        return HistoryPoint(
            night=self.night,
            date=self.started.date(),
            baseline=self.baseline_score(),
            candidate=self.gate.candidate if self.gate else None,
            accepted=self.outcome == "accepted",
        )


def chart_points(r: NightReport) -> list[HistoryPoint]:
    """Previous nights plus this one, by night (this night replaces a history point with its number)."""
    points = {p.night: p for p in r.history}
    points[r.night] = r.point()
    return [points[n] for n in sorted(points)]


def report_files(r: NightReport) -> dict[str, str]:
    """The three report files for `Proposals.stage(files=...)`."""
    return {"report.md": render_markdown(r), "report.json": render_json(r), "report.html": render_html(r)}


# --- JSON ---------------------------------------------------------------------------------------


def render_json(r: NightReport) -> str:
    body: dict[str, Any] = {"version": REPORT_VERSION, **r.model_dump(mode="json")}
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_json(text: str) -> NightReport:
    """A report back from report.json; a report of another format version is an error."""
    body = json.loads(text)
    version = body.pop("version", None) if isinstance(body, dict) else None
    if version != REPORT_VERSION:
        raise ValueError(f"report format version {version!r} is not supported (this skillsleep reads {REPORT_VERSION})")
    return NightReport.model_validate(body)


# --- shared wording -----------------------------------------------------------------------------

_TITLE = {
    "accepted": "Accepted",
    "rejected": "Rejected by the gate",
    "no-candidate": "No candidate",
    "stopped-early": "Stopped early",
}


def next_step(r: NightReport) -> str:
    """What the user can do now (our own wording; may contain markdown code spans)."""
    if r.outcome == "accepted":
        return (
            "The candidate is staged as a proposal; the live skill was not changed. Read the diff, then "
            "adopt it with `/sleep adopt` (`skillsleep adopt`) or drop it with `/sleep reject`."
        )
    if r.outcome == "stopped-early":
        return "The live skill was not changed. This report is partial: it shows what was measured before the stop."
    return "The live skill was not changed and there is nothing to adopt."


def _short(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _score(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _change(before: float | None, after: float | None, digits: int = 3) -> str:
    if before is None or after is None:
        return ""
    return f"{after - before:+.{digits}f}"


def _when(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(r: NightReport) -> str:
    s = max(0, int((r.finished - r.started).total_seconds()))
    return f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m {s % 60:02d}s"


def _edit_text(e: Edit) -> str:
    if e.op == "add":
        return f"add “{_short(e.content or '', 200)}”" + (f" after “{_short(e.target, 80)}”" if e.target else "")
    if e.op == "delete":
        return f"delete “{_short(e.target or '', 200)}”"
    return f"replace “{_short(e.target or '', 100)}” by “{_short(e.content or '', 200)}”"


def _summary(r: NightReport) -> list[tuple[str, str]]:
    """(label, plain text) rows of the summary; the text is untrusted where it names things."""
    total = r.usage.total()
    rows = [
        ("harness", r.harness),
        ("skill", f"{r.skill_name} ({r.skill_path})"),
        ("started", _when(r.started)),
        ("finished", f"{_when(r.finished)} ({_duration(r)})"),
    ]
    if r.gate:
        rows.append(
            (
                "held-out score",
                f"{_score(r.gate.baseline)} → {_score(r.gate.candidate)} "
                f"({_change(r.gate.baseline, r.gate.candidate)})",
            )
        )
    elif r.baseline is not None:
        rows.append(("held-out score", f"{_score(r.baseline)} (no candidate)"))
    if r.test:
        rows.append(
            (
                "test split",
                f"{_score(r.test.before)} → {_score(r.test.after)} "
                f"({_change(r.test.before, r.test.after)}, {r.test.tasks} tasks)",
            )
        )
    rows.append(("tasks", _task_counts(r)))
    rows.append(
        (
            "edits",
            f"{len(r.accepted_edits)} accepted, {len(r.rejected_edits)} rejected by the gate, "
            f"{len(r.refused_edits)} refused by the safety screen",
        )
    )
    rows.append(
        (
            "model calls",
            f"{total.calls} calls, {total.cache_hits} cache hits, "
            f"{total.input_tokens:,} tokens in, {total.output_tokens:,} out, "
            f"${total.cost_usd:.4f}",
        )
    )
    return rows


def _task_counts(r: NightReport) -> str:
    parts = []
    for split in ("train", "val", "test"):
        n = sum(1 for t in r.tasks if t.split == split)
        if n:
            parts.append(f"{n} {split}")
    dreams = sum(1 for t in r.tasks if t.origin == "dream")
    text = ", ".join(parts) or "none"
    return text + (f" ({dreams} dreamed)" if dreams else "")


def _intents(r: NightReport) -> dict[str, str]:
    return {t.id: t.intent for t in r.tasks}


# --- markdown -----------------------------------------------------------------------------------


def render_markdown(r: NightReport, *, plain: bool = False) -> str:
    """The report as markdown; `plain` shows untrusted text as it is (for a terminal) instead of
    escaping it for a markdown renderer. Control characters are made visible either way."""
    md = plain_line if plain else md_line
    out = [f"# skillsleep — night {r.night}: {md(r.skill_name)}", "", f"**{_TITLE[r.outcome]}** — {md(r.reason)}", ""]
    if r.stop:
        out += [f"**Why it stopped:** {md(r.stop.message)}", "", f"**What to do:** {md(r.stop.advice)}", ""]
    out += [next_step(r), "", "| | |", "|---|---|"]
    out += [f"| {label} | {md(text)} |" for label, text in _summary(r)]
    out.append("")
    intents = _intents(r)
    if r.gate and r.gate.deltas:
        out += ["## Held-out tasks: before → after", ""]
        for d in r.gate.deltas:
            intent = f" — {md(intents[d.task_id])}" if d.task_id in intents else ""
            out.append(
                f"- {md(d.task_id)}: {_score(d.before, 2)} → {_score(d.after, 2)} "
                f"({_change(d.before, d.after, 2)}){intent}"
            )
        out.append("")
    if r.tasks:
        out += ["## Tasks used", "", "| task | intent | split | recurrence | origin |", "|---|---|---|---|---|"]
        out += [f"| {md(t.id)} | {md(t.intent)} | {t.split or '—'} | {t.recurrence} | {t.origin} |" for t in r.tasks]
        out.append("")
    out += ["## Edits", ""]
    out += _md_list(
        "Accepted", [md(_edit_text(e)) + (f" — {md(e.rationale)}" if e.rationale else "") for e in r.accepted_edits]
    )
    out += _md_list(
        "Rejected by the gate",
        [
            f"{md(_edit_text(g.edit))} — {md(g.reason)}"
            + (f" ({_score(g.before)} → {_score(g.after)})" if g.before is not None and g.after is not None else "")
            for g in r.rejected_edits
        ],
    )
    out += _md_list(
        "Refused by the safety screen (never reached the gate)",
        [f"{md(_edit_text(s.edit))} — {md(s.reason())}" for s in r.refused_edits],
    )
    out += ["## Diff against the live skill", ""]
    if r.changes:
        shown = visible(_numbered(r).rstrip("\n"))
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
    if r.problems:
        out += _md_list("Problems (the night went on without these)", [md(p) for p in r.problems])
    if r.usage.by_role:
        out += [
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
    out += ["## Score over nights", "", "| night | date | baseline | candidate | accepted |", "|---|---|---|---|---|"]
    out += [
        f"| {p.night} | {p.date.isoformat()} | {_score(p.baseline)} | {_score(p.candidate)} | "
        f"{'yes' if p.accepted else 'no'} |"
        for p in chart_points(r)
    ]
    return "\n".join(out) + "\n"


def _numbered(r: NightReport) -> str:
    """The numbered changes as a diff, one hunk per change (`@@ … @@ change N`)."""
    name = r.skill_path.replace("\\", "/").rsplit("/", 1)[-1]
    return render_changes(r.changes, f"a/{name}", f"b/{name}")


def _md_list(title: str, items: list[str]) -> list[str]:
    return [f"### {title} ({len(items)})", "", *([f"- {i}" for i in items] or ["none"]), ""]


# --- HTML ---------------------------------------------------------------------------------------

_e = html.escape

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1000px;
padding:24px;color:#1d2330;background:#fff}
h1{font-size:1.5em;margin:0 0 .3em}h2{font-size:1.15em;margin:1.8em 0 .5em;border-bottom:1px solid #dde}
h3{font-size:1em;margin:1.2em 0 .4em}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;color:#fff}
.accepted{background:#1a7f37}.rejected{background:#b35900}.no-candidate{background:#57606a}
.stopped-early{background:#b3261e}
.stop{border:1px solid #b3261e;background:#fff3f2;padding:10px 14px;border-radius:6px;margin:12px 0}
table{border-collapse:collapse;margin:6px 0;width:100%}th,td{border:1px solid #dde;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f6fa}td.num{text-align:right;white-space:nowrap}
.up{color:#1a7f37;font-weight:600}.down{color:#b3261e;font-weight:600}.muted{color:#6a7282}
pre.diff{background:#f7f8fa;border:1px solid #dde;padding:10px;overflow-x:auto;font-size:13px}
.diff .add{color:#116329;background:#dafbe1}.diff .del{color:#82071e;background:#ffebe9}
.diff .hunk{color:#6639ba}.diff .meta{color:#57606a;font-weight:600}
.diff span{display:block;white-space:pre}
svg.chart{max-width:100%;height:auto;font-size:11px}
svg .grid{stroke:#e3e6ee}svg .axis{fill:#6a7282}svg .base{stroke:#6a7282;fill:#6a7282}
svg .cand{stroke:#2f6feb;fill:#2f6feb}svg polyline{fill:none;stroke-width:2}
svg circle.ring{fill:none;stroke:#1a7f37;stroke-width:2}svg text.cand{stroke:none}
"""


def render_html(r: NightReport) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>skillsleep night {r.night}: {_e(r.skill_name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header>",
        f"<h1>skillsleep — night {r.night}: {_e(r.skill_name)}</h1>",
        f'<p><span class="badge {r.outcome}">{_e(_TITLE[r.outcome])}</span> {_e(r.reason)}</p>',
    ]
    if r.stop:
        parts.append(
            f'<div class="stop"><p><strong>Why it stopped:</strong> {_e(r.stop.message)}</p>'
            f"<p><strong>What to do:</strong> {_e(r.stop.advice)}</p></div>"
        )
    parts.append(f"<p>{_code_spans(next_step(r))}</p>")
    parts.append(
        "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in _summary(r)) + "</table></header>"
    )
    parts += ["<section><h2>Score over nights</h2>", render_chart(chart_points(r)), "</section>"]
    parts.append(_html_deltas(r))
    parts.append(_html_tasks(r))
    parts.append(_html_edits(r))
    parts += [
        "<section><h2>Diff against the live skill</h2>",
        _html_diff(_numbered(r) if r.changes else r.diff),
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


def _html_deltas(r: NightReport) -> str:
    if not r.gate:
        return ""
    intents = _intents(r)
    rows = [
        f"<tr><td>{_e(d.task_id)}</td><td>{_e(intents.get(d.task_id, ''))}</td>"
        + _num(_score(d.before, 2))
        + _num(_score(d.after, 2))
        + _num(_change(d.before, d.after, 2), _trend(d.before, d.after))
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
            f"<p>Test split ({r.test.tasks} tasks): {_score(r.test.before)} → {_score(r.test.after)} "
            f'<span class="{_trend(r.test.before, r.test.after)}">'
            f"({_change(r.test.before, r.test.after)})</span></p>"
        )
    out.append("</section>")
    return "\n".join(out)


def _html_tasks(r: NightReport) -> str:
    rows = [
        f"<tr><td>{_e(t.id)}</td><td>{_e(t.intent)}</td><td>{_e(t.split or '—')}</td>"
        f"{_num(str(t.recurrence))}<td>{_e(t.origin)}</td></tr>"
        for t in r.tasks
    ]
    return (
        "<section><h2>Tasks used</h2>"
        + _table(("task", "intent", "split", "recurrence", "origin"), rows)
        + "</section>"
    )


def _edit_cells(e: Edit) -> str:
    return f"<td>{_e(e.op)}</td><td>{_e(e.target or '')}</td><td>{_e(e.content or '')}</td>"


def _html_edits(r: NightReport) -> str:
    accepted = [f"<tr>{_edit_cells(e)}<td>{_e(e.rationale)}</td>{_num(str(e.support))}</tr>" for e in r.accepted_edits]
    rejected = [
        f"<tr>{_edit_cells(g.edit)}<td>{_e(g.reason)}</td>"
        + _num(f"{_score(g.before)} → {_score(g.after)}" if g.before is not None and g.after is not None else "")
        + "</tr>"
        for g in r.rejected_edits
    ]
    refused = [
        f"<tr>{_edit_cells(s.edit)}<td>{_e(s.rule)}</td><td>refused before the gate: {_e(s.why)}</td>"
        f"<td><code>{_e(s.matched)}</code></td></tr>"
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


def _html_usage(r: NightReport) -> str:
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
            f"night {p.night} ({p.date.isoformat()}): baseline {_score(p.baseline)}, "
            f"candidate {_score(p.candidate)}{', accepted' if p.accepted else ''}"
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
