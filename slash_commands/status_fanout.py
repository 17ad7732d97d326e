"""The newest night in `skillsleep status` when it trained several skills (status_report.FanoutSeen):
one line a skill — its name, sessions, share, spend, outcome and proposal, or why it was not
trained (not enough evidence, not selected, not run) — as text (status_cmd.py) or markdown
(agent_md.py). Skill names and reasons are untrusted text, shown with the caller's `Inline`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsleep.core.night.fanout_report import fanout_title, spend_text
from skillsleep.core.shared.display import counted

if TYPE_CHECKING:
    from skillsleep.core.night.fanout_record import SkillRow
    from skillsleep.slash_commands.output import Inline
    from skillsleep.slash_commands.status_report import FanoutSeen

__all__ = ["fanout_md", "fanout_status_lines", "row_line"]

_NOT = {"not-enough-evidence": "not trained", "not-selected": "not selected", "not-run": "not run"}


def row_line(r: SkillRow, md: Inline, code: Inline = str) -> str:
    """ "review-pr (night 3): 15 sessions, share no cap, spent 4,118 tokens, $0.0000 — accepted, proposal ID",
    or "fmt: 2 sessions — not trained: not enough evidence (2 sessions; needs 6)"; `code` marks up the id."""
    sessions = counted(r.sessions, "session")
    if r.night is None:
        return f"{md(r.skill_name)}: {sessions} — {_NOT.get(r.status, r.status)}: {md(r.reason)}"
    share, spent = spend_text(r.share_tokens, r.share_usd), spend_text(r.spent_tokens, r.spent_usd)
    proposal = f", proposal {code(r.proposal)}" if r.proposal else ""
    why = f" — {md(r.reason)}" if r.reason else ""
    return f"{md(r.skill_name)} (night {r.night}): {sessions}, share {share}, spent {spent} — {md(r.outcome)}{proposal}{why}"


def _title(seen: FanoutSeen) -> str:
    f = seen.summary
    return f"fan-out {f.fanout}: {fanout_title(f)}" + (" (dry run)" if f.dry_run else "")


def fanout_status_lines(seen: FanoutSeen, md: Inline) -> list[str]:
    """The text section: a heading, a line a skill, the combined report."""
    rows = [f"- {row_line(r, md)}" for r in seen.summary.rows]
    return [f"### Newest night: {_title(seen)}", "", *rows, f"report: {md(seen.report)}", ""]


def fanout_md(seen: FanoutSeen, md: Inline) -> list[str]:
    """The markdown for an agent: a line, then a bullet a skill."""
    rows = [f"- {row_line(r, md, lambda pid: f'`{pid}`')}" for r in seen.summary.rows]
    return [f"Newest night, {_title(seen)}:", "", *rows, ""]
