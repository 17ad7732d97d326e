"""The proposal verbs of the nightly cycle: `status`, `diff`, `adopt`, `reject`, `rollback`.

Each verb returns plain data (what `--json` prints) and has a `*_text` renderer for the compact
markdown an agent shows after `/sleep <verb>`. `status` and `diff` only read: they need no
config file, no backend and no lock, and work on an empty data directory. `adopt`, `reject` and
`rollback` hold the state directory's lock (`core/lock.py`) so they never race a night; a held
lock is a `Busy` error that says who holds it.

Text that came from a model or a transcript (a gate's reason, a stop message, a skill name) is
shown as one line: escaped as markdown that cannot become markup or a link, or as it is for a
terminal (`plain`); its control characters are made visible either way (core/display.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from skillsleep.core.changes import render as render_changes
from skillsleep.core.display import fence, md_line, plain_line, visible
from skillsleep.core.errors import SkillsleepError
from skillsleep.core.ledger import Ledger
from skillsleep.core.lock import StateLock, pid_alive
from skillsleep.core.nights import NightRecord, Nights, month_start
from skillsleep.core.proposals import Proposal, Proposals, file_hash
from skillsleep.core.store import Store
from skillsleep.slash_commands.cron_log import last_run
from skillsleep.slash_commands.harvest_cmd import LAST_HARVEST
from skillsleep.slash_commands.schedulers import installed
from skillsleep.slash_commands.wiring import data_dir, state_db

Data = dict[str, Any]
Inline = Callable[[object], str]  # how one piece of untrusted text is shown: md_line or plain_line

RECENT_NIGHTS = 5  # nights shown in detail
GATE_HISTORY = 10  # nights on the gate history
RECENT_ACTIONS = 10  # lines of the action history
DIED = "died (the next `skillsleep run` resumes it, or starts a new night if the skill or settings changed)"


# --- status -------------------------------------------------------------------------------------


def night_state(r: NightRecord) -> str:
    """ "running", "finished", "stopped", or "died" for a running night whose process is gone."""
    if r.status == "running" and r.pid is not None and not pid_alive(r.pid):
        return "died"
    return r.status


def _night(r: NightRecord, spent: Ledger, nights: Nights) -> Data:
    """A night for `status`; its spend from its own ledger (the record misses a killed process's);
    a running one's progress from the files it writes as it goes."""
    state = night_state(r)
    return {
        "night": r.night,
        "date": r.started.date().isoformat(),
        "started": r.started.isoformat(),
        "finished": r.finished.isoformat() if r.finished else None,
        "status": state,
        "pid": r.pid,
        "harness": r.harness,
        "skill": r.skill_name or r.skill_path,
        "skill_path": r.skill_path,
        "dry_run": r.dry_run,
        "outcome": r.outcome,
        "baseline": r.baseline,
        "candidate": r.candidate,
        "accepted": r.accepted,
        "reason": r.reason,
        "test_before": r.test_before,
        "test_after": r.test_after,
        "proposal_id": r.proposal_id,
        "adopted": r.adopted,
        "stop": r.stop.model_dump(mode="json") if r.stop else None,
        "calls": spent.calls_made,
        "cache_hits": spent.cache_hits,
        "tokens": spent.spent_tokens,
        "cost_usd": round(spent.spent_usd, 6),
        "log": r.log,
        "progress": nights.progress(r).model_dump(mode="json") if state == "running" else None,
    }


def next_commands(p: Proposal) -> list[str]:
    """What the user can type about a pending proposal."""
    adopt = f"skillsleep adopt {p.id}" + ("" if p.accepted else " --force")
    return [f"skillsleep diff {p.id}", adopt, f"skillsleep reject {p.id}"]


def _pending(p: Proposal) -> Data:
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
    }


def _last_harvest(problems: list[str]) -> Data | None:
    db = state_db()
    if not db.is_file():  # never create the state database just to look at it
        return None
    try:
        store = Store(db)
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
                "baseline": r.baseline,
                "candidate": r.candidate,
                "accepted": r.accepted,
                "reason": r.reason,
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


