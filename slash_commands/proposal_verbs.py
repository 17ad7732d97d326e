"""What the proposal verbs do (proposals_cmd.py holds their click commands and text, agent_md.py their
markdown): `diff()`, `adopt()`, `reject()`, `rollback()`, each returning its typed result.

`diff` only reads: it needs no config file, no backend and no lock. `adopt`, `reject` and
`rollback` hold the state directory's lock (`core/night/lock.py`) so they never race a night; a
held lock is a `Busy` error that says who holds it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from skillsleep.core.night.lock import StateLock
from skillsleep.core.report.changes import Change
from skillsleep.core.report.changes import render as render_changes
from skillsleep.core.report.proposal_record import Action, Adoption, Proposal, file_hash
from skillsleep.core.report.proposal_skills import newest_per_skill
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.wording import no_agent_reads
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record

__all__ = [
    "AdoptAllResult",
    "AdoptResult",
    "DiffResult",
    "RejectResult",
    "RollbackResult",
    "SkillAdoption",
    "adopt",
    "adopt_all",
    "diff",
    "reject",
    "rollback",
]


class DiffResult(Record):
    """What `diff --json` prints: the proposal's diff against the live file now, and its numbered
    changes against the file it was staged against (what `adopt --edits` takes)."""

    id: str
    skill_path: str
    status: str
    accepted: bool
    diff: str  # unified, against the live file as it is now
    line_endings: dict[str, str]  # the live file's and the proposal's: LF, CRLF, mixed …
    note: str  # "" or what the diff does to the line endings
    live_changed: bool
    changes: list[Change]
    numbered: str  # the changes as a diff, each hunk numbered


class AdoptResult(Record):
    """What `adopt` put live, and where the file it replaced is kept."""

    proposal: Proposal
    skill_path: str
    backup: str | None  # the backup folder
    previous_file: str | None  # the file as it was, in that folder (None: there was none)
    forced: bool
    undo: str
    edits: list[int] | None  # `--edits`: the changes put live (None: all)
    changes: int  # how many the proposal has
    note: str  # "" or why no agent reads this skill
    superseded: list[str] = Field(default_factory=list)  # its skill's older pending proposals, now superseded


class SkillAdoption(Record):
    """One skill's line of `adopt --all`: its newest accepted proposal, adopted or refused."""

    skill: str  # its name
    skill_path: str  # its file (`FILE#Heading` for a section)
    proposal: str  # the id
    adopted: AdoptResult | None  # None: refused
    refused: str  # "" or why, as a single adopt would say it
    left_pending: list[str]  # refused: its older accepted proposals, still pending


class AdoptAllResult(Record):
    """What `adopt --all` did, skill by skill; the command exits 2 when any was refused."""

    skills: list[SkillAdoption]
    adopted: int
    refused: int


class RejectResult(Record):
    """The rejected proposal and what its changes left in the skill's rejected-edit memory."""

    proposal: Proposal
    skill_path: str
    remembered: int  # changes that joined the memory
    memory: str  # the memory's file
    detail: str


class RollbackResult(Record):
    """What `rollback` restored (or removed), and where the file it replaced is kept."""

    action: Action
    skill_path: str
    steps: int
    restored: str
    backup: str | None
    removed: bool  # the file did not exist before: it is gone again
    forced: bool


def _proposals(data: Path | None) -> Proposals:
    from skillsleep.slash_commands.wiring import data_dir

    return Proposals(Path(data) if data is not None else data_dir())


def diff(pid: str | None = None, data: Path | None = None) -> DiffResult:
    """The proposal's unified diff against the live file as it is now (default: newest pending; a
    skill's name: that skill's newest pending one),
    and its numbered changes against the file it was staged against (what `adopt --edits` takes)."""
    props = _proposals(data)
    p = props.get(pid)
    p.refuse_superseded()
    found = props.changes(p)
    name = Path(p.skill_path).name
    return DiffResult(
        id=p.id,
        skill_path=p.skill_path,
        status=p.status,
        accepted=p.accepted,
        diff=props.diff(p),
        line_endings=props.line_endings(p),
        note=props.endings_note(p),
        live_changed=file_hash(Path(p.skill_path)) != p.base_hash,
        changes=found,
        numbered=render_changes(found, f"a/{name} (staged against)", f"b/{name} (proposal {p.id})"),
    )


