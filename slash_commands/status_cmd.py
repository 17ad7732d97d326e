"""`skillsleep status`: the click command and the status as text; what it reports is
status_report.py's `StatusResult`, its markdown agent_md.py's `status_md`.

Text that came from a model or a transcript (a gate's reason, a stop message, a skill name) is
shown as one line: escaped as markdown that cannot become markup or a link, or as it is for a
terminal (`plain`); its control characters are made visible either way (core/shared/display.py).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillsleep.core.shared.display import counted, md_line, plain_line
from skillsleep.slash_commands.agent_md import SEVERAL, skills_of
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import Inline, output_options, resolve, show

if TYPE_CHECKING:
    from skillsleep.slash_commands.status_report import NightSeen, PendingProposal, ScheduleSeen, StatusResult

__all__ = ["status_", "status_text"]


DIED = "died (the next `skillsleep run` resumes it, or starts a new night if the skill or settings changed)"


def _score(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _scores(before: float | None, after: float | None) -> str:
    return f"{_score(before)} → {_score(after)}"


def _paired(short: str) -> str:
    """The held-out paired difference beside the scores: " (paired +0.31 [0.12, 0.50], p = 0.008, 6 tasks ×
    1 sample)"; nothing for a night recorded before it was kept (core/report/evidence.py)."""
    return f" (paired {short})" if short else ""


def _label(label: str, md: Inline) -> str:
    """ "; validated" or "; suggestion — not validated" after a verdict ("" without one)."""
    return f"; {md(label)}" if label else ""


def _when(iso: str, md: Inline) -> str:
    try:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return md(iso)


def _verdict(accepted: bool, reason: str, md: Inline, *, dry_run: bool = False) -> str:
    if dry_run:  # the gate's words, but nothing was staged
        return "dry run, nothing staged" + (f" ({md(reason)})" if reason else "")
    if accepted:
        return "accepted" + (f" ({md(reason)})" if reason else "")
    return "not accepted" + (f": {md(reason)}" if reason else "")


def _night_line(n: NightSeen, md: Inline) -> str:
    head = f"- night {n.night} · {n.date} · {md(n.harness)} · {md(n.skill)}"
    if n.dry_run:
        head += " (dry run)"
    log = f"log: {md(n.log)}" if n.log else ""
    if n.status == "died":
        return f"{head}: {DIED}" + (f"\n  {log}" if log else "")
    if n.status == "running":
        stage = n.progress.stage if n.progress else ""
        so_far = f"{stage}; {counted(n.spend.calls, 'call')}, {n.spend.tokens:,} tokens so far"
        so_far += f"; {log}" if log else ""
        return f"{head}: running" + (f" (pid {n.pid})" if n.pid else "") + f"\n  {so_far}"
    parts = (
        [] if n.end.outcome in ("accepted", "rejected") else [n.end.outcome or n.status]
    )  # else: the verdict says it
    verdict = _verdict(n.end.accepted, n.end.reason, md, dry_run=n.dry_run)
    from skillsleep.core.report.evidence import label_text

    parts += [f"held-out {_scores(n.end.baseline, n.end.candidate)}{_paired(n.end.paired)}", verdict]
    if label := label_text(n.end.validated, n.end.outcome, n.end.validation):
        parts.append(md(label))
    if n.end.test_before is not None or n.end.test_after is not None:
        parts.append(f"test {_scores(n.end.test_before, n.end.test_after)}")
    if n.end.proposal_id:
        parts.append(f"proposal {n.end.proposal_id}" + (" (auto-adopted)" if n.end.adopted else ""))
    line = f"{head}: " + "; ".join(parts)
    if n.end.stop:
        line += f"\n  stopped ({n.end.stop.kind}): {md(n.end.stop.message)} — {md(n.end.stop.advice)}"
    return line


def _pending_lines(pending: list[PendingProposal], md: Inline) -> list[str]:
    """The pending proposals: each with its verdict, scores, what to type next and what to know first."""
    out = [] if pending else ["none"]
    several = len(skills_of(pending)) > 1  # then each line starts with its skill's name
    for p in sorted(pending, key=lambda p: (p.skill, p.skill_path)) if several else pending:
        tests = f", test {_scores(p.test_before, p.test_after)}" if p.test_before is not None else ""
        out.append(
            f"- {f'{md(p.skill)}: ' if several else ''}{p.id} for {md(p.skill_path)}: {_verdict(p.accepted, p.reason, md)}; "
            f"held-out {_scores(p.baseline, p.candidate)}{_paired(p.paired)}{tests}{_label(p.label, md)}"
        )
        if p.live_changed:
            out.append("  the live file changed since this was staged: adopt will refuse unless --force")
        out.append("  next: " + " · ".join(f"`{c}`" for c in p.next))
        if p.note:
            out.append(f"  {p.note}")
    if several:
        out += ["", SEVERAL.format(prefix="skillsleep")]
    return out