def _verdict(accepted: bool, reason: str, md: Inline) -> str:
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
        so_far = f"{n['progress']['stage']}; {n['calls']} calls, {n['tokens']:,} tokens so far"
        so_far += f"; {log}" if log else ""
        return f"{head}: running" + (f" (pid {n['pid']})" if n["pid"] else "") + f"\n  {so_far}"
    parts = (
        [] if n["outcome"] in ("accepted", "rejected") else [n["outcome"] or n["status"]]
    )  # else: the verdict says it
    parts += [f"held-out {_scores(n['baseline'], n['candidate'])}", _verdict(n["accepted"], n["reason"], md)]
    if n["test_before"] is not None or n["test_after"] is not None:
        parts.append(f"test {_scores(n['test_before'], n['test_after'])}")
    if n["proposal_id"]:
        parts.append(f"proposal {n['proposal_id']}" + (" (auto-adopted)" if n["adopted"] else ""))
    line = f"{head}: " + "; ".join(parts)
    if n["stop"]:
        line += f"\n  stopped ({n['stop']['kind']}): {md(n['stop']['message'])} — {md(n['stop']['advice'])}"
    return line


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
        out += [f"### Nights ({nights['count']} run{more})", "", *(_night_line(n, md) for n in nights["recent"]), ""]
        if s["gate_history"]:
            out += ["### Gate history (held-out baseline → candidate)", ""]
            out += [
                f"- night {g['night']} · {g['date']} · {md(g['skill'])}: {_scores(g['baseline'], g['candidate'])} "
                f"{_verdict(g['accepted'], g['reason'], md)}"
                for g in s["gate_history"]
            ]
            out.append("")
    out.append(f"### Pending proposals ({len(s['pending'])})")
    out.append("")
    if not s["pending"]:
        out.append("none")
    for p in s["pending"]:
        tests = f", test {_scores(p['test_before'], p['test_after'])}" if p["test_before"] is not None else ""
        out.append(
            f"- {p['id']} for {md(p['skill_path'])}: {_verdict(p['accepted'], p['reason'], md)}; "
            f"held-out {_scores(p['baseline'], p['candidate'])}{tests}"
        )
        if p["live_changed"]:
            out.append("  the live file changed since this was staged: adopt will refuse unless --force")
        out.append("  next: " + " · ".join(f"`{c}`" for c in p["next"]))
    out.append("")
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


# --- diff and the decisions ---------------------------------------------------------------------


def diff(pid: str | None = None, data: Path | None = None) -> Data:
    """The proposal's unified diff against the live file as it is now (default: newest pending),
    and its numbered changes against the file it was staged against (what `adopt --edits` takes)."""
    props = Proposals(Path(data) if data is not None else data_dir())
    p = props.get(pid)
    found = props.changes(p)
    name = Path(p.skill_path).name
    return {
        "id": p.id,
        "skill_path": p.skill_path,
        "status": p.status,
        "accepted": p.accepted,
        "diff": props.diff(p),
        "line_endings": props.line_endings(p),
        "note": props.endings_note(p),
        "live_changed": file_hash(Path(p.skill_path)) != p.base_hash,
        "changes": [c.model_dump(mode="json") for c in found],
        "numbered": render_changes(found, f"a/{name} (staged against)", f"b/{name} (proposal {p.id})"),
    }


def diff_text(d: Data, plain: bool, prefix: str = "skillsleep") -> str:
    """The numbered changes of a proposal: plain text, or markdown with the diff fenced (`--format md`);
    `prefix` is how the user types a verb (`/sleep` in an agent)."""
    show: Inline = plain_line if plain else md_line

    def code(text: str) -> str:
        return text if plain else f"`{text}`"

    n = len(d["changes"])
    verdict = "accepted" if d["accepted"] else "not accepted"
    head = f"Proposal {code(d['id'])} ({d['status']}, {verdict}) for {show(d['skill_path'])}: "
    if not n:
        return head + "no changes."
    example = f"{prefix} adopt {d['id']} --edits {'1,3' if n > 2 else '1'}"
    some = f"; adopt only some with {code(example)}"
    lines = [head + f"{n} change(s) against the file it was staged against" + (some if n > 1 else "") + "."]
    if d["live_changed"]:
        lines.append(
            "The live file changed since: adopt refuses unless --force (`diff` without --format shows the "
            "proposal against the live file as it is now)."
        )
    if d["note"]:
        lines.append(d["note"])
    body = visible(d["numbered"].rstrip("\n"))
    return "\n".join([*lines, body] if plain else [*lines, "", fence(body) + "diff", body, fence(body)])