def adopt(
    pid: str | None = None, *, force: bool = False, edits: str | None = None, data: Path | None = None
) -> AdoptResult:
    """Put a proposal live (default: the newest accepted pending one; a skill's name: that skill's)
    under the state lock; with `edits` ("1,3") only those of its numbered changes."""
    props = _proposals(data)
    with StateLock(props.root, "adopt"):
        done = props.adopt(pid, force=force, edits=edits)
    return _adopted(props, done)


def adopt_all(*, data: Path | None = None) -> AdoptAllResult:
    """Adopt the newest accepted pending proposal of every skill, one skill after another under one
    hold of the state lock, each with the checks of a single adopt: one refused (its live file
    changed since staging …) is reported and the others are still adopted. A skill's older pending
    proposals are superseded by its adopt (two proposals of one skill are never adopted); a refused
    skill's stay pending."""
    props = _proposals(data)
    out: list[SkillAdoption] = []
    with StateLock(props.root, "adopt"):
        newest = newest_per_skill(props.with_skills())
        if not newest:
            raise ConfigError(
                "there is no pending accepted proposal; run `skillsleep run` for a night, or see `skillsleep status`"
            )
        for p, older in newest:
            skill = props.skill(p)
            try:
                adopted, refused = _adopted(props, props.adopt(p.id)), ""
            except (ConfigError, OSError) as exc:
                adopted, refused = None, str(exc)
            out.append(
                SkillAdoption(
                    skill=skill.name,
                    skill_path=skill.key,
                    proposal=p.id,
                    adopted=adopted,
                    refused=refused,
                    left_pending=[] if adopted else [q.id for q in older],
                )
            )
    return AdoptAllResult(
        skills=out, adopted=sum(r.adopted is not None for r in out), refused=sum(bool(r.refused) for r in out)
    )


def _adopted(props: Proposals, done: Adoption) -> AdoptResult:
    """What an adopt did, as `adopt` prints it."""
    p, action = done.proposal, done.action
    backup = Path(action.backup) if action.backup else None
    return AdoptResult(
        proposal=p,
        skill_path=p.skill_path,
        backup=str(backup) if backup else None,
        previous_file=str(backup / "SKILL.md") if backup and (backup / "SKILL.md").exists() else None,
        forced=action.forced or action.detail == "forced",
        undo="skillsleep rollback",
        edits=action.edits,
        changes=len(props.changes(p)),
        note=no_agent_reads(str(p.details.get("harness", "")), bool(p.details.get("managed"))),
        superseded=done.superseded,
    )


def reject(pid: str | None = None, *, data: Path | None = None) -> RejectResult:
    """Mark a pending proposal rejected (default: the newest pending one; a skill's name: that skill's
    newest pending one); the live file is untouched.
    Its changes join the skill's rejected-edit memory (stage "user", core/night/rejections.py), so later
    nights drop them when proposed again; an unreadable memory refuses the reject before anything changed."""
    from skillsleep.core.night.nights import Nights
    from skillsleep.core.night.rejections import memory_key, user_rejections

    props = _proposals(data)
    with StateLock(props.root, "reject"):
        nights = Nights(props.root)
        p = props.get(pid)
        p.refuse_superseded()
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
    return RejectResult(
        proposal=p, skill_path=p.skill_path, remembered=len(entries), memory=str(nights.memory_path(key)), detail=detail
    )


def rollback(
    steps: int = 1, *, force: bool = False, skill: str | None = None, data: Path | None = None
) -> RollbackResult:
    """Undo the last `steps` adopts/rollbacks of the most recently changed skill (of `skill`, a skill's
    name or its file's path, when given); `force` rolls back over edits made since the last of them
    (they are backed up first)."""
    props = _proposals(data)
    with StateLock(props.root, "rollback"):
        action = props.rollback(steps, force=force, skill=skill)
    assert action.skill_path is not None
    return RollbackResult(
        action=action,
        skill_path=action.skill_path,
        steps=steps,
        restored=action.detail,
        backup=action.backup,
        removed=not Path(action.skill_path).exists(),
        forced=action.forced,
    )
