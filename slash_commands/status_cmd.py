"""`skillsleep status`: nights, gate history, pending proposals, recent actions, last harvest, spend,
schedule, problems. It only reads: it needs no config file, no backend and no lock, and works on an
empty data directory.

Text that came from a model or a transcript (a gate's reason, a stop message, a skill name) is
shown as one line: escaped as markdown that cannot become markup or a link, or as it is for a
terminal (`plain`); its control characters are made visible either way (core/shared/display.py).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillsleep.core.shared.display import counted, md_line, plain_line
from skillsleep.core.shared.errors import SkillsleepError
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import Data, Inline, output_options, resolve, show

if TYPE_CHECKING:
    from skillsleep.core.models.ledger import Ledger
    from skillsleep.core.night.nights import Nights
    from skillsleep.core.night.record import NightRecord
    from skillsleep.core.report.proposal_record import Proposal

__all__ = ["status", "status_", "status_text"]


RECENT_NIGHTS = 5  # nights shown in detail
GATE_HISTORY = 10  # nights on the gate history
RECENT_ACTIONS = 10  # lines of the action history
DIED = "died (the next `skillsleep run` resumes it, or starts a new night if the skill or settings changed)"


def _night(r: NightRecord, spent: Ledger, nights: Nights) -> Data:
    """A night for `status`; its spend from its own ledger (the record misses a killed process's);
    a running one's progress from the files it writes as it goes."""
    from skillsleep.core.night.record import NightSpend
    from skillsleep.slash_commands.liveness import night_state

    state, end = night_state(r), r.end
    return {
        "night": r.night,
        "date": r.started.date().isoformat(),
        "started": r.started.isoformat(),
        "finished": end.finished.isoformat() if end.finished else None,
        "status": state,
        "pid": r.pid,
        "harness": r.harness,
        "skill": r.skill_name or r.skill_path,
        "skill_path": r.skill_path,
        "dry_run": r.dry_run,
        "outcome": end.outcome,
        "baseline": end.baseline,
        "candidate": end.candidate,
        "accepted": end.accepted,
        "reason": end.reason,
        "test_before": end.test_before,
        "test_after": end.test_after,
        "proposal_id": end.proposal_id,
        "adopted": end.adopted,
        "stop": end.stop.model_dump(mode="json") if end.stop else None,
        **NightSpend.of(spent).model_dump(),
        "log": r.log,
        "progress": nights.progress(r).model_dump(mode="json") if state == "running" else None,
    }


def next_commands(p: Proposal) -> list[str]:
    """What the user can type about a pending proposal."""
    adopt = f"skillsleep adopt {p.id}" + ("" if p.accepted else " --force")
    return [f"skillsleep diff {p.id}", adopt, f"skillsleep reject {p.id}"]


def _pending(p: Proposal) -> Data:
    from skillsleep.core.report.proposal_record import file_hash
    from skillsleep.core.report.wording import no_agent_reads

    return {
        "id": p.id,
        "created": p.created.isoformat(),
        "skill_path": p.skill_path,
        "night": p.night,
        "accepted": p.accepted,
        "reason": p.reason,
        "baseline": p.baseline_score,
        "candidate": p.candidate_score,
        "test_before": p.test_before,
        "test_after": p.test_after,
        "live_changed": file_hash(Path(p.skill_path)) != p.base_hash,
        "next": next_commands(p),
        "note": no_agent_reads(str(p.details.get("harness", "")), bool(p.details.get("managed"))),
    }


def _last_harvest(problems: list[str]) -> Data | None:
    from skillsleep.core.models.store import Store
    from skillsleep.slash_commands.harvester import LAST_HARVEST
    from skillsleep.slash_commands.wiring import state_db

    db = state_db()
    if not db.is_file():  # never create the state database just to look at it
        return None
    try:
        store = Store(db, readonly=True)
        try:
            raw = store.meta(LAST_HARVEST)
        finally:
            store.close()
    except SkillsleepError as exc:  # a damaged or unusable database is one of the problems status lists
        problems.append(str(exc))
        return None
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    problems.append(f"the last harvest's record in {db} cannot be read; the next `skillsleep harvest` rewrites it")
    return None


def status(data: Path | None = None, *, now: datetime | None = None) -> Data:
    """Nights, gate history, pending proposals, recent actions, last harvest, spend, problems."""
    from skillsleep.core.night.nights import Nights, month_start
    from skillsleep.core.report.proposals import Proposals
    from skillsleep.slash_commands.cron_log import last_run
    from skillsleep.slash_commands.schedulers import installed
    from skillsleep.slash_commands.wiring import data_dir

    root = Path(data) if data is not None else data_dir()
    nights, props = Nights(root), Proposals(root)
    records = nights.list()
    problems = list(nights.problems) + nights.memory_problems()
    proposals = props.list()
    problems += props.problems
    actions = props.history()
    problems += props.history_problems()
    month = month_start(now)
    month_tokens, month_cost = nights.spend_since(month)
    recent = [_night(r, nights.ledger(r.night), nights) for r in records[-RECENT_NIGHTS:]]
    scheduled, schedule_problems = installed()  # the crontab, systemd timers: read, never written
    problems += schedule_problems
    last = last_run(root)
    return {
        "data_dir": str(root),
        "nights": {"count": len(records), "recent": recent},
        "gate_history": [
            {
                "night": r.night,
                "date": r.started.date().isoformat(),
                "skill": r.skill_name or r.skill_path,
                "baseline": r.end.baseline,
                "candidate": r.end.candidate,
                "accepted": r.end.accepted,
                "dry_run": r.dry_run,
                "reason": r.end.reason,
            }
            for r in records
            if r.status != "running"
        ][-GATE_HISTORY:],
        "pending": [_pending(p) for p in proposals if p.status == "staged"],
        "actions": [a.model_dump(mode="json") for a in actions[-RECENT_ACTIONS:]],
        "last_harvest": _last_harvest(problems),
        "spend": {
            "night": {k: recent[-1][k] for k in ("night", "tokens", "cost_usd")} if recent else None,
            "month": {"since": month.isoformat(), "tokens": month_tokens, "cost_usd": float(month_cost)},
        },
        "schedule": {
            "scheduled": [x.model_dump() for x in scheduled],
            "last_run": last.model_dump(mode="json") if last else None,
        },
        "problems": problems,
    }


def _score(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _scores(before: float | None, after: float | None) -> str:
    return f"{_score(before)} → {_score(after)}"


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


def _night_line(n: Data, md: Inline) -> str:
    head = f"- night {n['night']} · {n['date']} · {md(n['harness'])} · {md(n['skill'])}"
    if n["dry_run"]:
        head += " (dry run)"
    log = f"log: {md(n['log'])}" if n["log"] else ""
    if n["status"] == "died":
        return f"{head}: {DIED}" + (f"\n  {log}" if log else "")
    if n["status"] == "running":
        so_far = f"{n['progress']['stage']}; {counted(n['calls'], 'call')}, {n['tokens']:,} tokens so far"
        so_far += f"; {log}" if log else ""
        return f"{head}: running" + (f" (pid {n['pid']})" if n["pid"] else "") + f"\n  {so_far}"
    parts = (
        [] if n["outcome"] in ("accepted", "rejected") else [n["outcome"] or n["status"]]
    )  # else: the verdict says it
    verdict = _verdict(n["accepted"], n["reason"], md, dry_run=n["dry_run"])
    parts += [f"held-out {_scores(n['baseline'], n['candidate'])}", verdict]
    if n["test_before"] is not None or n["test_after"] is not None:
        parts.append(f"test {_scores(n['test_before'], n['test_after'])}")
    if n["proposal_id"]:
        parts.append(f"proposal {n['proposal_id']}" + (" (auto-adopted)" if n["adopted"] else ""))
    line = f"{head}: " + "; ".join(parts)
    if n["stop"]:
        line += f"\n  stopped ({n['stop']['kind']}): {md(n['stop']['message'])} — {md(n['stop']['advice'])}"
    return line


def _pending_lines(pending: list[Data], md: Inline) -> list[str]:
    """The pending proposals: each with its verdict, scores, what to type next and what to know first."""
    out = [] if pending else ["none"]
    for p in pending:
        tests = f", test {_scores(p['test_before'], p['test_after'])}" if p["test_before"] is not None else ""
        out.append(
            f"- {p['id']} for {md(p['skill_path'])}: {_verdict(p['accepted'], p['reason'], md)}; "
            f"held-out {_scores(p['baseline'], p['candidate'])}{tests}"
        )
        if p["live_changed"]:
            out.append("  the live file changed since this was staged: adopt will refuse unless --force")
        out.append("  next: " + " · ".join(f"`{c}`" for c in p["next"]))
        if p["note"]:
            out.append(f"  {p['note']}")
    return out


def status_text(s: Data, *, plain: bool = False) -> str:
    """The status as markdown for an agent; `plain` (a terminal) shows untrusted text as it is
    instead of escaping it. Control characters are made visible either way."""
    md: Inline = plain_line if plain else md_line
    nights = s["nights"]
    out = ["## skillsleep status", ""]
    if not nights["count"]:
        out += ["no nights yet; run `skillsleep run`", ""]
    else:
        shown = len(nights["recent"])
        more = f", the last {shown} shown" if shown < nights["count"] else ""
        out += [
            f"### Nights ({counted(nights['count'], 'night')} so far{more})",
            "",
            *(_night_line(n, md) for n in nights["recent"]),
            "",
        ]
        if s["gate_history"]:
            out += ["### Gate history (held-out baseline → candidate)", ""]
            out += [
                f"- night {g['night']} · {g['date']} · {md(g['skill'])}: {_scores(g['baseline'], g['candidate'])} "
                f"{_verdict(g['accepted'], g['reason'], md, dry_run=g['dry_run'])}"
                for g in s["gate_history"]
            ]
            out.append("")
    out += [f"### Pending proposals ({len(s['pending'])})", "", *_pending_lines(s["pending"], md), ""]
    if s["actions"]:
        out += ["### Recent actions", ""]
        for a in s["actions"]:
            what = a["proposal_id"] or (Path(a["skill_path"]).name if a["skill_path"] else "")
            detail = f" — {md(a['detail'])}" if a["detail"] else ""
            out.append(f"- {_when(a['time'], md)} {a['kind']} {md(what)}{detail}")
        out.append("")
    h = s["last_harvest"]
    if h is None:
        out.append("last harvest: never (`skillsleep harvest` reads new transcripts)")
    else:
        sessions = ", ".join(f"{md(k)} {v}" for k, v in (h.get("sessions") or {}).items()) or "none"
        out.append(
            f"last harvest: {_when(str(h.get('time', '?')), md)}; new sessions: {sessions}; errors {h.get('errors', 0)}"
        )
    night, month = s["spend"]["night"], s["spend"]["month"]
    tonight = f"night {night['night']} {night['tokens']:,} tokens ${night['cost_usd']:.4f}" if night else "no night yet"
    out.append(f"spend: {tonight}; this month {month['tokens']:,} tokens ${month['cost_usd']:.4f}")
    out.append(_schedule_line(s["schedule"], md))
    if s["problems"]:
        out += ["", f"### Problems ({len(s['problems'])})", ""]
        out += [f"- {md(p)}" for p in s["problems"]]
    return "\n".join(out)


def _schedule_line(s: Data, md: Inline) -> str:
    """ "scheduled: 03:00 daily via crontab — last ran 2026-12-01 03:00 UTC (accepted)"."""
    where = "; ".join(f"{x['when']} via {x['via']}" for x in s["scheduled"]) or "nothing"
    last = s["last_run"]
    if last is None:
        return f"scheduled: {where}" + (
            " — never ran yet"
            if s["scheduled"]
            else " (`skillsleep schedule --at 03:00` runs the night every day by itself)"
        )
    if last["outcome"] == "unfinished":
        what = "no end line yet: still running, or it was killed"
    elif last["outcome"] == "skipped":
        what = f"skipped: {md(last['message'])}"
    elif last["exit"]:  # failed or stopped early: the script's one line says why
        what = f"{md(last['message'] or last['outcome'])}; exit {last['exit']}"
    else:
        what = last["outcome"]
    when = _when(last["started"], md) if last["started"] else "at an unknown time"
    return f"scheduled: {where} — last ran {when} ({what})"


@click.command("status")
@output_options("Print the status as one JSON object.")
@guard(state="read")
def status_(as_json: bool, fmt: str | None) -> None:
    """Nights run, gate history, pending proposals, recent actions, last harvest, spend, problems.

    Reads only: needs no config file, backend or lock."""
    from skillsleep.slash_commands import agent_md

    out = resolve(fmt, as_json)
    show(status(), out, lambda s, plain: status_text(s, plain=plain), agent_md.status_md)