def adopt(pid: str | None = None, *, force: bool = False, edits: str | None = None, data: Path | None = None) -> Data:
    """Put a proposal live (default: the newest accepted pending one) under the state lock; with
    `edits` ("1,3") only those of its numbered changes."""
    root = Path(data) if data is not None else data_dir()
    props = Proposals(root)
    with StateLock(root, "adopt"):
        p = props.adopt(pid, force=force, edits=edits)
        action = next(a for a in reversed(props.history()) if a.kind == "adopt" and a.proposal_id == p.id)
    backup = Path(action.backup) if action.backup else None
    return {
        "proposal": p.model_dump(mode="json"),
        "skill_path": p.skill_path,
        "backup": str(backup) if backup else None,
        "previous_file": str(backup / "SKILL.md") if backup and (backup / "SKILL.md").exists() else None,
        "forced": action.forced or action.detail == "forced",
        "undo": "skillsleep rollback",
        "edits": action.edits,
        "changes": len(props.changes(p)),
    }


def adopted(r: Data, code: Callable[[str], str] = str) -> str:
    """ "proposal ID", or "changes 1, 3 of 4 of proposal ID" for an adopt of some of its changes
    (`code` marks up the id)."""
    which = f"proposal {code(r['proposal']['id'])}"
    if r["edits"] is None:
        return which
    return f"change{'s' if len(r['edits']) > 1 else ''} {', '.join(map(str, r['edits']))} of {r['changes']} of {which}"


def adopt_text(r: Data) -> str:
    lines = [f"adopted {adopted(r)}: wrote {r['skill_path']}"]
    if r["previous_file"]:
        lines.append(f"the previous file is backed up at {r['previous_file']}")
    else:
        lines.append(f"there was no file before (recorded in {r['backup']}); a rollback removes it")
    if r["forced"]:
        lines.append("forced over edits made since staging: they are in that backup")
    lines.append("undo with `skillsleep rollback`")
    return "\n".join(lines)


def reject(pid: str | None = None, *, data: Path | None = None) -> Data:
    """Mark a pending proposal rejected (default: the newest pending one); the live file is untouched."""
    root = Path(data) if data is not None else data_dir()
    with StateLock(root, "reject"):
        p = Proposals(root).reject(pid)
    return {"proposal": p.model_dump(mode="json"), "skill_path": p.skill_path}


def reject_text(r: Data) -> str:
    return f"rejected proposal {r['proposal']['id']} for {r['skill_path']}; the live file was not changed"


def rollback(steps: int = 1, *, force: bool = False, data: Path | None = None) -> Data:
    """Undo the last `steps` adopts/rollbacks of the most recently changed skill; `force` rolls
    back over edits made since the last of them (they are backed up first)."""
    root = Path(data) if data is not None else data_dir()
    with StateLock(root, "rollback"):
        action = Proposals(root).rollback(steps, force=force)
    assert action.skill_path is not None
    return {
        "action": action.model_dump(mode="json"),
        "skill_path": action.skill_path,
        "steps": steps,
        "restored": action.detail,
        "backup": action.backup,
        "removed": not Path(action.skill_path).exists(),
        "forced": action.forced,
    }


def rollback_text(r: Data) -> str:
    what = "removed it (it did not exist then)" if r["removed"] else r["restored"]
    forced = "\nforced over edits made since the last change: they are in that backup" if r["forced"] else ""
    return (
        f"rolled back {r['skill_path']} ({r['steps']} step(s)): {what}\n"
        f"the file as it was is backed up in {r['backup']}; `skillsleep rollback` again undoes this rollback" + forced
    )


__all__ = [
    "adopt",
    "adopt_text",
    "adopted",
    "diff",
    "diff_text",
    "night_state",
    "reject",
    "reject_text",
    "rollback",
    "rollback_text",
    "status",
    "status_text",
]
