"""`skillsleep run`'s text of a night that trained several skills (fanout_runner.FanoutSummary): one
line a skill (its sessions, share, spend, outcome and proposal, or why it was not trained), the
budget rule, what to type next (`next_step`: each skill's proposal by the skill's name, or all at
once with `adopt --all`) and where the combined report is; as markdown, the combined report's table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsleep.core.night.fanout_report import fanout_lines, fanout_title, spend_text
from skillsleep.core.shared.display import md_line, plain_line

if TYPE_CHECKING:
    from skillsleep.core.night.fanout_record import SkillRow
    from skillsleep.slash_commands.fanout_runner import FanoutSummary
    from skillsleep.slash_commands.output import Inline

__all__ = ["fanout_text", "next_step", "skill_line"]


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


def next_step(s: FanoutSummary, prefix: str, show: Inline) -> str:
    """What to type now: the skills' proposals by name (`PREFIX adopt NAME`, `PREFIX adopt --all`),
    the ones only to look at, a stopped skill's resume; the skills' names shown with `show`."""
    adopted = {n.result.night for n in s.nights if n.result.adopted}
    staged = [r for r in s.fanout.rows if r.proposal and r.night not in adopted]
    accepted = [r.skill_name for r in staged if r.outcome == "accepted"]
    only_look = [r.skill_name for r in staged if r.outcome != "accepted"]

    def names(which: list[str]) -> str:
        return ", ".join(show(n) for n in which)

    if s.fanout.dry_run:
        out = ["A dry run: nothing was staged and no live skill changed."]
    elif len(accepted) > 1:
        out = [
            f"Next: `{prefix} diff NAME` shows a skill's proposal, `{prefix} adopt NAME` adopts it, "
            f"`{prefix} adopt --all` adopts each skill's (NAME: {names(accepted)}); no live skill changed yet."
        ]
    elif accepted:
        out = [
            f"Next: `{prefix} diff NAME` shows the proposal, `{prefix} adopt NAME` adopts it, `{prefix} reject NAME` "
            f"drops it (NAME: {names(accepted)}); no live skill changed yet."
        ]
    else:
        out = ["Next: nothing to adopt; no live skill changed" + (" by this night." if adopted else ".")]
    if only_look and not s.fanout.dry_run:
        out.append(
            f"Not accepted by the gate, staged only to look at: `{prefix} diff NAME` shows it, `{prefix} reject NAME` "
            f"drops it (NAME: {names(only_look)})."
        )
    if adopted:
        out.append(f"`--auto-adopt` put some live; `{prefix} rollback NAME` undoes one skill's adopt.")
    if any(r.outcome == "stopped-early" for r in s.fanout.rows):
        out.append(f"`{prefix} run` again resumes the nights that stopped.")
    return " ".join(out)


def fanout_text(s: FanoutSummary, *, plain: bool = False, prefix: str = "skillsleep") -> str:
    """The night as plain lines (a terminal) or markdown (an agent, a pipe); `prefix`: how the user
    types a verb where they read it (`/sleep` in an agent)."""
    f, html = s.fanout, s.report.get("report.html", "")
    if not plain:
        lines = [f"# skillsleep — {fanout_title(f)}", "", *fanout_lines(f, md_line)]
        return "\n".join([*lines, next_step(s, prefix, md_line), "", f"report: {html}"])
    show = plain_line
    lines = [f"skillsleep — {fanout_title(f)}", "", *[show(skill_line(r)) for r in f.rows], ""]
    lines += [show(fanout_lines(f, show)[0]), next_step(s, prefix, show), f"report: {html}"]
    return "\n".join(lines)
