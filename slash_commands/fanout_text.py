"""`skillsleep run`'s text of a night that trained several skills (fanout_runner.FanoutSummary): one
line a skill (its sessions, share, spend, outcome and proposal, or why it was not trained), the
budget rule, and where the combined report is; as markdown, the combined report's table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsleep.core.night.fanout_report import fanout_lines, fanout_title, spend_text
from skillsleep.core.shared.display import md_line, plain_line

if TYPE_CHECKING:
    from skillsleep.core.night.fanout_record import SkillRow
    from skillsleep.slash_commands.fanout_runner import FanoutSummary

__all__ = ["fanout_text", "skill_line"]


def skill_line(r: SkillRow) -> str:
    """One skill of the night, in words."""
    sessions = f"{r.sessions} session{'s' if r.sessions != 1 else ''}"
    if r.status == "not-selected":
        return f"{r.skill_name}: not selected ({sessions})"
    if r.night is None:  # not mined (too few sessions), or not reached
        return f"{r.skill_name}: {r.reason}"
    share = spend_text(r.share_tokens, r.share_usd)
    spent = spend_text(r.spent_tokens, r.spent_usd)
    proposal = f", proposal {r.proposal}" if r.proposal else ""
    why = f" — {r.reason}" if r.reason else ""
    return f"{r.skill_name}: night {r.night}, {sessions}, share {share}, spent {spent} — {r.outcome}{proposal}{why}"


def fanout_text(s: FanoutSummary, *, plain: bool = False) -> str:
    """The night as plain lines (a terminal) or markdown (an agent, a pipe)."""
    f, html = s.fanout, s.report.get("report.html", "")
    if not plain:
        return "\n".join([f"# skillsleep — {fanout_title(f)}", "", *fanout_lines(f, md_line), f"report: {html}"])
    show = plain_line
    lines = [f"skillsleep — {fanout_title(f)}", "", *[show(skill_line(r)) for r in f.rows], ""]
    lines += [show(fanout_lines(f, show)[0]), f"report: {html}"]
    return "\n".join(lines)