def _nights_lines(s: StatusResult, md: Inline) -> list[str]:
    """The recent nights, then the gate history."""
    nights = s.nights
    if not nights.count:
        return ["no nights yet; run `skillsleep run`", ""]
    shown = len(nights.recent)
    more = f", the last {shown} shown" if shown < nights.count else ""
    out = [
        f"### Nights ({counted(nights.count, 'night')} so far{more})",
        "",
        *(_night_line(n, md) for n in nights.recent),
        "",
    ]
    if s.gate_history:
        out += ["### Gate history (held-out baseline → candidate)", ""]
        out += [
            f"- night {g.night} · {g.date} · {md(g.skill)}: {_scores(g.baseline, g.candidate)}{_paired(g.paired)} "
            f"{_verdict(g.accepted, g.reason, md, dry_run=g.dry_run)}{_label(g.label, md)}"
            for g in s.gate_history
        ]
        out.append("")
    return out


def status_text(s: StatusResult, *, plain: bool = False) -> str:
    """The status as markdown for an agent; `plain` (a terminal) shows untrusted text as it is
    instead of escaping it. Control characters are made visible either way."""
    md: Inline = plain_line if plain else md_line
    out = ["## skillsleep status", "", *_nights_lines(s, md)]
    if s.fanout is not None:
        from skillsleep.slash_commands.status_fanout import fanout_status_lines

        out += fanout_status_lines(s.fanout, md)
    out += [f"### Pending proposals ({len(s.pending)})", "", *_pending_lines(s.pending, md), ""]
    if s.actions:
        out += ["### Recent actions", ""]
        for a in s.actions:
            what = a.proposal_id or (Path(a.skill_path).name if a.skill_path else "")
            detail = f" — {md(a.detail)}" if a.detail else ""
            out.append(f"- {_when(a.time.isoformat(), md)} {a.kind} {md(what)}{detail}")
        out.append("")
    h = s.last_harvest
    if h is None:
        out.append("last harvest: never (`skillsleep harvest` reads new transcripts)")
    else:
        sessions = ", ".join(f"{md(k)} {v}" for k, v in h.sessions.items()) or "none"
        out.append(f"last harvest: {_when(h.time, md)}; new sessions: {sessions}; errors {h.errors}")
    night, month = s.spend.night, s.spend.month
    tonight = f"night {night.night} {night.tokens:,} tokens ${night.cost_usd:.4f}" if night else "no night yet"
    out.append(f"spend: {tonight}; this month {month.tokens:,} tokens ${month.cost_usd:.4f}")
    out.append(_schedule_line(s.schedule, md))
    if s.next_night is not None:
        from skillsleep.slash_commands.next_night import next_night_line

        out.append(md(next_night_line(s.next_night)))
    if s.problems:
        out += ["", f"### Problems ({len(s.problems)})", ""]
        out += [f"- {md(p)}" for p in s.problems]
    return "\n".join(out)


def _schedule_line(s: ScheduleSeen, md: Inline) -> str:
    """ "scheduled: 03:00 daily via crontab — last ran 2026-12-01 03:00 UTC (accepted)"."""
    where = "; ".join(f"{x.when} via {x.via}" for x in s.scheduled) or "nothing"
    last = s.last_run
    if last is None:
        return f"scheduled: {where}" + (
            " — never ran yet"
            if s.scheduled
            else " (`skillsleep schedule --at 03:00` runs the night every day by itself)"
        )
    if last.outcome == "unfinished":
        what = "no end line yet: still running, or it was killed"
    elif last.outcome == "skipped":
        what = f"skipped: {md(last.message)}"
    elif last.exit:  # failed or stopped early: the script's one line says why
        what = f"{md(last.message or last.outcome)}; exit {last.exit}"
    else:
        what = last.outcome
    when = _when(last.started.isoformat(), md) if last.started else "at an unknown time"
    return f"scheduled: {where} — last ran {when} ({what})"


@click.command("status")
@click.argument("skill", metavar="[SKILL]", required=False)
@output_options("Print the status as one JSON object.")
@guard(state="read")
def status_(skill: str | None, as_json: bool, fmt: str | None) -> None:
    """Nights run, gate history, pending proposals, recent actions, last harvest, spend, problems;
    SKILL: the nights, proposals and actions of that skill only.

    Reads only: needs no config file, backend or lock."""
    from skillsleep.slash_commands import agent_md
    from skillsleep.slash_commands.status_report import status

    out = resolve(fmt, as_json)
    show(status(skill=skill), out, lambda s, plain: status_text(s, plain=plain), agent_md.status_md)
