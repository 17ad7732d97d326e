"""The proposal verbs of the nightly cycle: `diff`, `adopt`, `reject`, `rollback`.

Each verb returns plain data (what `--json` prints) and has a `*_text` renderer for the compact
markdown an agent shows after `/sleep <verb>`. `diff` only reads: it needs no config file, no
backend and no lock. `adopt`, `reject` and `rollback` hold the state directory's lock
(`core/night/lock.py`) so they never race a night; a held lock is a `Busy` error that says who holds it.
"""

from __future__ import annotations

from pathlib import Path

import click

from skillsleep.core.shared.display import fence, md_line, plain_line, visible
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import Data, Inline, output_options, resolve, show, terminal

__all__ = ["adopt", "adopt_", "diff", "diff_", "reject", "reject_", "rollback", "rollback_"]


def diff(pid: str | None = None, data: Path | None = None) -> Data:
    """The proposal's unified diff against the live file as it is now (default: newest pending),
    and its numbered changes against the file it was staged against (what `adopt --edits` takes)."""
    from skillsleep.core.report.changes import render as render_changes
    from skillsleep.core.report.proposal_record import file_hash
    from skillsleep.core.report.proposals import Proposals
    from skillsleep.slash_commands.wiring import data_dir

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
    inline: Inline = plain_line if plain else md_line

    def code(text: str) -> str:
        return text if plain else f"`{text}`"

    n = len(d["changes"])
    verdict = "accepted" if d["accepted"] else "not accepted"
    head = f"Proposal {code(d['id'])} ({d['status']}, {verdict}) for {inline(d['skill_path'])}: "
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
    from skillsleep.core.night.lock import StateLock
    from skillsleep.core.report.proposals import Proposals
    from skillsleep.core.report.wording import no_agent_reads
    from skillsleep.slash_commands.wiring import data_dir

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
        "note": no_agent_reads(str(p.details.get("harness", "")), bool(p.details.get("managed"))),
    }


def adopt_text(r: Data) -> str:
    from skillsleep.slash_commands.agent_md import adopted

    lines = [f"adopted {adopted(r)}: wrote {r['skill_path']}"]
    if r["previous_file"]:
        lines.append(f"the previous file is backed up at {r['previous_file']}")
    else:
        lines.append(f"there was no file before (recorded in {r['backup']}); a rollback removes it")
    if r["forced"]:
        lines.append("forced over edits made since staging: they are in that backup")
    lines.append("undo with `skillsleep rollback`")
    if r["note"]:
        lines.append(r["note"])
    return "\n".join(lines)


def reject(pid: str | None = None, *, data: Path | None = None) -> Data:
    """Mark a pending proposal rejected (default: the newest pending one); the live file is untouched.
    Its changes join the skill's rejected-edit memory (stage "user", core/night/rejections.py), so later
    nights drop them when proposed again; an unreadable memory refuses the reject before anything changed."""
    from skillsleep.core.night.lock import StateLock
    from skillsleep.core.night.nights import Nights
    from skillsleep.core.night.rejections import memory_key, user_rejections
    from skillsleep.core.report.proposals import Proposals
    from skillsleep.slash_commands.wiring import data_dir

    root = Path(data) if data is not None else data_dir()
    with StateLock(root, "reject"):
        props, nights = Proposals(root), Nights(root)
        p = props.get(pid)
        key = memory_key(nights, p)
        memory = nights.memory(key)  # unreadable: refused here, nothing rejected yet
        try:
            entries = user_rejections(props.changes(p), p.id, p.night)
        except OSError as exc:  # its staged files are gone: rejected all the same, nothing to remember
            entries, unread = [], f"its staged files cannot be read ({exc}), so no change of it is remembered"
        else:
            unread = ""
        detail = unread or (
            f"its {len(entries)} change(s) join the rejected-edit memory; later nights drop them if proposed again"
            if entries
            else "it states no rule (only the file's structure), so nothing joins the rejected-edit memory"
        )
        p = props.reject(p.id, detail=detail)
        if entries:
            memory.rejected = [*memory.rejected, *entries]
            nights.save_memory(memory)
    return {
        "proposal": p.model_dump(mode="json"),
        "skill_path": p.skill_path,
        "remembered": len(entries),
        "memory": str(nights.memory_path(key)),
        "detail": detail,
    }


