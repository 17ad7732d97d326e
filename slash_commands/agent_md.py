"""Concise markdown of the /sleep verbs (`--format md`), for an agent to show the user as it is.

Each renderer takes the verb's result (the record `--json` prints) and `prefix`, how the user types a
verb where they read this: `/sleep` inside an agent (set by `skillsleep sleep`), `skillsleep`
on a command line. Untrusted text (skill names, reasons, paths, error messages) is escaped so
it cannot become markup or a link, and its control characters are shown as symbols
(core/shared/display.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from skillsleep.core.shared.display import counted, fence, md_line, visible

if TYPE_CHECKING:
    from skillsleep.slash_commands.proposal_verbs import AdoptAllResult, AdoptResult, RejectResult, RollbackResult
    from skillsleep.slash_commands.status_report import NightSeen, PendingProposal, StatusResult

SEVERAL = (
    "Proposals of several skills wait: `{prefix} adopt SKILL` adopts one skill's newest accepted proposal, "
    "`{prefix} adopt --all` each skill's, `{prefix} status SKILL` shows one skill."
)

VERDICT = {
    "accepted": "accepted",
    "rejected": "not accepted",
    "no-candidate": "no candidate",
    "stopped-early": "stopped early",
}


def adopted(r: AdoptResult, code: Callable[[str], str] = str) -> str:
    """ "proposal ID", or "changes 1, 3 of 4 of proposal ID" for an adopt of some of its changes
    (`code` marks up the id)."""
    which = f"proposal {code(r.proposal.id)}"
    if r.edits is None:
        return which
    return f"change{'s' if len(r.edits) > 1 else ''} {', '.join(map(str, r.edits))} of {r.changes} of {which}"


def skills_of(pending: list[PendingProposal]) -> set[tuple[str, str]]:
    """The skills the pending proposals belong to: (name, file)."""
    return {(p.skill, p.skill_path) for p in pending}


def _score(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _verdict(n: NightSeen, prefix: str) -> str:
    if n.status == "died":
        return f"died (`{prefix} run` resumes it)"
    if n.status == "running":
        return "running"
    verdict = VERDICT.get(n.end.outcome or "", n.end.outcome or n.status)
    if n.end.stop:
        verdict += f" ({n.end.stop.kind})"
    if n.end.adopted:
        verdict += ", auto-adopted"
    verdict += " (dry run)" if n.dry_run else ""
    from skillsleep.core.report.evidence import label_text

    label = label_text(n.end.validated, n.end.outcome, n.end.validation)
    return verdict + (f"; {md_line(label)}" if label else "")


def _commands(commands: list[str], prefix: str) -> str:
    """`skillsleep diff X` … as the user types them here."""
    return " · ".join(f"`{prefix}{c.removeprefix('skillsleep')}`" for c in commands)


def status_md(s: StatusResult, prefix: str) -> str:
    """Nights as a table (night, date, skill, held-out before → after, verdict), a running night's
    progress, the pending proposals with what to type next, this month's spend, problems."""
    nights, pending, month = s.nights, s.pending, s.spend.month
    out = [
        f"**skillsleep**: {nights.count} night(s), {len(pending)} pending proposal(s); this month "
        f"{month.tokens:,} tokens, ${month.cost_usd:.4f}",
        "",
    ]
    if nights.recent:
        out += ["| night | date | skill | held-out before → after | verdict |", "|---|---|---|---|---|"]
        out += [
            f"| {n.night} | {n.date} | {md_line(n.skill)} | {_score(n.end.baseline)} → "
            f"{_score(n.end.candidate)}{f' ({n.end.paired})' if n.end.paired else ''} | {_verdict(n, prefix)} |"
            for n in nights.recent
        ]
        out.append("")
    else:
        out += [f"No nights yet: `{prefix} run` starts one.", ""]
    if s.fanout is not None:
        from skillsleep.slash_commands.status_fanout import fanout_md

        out += fanout_md(s.fanout, md_line)
    for n in nights.recent:
        if n.status == "running":
            log = f"; log: {md_line(n.log)}" if n.log else ""
            stage = n.progress.stage if n.progress else ""
            out += [
                f"Night {n.night} is running (pid {n.pid}): {stage}, "
                f"{counted(n.spend.calls, 'call')}, {n.spend.tokens:,} tokens so far{log}",
                "",
            ]
    several = len(skills_of(pending)) > 1  # then each line starts with its skill's name
    for p in sorted(pending, key=lambda p: (p.skill, p.skill_path)) if several else pending:
        verdict = "accepted" if p.accepted else f"not accepted ({md_line(p.reason)})"
        live = "; the live file changed since, so adopt refuses unless `--force`" if p.live_changed else ""
        paired = f" (paired {p.paired})" if p.paired else ""
        label = f", {md_line(p.label)}" if p.label else ""
        out.append(
            f"- {f'**{md_line(p.skill)}**: ' if several else ''}Proposal `{p.id}` for {md_line(p.skill_path)}: "
            f"held-out {_score(p.baseline)} → "
            f"{_score(p.candidate)}{paired}, {verdict}{label}{live}. Next: {_commands(p.next, prefix)}"
            + (f" {p.note}" if p.note else "")
        )
    if several:
        out += ["", SEVERAL.format(prefix=prefix)]
    if pending:
        out.append("")
    if s.next_night is not None:
        from skillsleep.slash_commands.next_night import next_night_line

        line = next_night_line(s.next_night)
        out += [md_line(line[0].upper() + line[1:]), ""]
    if s.problems:
        out.append(
            f"{len(s.problems)} problem(s) in the data folder: {md_line(s.problems[0])}"
            + (f" (`{prefix} status --format text` lists all)" if len(s.problems) > 1 else "")
        )
    return "\n".join(out).rstrip("\n")


