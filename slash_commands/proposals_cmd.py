"""The proposal verbs of the nightly cycle: `diff`, `adopt`, `reject`, `rollback` — their click
commands and their text (`*_text`); what each does and returns is proposal_verbs.py's, their
markdown agent_md.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from skillsleep.core.shared.display import fence, md_line, plain_line, visible
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import Inline, output_options, resolve, show, terminal

if TYPE_CHECKING:
    from skillsleep.slash_commands.proposal_verbs import (
        AdoptAllResult,
        AdoptResult,
        DiffResult,
        RejectResult,
        RollbackResult,
    )

__all__ = [
    "adopt_",
    "adopt_all_text",
    "adopt_text",
    "diff_",
    "diff_text",
    "reject_",
    "reject_text",
    "rollback_",
    "rollback_text",
]


def diff_text(d: DiffResult, plain: bool, prefix: str = "skillsleep") -> str:
    """The numbered changes of a proposal: plain text, or markdown with the diff fenced (`--format md`);
    `prefix` is how the user types a verb (`/sleep` in an agent)."""
    inline: Inline = plain_line if plain else md_line

    def code(text: str) -> str:
        return text if plain else f"`{text}`"

    n = len(d.changes)
    verdict = "accepted" if d.accepted else "not accepted"
    head = f"Proposal {code(d.id)} ({d.status}, {verdict}) for {inline(d.skill_path)}: "
    if not n:
        return head + "no changes."
    example = f"{prefix} adopt {d.id} --edits {'1,3' if n > 2 else '1'}"
    some = f"; adopt only some with {code(example)}"
    lines = [head + f"{n} change(s) against the file it was staged against" + (some if n > 1 else "") + "."]
    if d.live_changed:
        lines.append(
            "The live file changed since: adopt refuses unless --force (`diff` without --format shows the "
            "proposal against the live file as it is now)."
        )
    if d.note:
        lines.append(d.note)
    body = visible(d.numbered.rstrip("\n"))
    return "\n".join([*lines, body] if plain else [*lines, "", fence(body) + "diff", body, fence(body)])


def adopt_text(r: AdoptResult) -> str:
    from skillsleep.slash_commands.agent_md import adopted

    lines = [f"adopted {adopted(r)}: wrote {r.skill_path}"]
    if r.previous_file:
        lines.append(f"the previous file is backed up at {r.previous_file}")
    else:
        lines.append(f"there was no file before (recorded in {r.backup}); a rollback removes it")
    if r.forced:
        lines.append("forced over edits made since staging: they are in that backup")
    lines.append("undo with `skillsleep rollback`")
    if r.superseded:
        lines.append(f"superseded (older proposals of this skill, staged before this adopt): {', '.join(r.superseded)}")
    if r.note:
        lines.append(r.note)
    return "\n".join(lines)


def adopt_all_text(r: AdoptAllResult) -> str:
    """Each skill's line of `adopt --all`: what was adopted, what was refused and why."""
    lines = [f"adopt --all: {r.adopted} adopted, {r.refused} refused (the newest accepted proposal of each skill)"]
    for s in r.skills:
        if s.adopted is not None:
            backup = s.adopted.previous_file or s.adopted.backup
            lines.append(f"- {s.skill}: adopted proposal {s.proposal}: wrote {s.skill_path} (backup: {backup})")
        else:
            first, _, rest = s.refused.partition("\n")
            lines.append(f"- {s.skill}: refused proposal {s.proposal}: {first}")
            lines += [f"    {line}" for line in rest.splitlines()]
        if s.adopted is not None and s.adopted.superseded:
            lines.append(f"  older proposals of {s.skill} superseded: {', '.join(s.adopted.superseded)}")
        if s.left_pending:
            lines.append(f"  older accepted proposals of {s.skill} left pending: {', '.join(s.left_pending)}")
    lines.append("undo one skill with `skillsleep rollback SKILL`")
    return "\n".join(lines)


def reject_text(r: RejectResult) -> str:
    return f"rejected proposal {r.proposal.id} for {r.skill_path}; the live file was not changed; {r.detail}"


def rollback_text(r: RollbackResult) -> str:
    what = "removed it (it did not exist then)" if r.removed else r.restored
    forced = "\nforced over edits made since the last change: they are in that backup" if r.forced else ""
    return (
        f"rolled back {r.skill_path} ({r.steps} step(s)): {what}\n"
        f"the file as it was is backed up in {r.backup}; `skillsleep rollback` again undoes this rollback" + forced
    )


