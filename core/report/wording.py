"""What the markdown and the HTML report say alike: the title, the next step, the summary rows,
an edit in words, scores and their changes. Plain text; each renderer escapes it its own way."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from skillsleep.core.report.changes import render as render_changes
from skillsleep.core.report.evidence import short_text
from skillsleep.core.report.result import NightResult, short
from skillsleep.core.shared.display import counted
from skillsleep.core.shared.records import Edit

TITLE = {
    "accepted": "Accepted",
    "rejected": "Rejected by the gate",
    "no-candidate": "No candidate",
    "stopped-early": "Stopped early",
}


def title(r: NightResult) -> str:
    """The verdict's title; a dry run says so."""
    return TITLE[r.outcome] + (" (dry run)" if r.dry_run else "")


def no_agent_reads(harness: str, managed: bool) -> str:
    """What to know before adopting a skill no agent loads (the managed skill of the chat harness,
    the default of `skillsleep run`), and how to train one an agent does; "" for any other skill."""
    if harness != "chat" or not managed:
        return ""
    return (
        "No agent reads this skill: it is the chat harness's own learned skill (the default of "
        "`skillsleep run`), kept in skillsleep's data folder. To train a skill your agent loads, run "
        "`skillsleep run --harness claude-code` (or `codex`, `openclaw`; `[sleep] harness` in config.toml "
        "makes it the default), and `skillsleep install` to type `/sleep` in the agent."
    )


def next_step(r: NightResult) -> str:
    """What the user can do now, as it happened (our own wording; may contain markdown code spans)."""
    if r.dry_run:
        return _dry_step(r)
    if r.adopted:
        return (
            "The gate accepted the candidate and `--auto-adopt` put it live: the live skill was changed (the "
            "file as it was is backed up; `/sleep rollback` (`skillsleep rollback`) undoes it)."
        )
    if r.adopt_error:
        return (
            "The candidate is staged as a proposal; `--auto-adopt` did not put it live (the run's output and "
            "`adopt_error` in report.json say why), so the live skill was not changed. Read the diff, then adopt "
            "it with `/sleep adopt` (`skillsleep adopt`) or drop it with `/sleep reject`."
        )
    if r.outcome == "accepted":
        unread = no_agent_reads(r.harness, r.managed)
        return (
            "The candidate is staged as a proposal; the live skill was not changed. Read the diff, then "
            "adopt it with `/sleep adopt` (`skillsleep adopt`) or drop it with `/sleep reject`."
        ) + (f" {unread}" if unread else "")
    if r.outcome == "stopped-early":
        return "The live skill was not changed. This report is partial: it shows what was measured before the stop."
    if r.outcome == "rejected" and r.diff.strip():
        return (
            "The gate did not accept the candidate; the live skill was not changed. It is staged as a proposal "
            "only to look at: `/sleep diff` shows it, `/sleep reject` drops it."
        )
    return "The live skill was not changed and there is nothing to adopt."


def _dry_step(r: NightResult) -> str:
    done = (
        "A dry run: nothing was staged, no chat log was written and nothing was remembered for the next night "
        "(rejected edits, notes, task splits); the live skill was not changed."
    )
    if r.outcome == "accepted":
        return done + " The gate accepted the candidate: run `skillsleep run` without `--dry-run` to stage it."
    if r.outcome == "stopped-early":
        return done + " This report is partial: it shows what was measured before the stop."
    return done


def score_text(v: float | None, digits: int = 3) -> str:
    """A score, or a dash when there is none."""
    return "—" if v is None else f"{v:.{digits}f}"


def change_text(before: float | None, after: float | None, digits: int = 3) -> str:
    """The signed change from `before` to `after` ("" when one is missing)."""
    if before is None or after is None:
        return ""
    return f"{after - before:+.{digits}f}"