def adopt_md(r: AdoptResult, prefix: str) -> str:
    which = adopted(r, code=lambda pid: f"`{pid}`")
    before = "the previous file is backed up" if r.previous_file else "there was no file before"
    forced = " (forced over edits made since staging: they are in the backup)" if r.forced else ""
    note = f" {r.note}" if r.note else ""
    older = ", ".join(f"`{pid}`" for pid in r.superseded)
    gone = f" Superseded (older proposals of this skill, staged before this adopt): {older}." if older else ""
    return f"Adopted {which} into {md_line(r.skill_path)}; {before}{forced}; undo with `{prefix} rollback`.{gone}{note}"


def adopt_all_md(r: AdoptAllResult, prefix: str) -> str:
    """`adopt --all`: one line per skill (adopted, or refused with why), then each refusal's detail fenced."""
    out = [
        f"**adopt --all**: {r.adopted} adopted, {r.refused} refused (the newest accepted proposal of each skill)",
        "",
    ]
    details: list[str] = []
    for s in r.skills:
        name = md_line(s.skill)
        if s.adopted is not None:
            out.append(f"- **{name}**: adopted proposal `{s.proposal}` into {md_line(s.skill_path)}")
        else:
            first, _, rest = s.refused.partition("\n")
            out.append(f"- **{name}**: refused proposal `{s.proposal}`: {md_line(first)}")
            if rest.strip():
                mark = fence(rest)
                details += ["", f"Why {name} was refused:", "", f"{mark}text", visible(rest.rstrip()), mark]
        if s.adopted is not None and s.adopted.superseded:
            gone = ", ".join(f"`{pid}`" for pid in s.adopted.superseded)
            out.append(f"  - older proposals of {name} superseded: {gone}")
        if s.left_pending:
            older = ", ".join(f"`{pid}`" for pid in s.left_pending)
            out.append(f"  - older accepted proposals of {name} left pending: {older}")
    out += details
    out += ["", f"Undo one skill with `{prefix} rollback SKILL`."]
    return "\n".join(out)


def reject_md(r: RejectResult, _prefix: str) -> str:
    return f"Rejected proposal `{r.proposal.id}`; {md_line(r.skill_path)} was not changed; {md_line(r.detail)}."


def rollback_md(r: RollbackResult, prefix: str) -> str:
    what = "removed it (it did not exist before)" if r.removed else md_line(r.restored)
    forced = " (forced: the edits it replaced are in the backup)" if r.forced else ""
    return (
        f"Rolled back {md_line(r.skill_path)} by {r.steps} step(s): {what}{forced}; "
        f"`{prefix} rollback` again undoes this."
    )


def error_md(message: str) -> str:
    """An error for an agent to show: its first line, and the rest (a diff, a list) fenced as text."""
    first, _, rest = message.strip("\n").partition("\n")
    out = f"**Error:** {md_line(first)}"
    if rest.strip():
        mark = fence(rest)
        out += f"\n\n{mark}text\n{visible(rest.rstrip())}\n{mark}"
    return out
