"""A night's report record: `night_report()` puts the night's verdict together with its plan (each
task with its split and recurrence; each mined task with its member requests, as harvested and
redacted), the model usage, the earlier nights and the diff. core/night/cycle.py renders and stages it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from skillsleep.core.night.stages import NightPlan
from skillsleep.core.report.changes import Change
from skillsleep.core.report.result import (
    HistoryPoint,
    MemberRequest,
    NightResult,
    NightUsage,
    ReportTask,
    StopReason,
    short,
)

MEMBER_REQUESTS = 10  # distinct requests listed per mined task (the most frequent); the rest are counted


def night_report(
    result: NightResult,
    *,
    finished: datetime,
    plan: NightPlan | None,
    diff: str,
    usage: NightUsage,
    changes: Sequence[Change] = (),
    history: list[HistoryPoint],
    stop: StopReason | None = None,
    reason: str = "",
) -> NightResult:
    """The report of a night: `result` (the trained verdict, or the night untrained) with its
    tasks, usage, history and diff; `stop` (overriding the verdict) makes it stopped-early."""
    stop = stop or result.stop
    return NightResult.model_validate(
        {
            **dict(result),
            "finished": finished,
            "tasks": report_tasks(plan) if plan is not None else [],
            "usage": usage,
            "history": history,
            "diff": diff,
            "changes": list(changes),
            "problems": [p.line() for p in (plan.problems if plan else [])] + result.problems,
            **(
                {"outcome": "stopped-early", "stop": stop, "reason": reason or stop.message}
                if stop is not None
                else {"reason": reason or result.reason}
            ),
        }
    )


def report_tasks(plan: NightPlan) -> list[ReportTask]:
    """The plan's tasks by split (a dream with its parent's recurrence); a mined task with its
    distinct member requests, most frequent first. A night that did not split (too few tasks,
    not enough evidence) still lists what it mined, without a split."""
    mined = {m.task.id: m for m in plan.mined.tasks}
    rec = plan.recurrence()
    out: list[ReportTask] = []
    for items in plan.tasks().values():
        out += [ReportTask.from_task(t, recurrence=rec.get(t.parent or t.id, 1)) for t in items]
    listed = {t.id for t in out}
    out += [ReportTask.from_task(m.task, recurrence=m.recurrence) for m in plan.mined.tasks if m.task.id not in listed]
    for task in out:
        if task.origin == "real" and task.id in mined:
            m = mined[task.id]
            counts = Counter(i.prompt for i in m.instances)
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            task.requests = [MemberRequest(text=short(text, 200), times=n) for text, n in ranked[:MEMBER_REQUESTS]]
            task.more_requests = max(0, len(ranked) - MEMBER_REQUESTS)
            task.sessions = m.sessions
    return out