def time_text(t: dt.datetime) -> str:
    """A time as the report shows it (the record keeps UTC)."""
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def duration_text(r: NightResult) -> str:
    """How long the night ran: "12m 03s", "1h 05m"."""
    s = max(0, int((r.finished - r.started).total_seconds()))
    return f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m {s % 60:02d}s"


def edit_text(e: Edit) -> str:
    """An edit in words: add “…” after “…”, delete “…”, replace “…” by “…”."""
    if e.op == "add":
        return f"add “{short(e.content or '', 200)}”" + (f" after “{short(e.target, 80)}”" if e.target else "")
    if e.op == "delete":
        return f"delete “{short(e.target or '', 200)}”"
    return f"replace “{short(e.target or '', 100)}” by “{short(e.content or '', 200)}”"


def summary_rows(r: NightResult) -> list[tuple[str, str]]:
    """(label, plain text) rows of the summary; the text is untrusted where it names things."""
    total = r.usage.total()
    rows = [
        ("harness", r.harness),
        ("skill", f"{r.skill_name} ({r.skill_path})"),
        ("started", time_text(r.started)),
        ("finished", f"{time_text(r.finished)} ({duration_text(r)})"),
    ]
    if r.requires:
        rows.append(("the gate requires", r.requires))
    if r.gate:
        rows.append(
            (
                "held-out score",
                f"{score_text(r.gate.baseline)} → {score_text(r.gate.candidate)} "
                f"({change_text(r.gate.baseline, r.gate.candidate)})",
            )
        )
    elif r.baseline is not None:
        rows.append(("held-out score", f"{score_text(r.baseline)} (no candidate)"))
    if r.paired:
        rows.append(("held-out paired difference", f"{short_text(r.paired)} (candidate − live skill)"))
    if r.validation:
        rows.append(("label", r.validation.text()))
    if r.test:
        rows.append(
            (
                "test split",
                f"{score_text(r.test.before)} → {score_text(r.test.after)} "
                f"({change_text(r.test.before, r.test.after)}, {r.test.tasks} tasks)",
            )
        )
    rows.append(("tasks", task_counts(r)))
    ignored = sum(1 for e in r.rejected_edits if e.stage == "ignored")
    followed = f" ({ignored} of them applied; the target did not follow them)" if ignored else ""
    rows.append(
        (
            "edits",
            f"{len(r.accepted_edits)} accepted, {len(r.rejected_edits)} rejected by the gate{followed}, "
            f"{len(r.refused_edits)} refused by the safety screen",
        )
    )
    if r.kept_strategies:
        kept = ", ".join(f"{s} ×{n}" for s, n in Counter(r.kept_strategies).items())
        rows.append(("candidates kept", f"{kept} (of the strategies a step's several candidates came from)"))
    rows.append(
        (
            "model calls",
            f"{counted(total.calls, 'call')}, {counted(total.cache_hits, 'cache hit')}, "
            f"{total.input_tokens:,} tokens in, {total.output_tokens:,} out, "
            f"${total.cost_usd:.4f}",
        )
    )
    return rows


def task_counts(r: NightResult) -> str:
    """The night's tasks by split, and how many were dreamed."""
    parts = []
    for split in ("train", "val", "test"):
        n = sum(1 for t in r.tasks if t.split == split)
        if n:
            parts.append(f"{n} {split}")
    dreams = sum(1 for t in r.tasks if t.origin == "dream")
    text = ", ".join(parts) or "none"
    return text + (f" ({dreams} dreamed)" if dreams else "")


def intents_by_id(r: NightResult) -> dict[str, str]:
    """Each task's intent, by task id."""
    return {t.id: t.intent for t in r.tasks}


def numbered(r: NightResult) -> str:
    """The numbered changes as a diff, one hunk per change (`@@ … @@ change N`)."""
    name = r.skill_path.replace("\\", "/").rsplit("/", 1)[-1]
    return render_changes(r.changes, f"a/{name}", f"b/{name}")