@click.command("diff")
@click.argument("proposal_id", metavar="[ID|SKILL]", required=False)
@output_options("Print {id, skill_path, status, diff, changes, numbered, …} as JSON.")
@guard
def diff_(proposal_id: str | None, as_json: bool, fmt: str | None) -> None:
    """The unified diff of a proposal (default: the newest pending one; SKILL: that skill's newest
    pending one) against the live file now; with --format, its numbered changes (as `adopt --edits`
    takes them)."""
    from skillsleep.slash_commands.proposal_verbs import diff

    out = resolve(fmt, as_json)
    d = diff(proposal_id)
    if out.fmt is not None:
        show(d, out, diff_text, lambda d, prefix: diff_text(d, False, prefix))
    elif d.diff:
        click.echo(f"proposal {d.id} ({d.status}) against {d.skill_path} as it is now:", err=True)
        if d.note:
            click.echo(d.note, err=True)
        if terminal():
            click.echo(visible(d.diff), nl=False)
        else:  # piped: the patch, byte for byte (color=True: click would strip escape sequences)
            click.echo(d.diff, nl=False, color=True)
    else:
        click.echo(f"no difference: {d.skill_path} already equals proposal {d.id}", err=True)


@click.command("adopt")
@click.argument("proposal_id", metavar="[ID|SKILL]", required=False)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Adopt the newest accepted proposal of every skill, each checked as one adopt; exits 2 when any was refused.",
)
@click.option(
    "--force", is_flag=True, help="Adopt even if the gate did not accept it, or the live file was edited since staging."
)
@click.option(
    "--edits",
    metavar="N,M",
    help="Adopt only these of its changes, numbered as `diff --format md` shows "
    "them (without ID: the proposal `diff` shows; SKILL: as `diff SKILL` shows them).",
)
@output_options("Print what was written and the backup as JSON.")
@guard
def adopt_(
    proposal_id: str | None, every: bool, force: bool, edits: str | None, as_json: bool, fmt: str | None
) -> None:
    """Put a proposal live (default: the newest accepted pending one; SKILL: that skill's); the old
    file is backed up first. --all: the newest accepted one of each skill."""
    from skillsleep.slash_commands import agent_md
    from skillsleep.slash_commands.proposal_verbs import adopt, adopt_all

    out = resolve(fmt, as_json)
    if every:
        given = [w for w, on in (("an ID or SKILL", proposal_id), ("--edits", edits), ("--force", force)) if on]
        if given:
            raise click.UsageError(
                f"--all adopts the newest accepted proposal of every skill: give it without {' and '.join(given)}, "
                "or adopt that one skill alone (`adopt SKILL`)"
            )
        done = adopt_all()
        show(done, out, lambda r, _plain: adopt_all_text(r), agent_md.adopt_all_md)
        if done.refused:
            raise click.exceptions.Exit(2)
        return
    show(
        adopt(proposal_id, force=force, edits=edits),
        out,
        lambda r, _plain: adopt_text(r),
        agent_md.adopt_md,
    )


@click.command("reject")
@click.argument("proposal_id", metavar="[ID|SKILL]", required=False)
@output_options("Print the rejected proposal as JSON.")
@guard
def reject_(proposal_id: str | None, as_json: bool, fmt: str | None) -> None:
    """Drop a pending proposal (default: the newest pending one; SKILL: that skill's newest pending
    one); the live file is not touched."""
    from skillsleep.slash_commands import agent_md
    from skillsleep.slash_commands.proposal_verbs import reject

    out = resolve(fmt, as_json)
    show(reject(proposal_id), out, lambda r, _plain: reject_text(r), agent_md.reject_md)


@click.command("rollback")
@click.argument("skill", metavar="[SKILL]", required=False)
@click.argument("steps", metavar="[N]", type=click.IntRange(min=1), required=False)
@click.option("--force", is_flag=True, help="Roll back even over edits made since the last adopt/rollback.")
@output_options("Print what was restored as JSON.")
@guard
def rollback_(skill: str | None, steps: int | None, force: bool, as_json: bool, fmt: str | None) -> None:
    """Undo the last N adopts/rollbacks (default 1) of the most recently changed skill, or of SKILL
    (a skill's name, or its file's path; a section's skill: the file it is in). A lone number is N."""
    from skillsleep.slash_commands import agent_md
    from skillsleep.slash_commands.proposal_verbs import rollback

    if skill is not None and steps is None and skill.isdecimal():  # `rollback 2`: N, as it always was
        steps = click.IntRange(min=1).convert(int(skill), None, None)
        skill = None
    out = resolve(fmt, as_json)
    show(
        rollback(steps or 1, force=force, skill=skill),
        out,
        lambda r, _plain: rollback_text(r),
        agent_md.rollback_md,
    )