def reject_text(r: Data) -> str:
    return (
        f"rejected proposal {r['proposal']['id']} for {r['skill_path']}; the live file was not changed; {r['detail']}"
    )


def rollback(steps: int = 1, *, force: bool = False, data: Path | None = None) -> Data:
    """Undo the last `steps` adopts/rollbacks of the most recently changed skill; `force` rolls
    back over edits made since the last of them (they are backed up first)."""
    from skillsleep.core.night.lock import StateLock
    from skillsleep.core.report.proposals import Proposals
    from skillsleep.slash_commands.wiring import data_dir

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


@click.command("diff")
@click.argument("proposal_id", metavar="[ID]", required=False)
@output_options("Print {id, skill_path, status, diff, changes, numbered, …} as JSON.")
@guard
def diff_(proposal_id: str | None, as_json: bool, fmt: str | None) -> None:
    """The unified diff of a proposal (default: the newest pending one) against the live file now;
    with --format, its numbered changes (as `adopt --edits` takes them)."""
    out = resolve(fmt, as_json)
    d = diff(proposal_id)
    if out.fmt is not None:
        show(d, out, diff_text, lambda d, prefix: diff_text(d, False, prefix))
    elif d["diff"]:
        click.echo(f"proposal {d['id']} ({d['status']}) against {d['skill_path']} as it is now:", err=True)
        if d["note"]:
            click.echo(d["note"], err=True)
        if terminal():
            click.echo(visible(d["diff"]), nl=False)
        else:  # piped: the patch, byte for byte (color=True: click would strip escape sequences)
            click.echo(d["diff"], nl=False, color=True)
    else:
        click.echo(f"no difference: {d['skill_path']} already equals proposal {d['id']}", err=True)


@click.command("adopt")
@click.argument("proposal_id", metavar="[ID]", required=False)
@click.option(
    "--force", is_flag=True, help="Adopt even if the gate did not accept it, or the live file was edited since staging."
)
@click.option(
    "--edits",
    metavar="N,M",
    help="Adopt only these of its changes, numbered as `diff --format md` shows "
    "them (without ID: the proposal `diff` shows).",
)
@output_options("Print what was written and the backup as JSON.")
@guard
def adopt_(proposal_id: str | None, force: bool, edits: str | None, as_json: bool, fmt: str | None) -> None:
    """Put a proposal live (default: the newest accepted pending one); the old file is backed up first."""
    from skillsleep.slash_commands import agent_md

    out = resolve(fmt, as_json)
    show(
        adopt(proposal_id, force=force, edits=edits),
        out,
        lambda r, _plain: adopt_text(r),
        agent_md.adopt_md,
    )


@click.command("reject")
@click.argument("proposal_id", metavar="[ID]", required=False)
@output_options("Print the rejected proposal as JSON.")
@guard
def reject_(proposal_id: str | None, as_json: bool, fmt: str | None) -> None:
    """Drop a pending proposal (default: the newest pending one); the live file is not touched."""
    from skillsleep.slash_commands import agent_md

    out = resolve(fmt, as_json)
    show(reject(proposal_id), out, lambda r, _plain: reject_text(r), agent_md.reject_md)


@click.command("rollback")
@click.argument("steps", type=click.IntRange(min=1), default=1, required=False)
@click.option("--force", is_flag=True, help="Roll back even over edits made since the last adopt/rollback.")
@output_options("Print what was restored as JSON.")
@guard
def rollback_(steps: int, force: bool, as_json: bool, fmt: str | None) -> None:
    """Undo the last STEPS adopts/rollbacks (default 1) of the most recently changed skill."""
    from skillsleep.slash_commands import agent_md

    out = resolve(fmt, as_json)
    show(
        rollback(steps, force=force),
        out,
        lambda r, _plain: rollback_text(r),
        agent_md.rollback_md,
    )
