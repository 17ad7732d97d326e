"""What the user rejects is remembered: `reject` puts a proposal's changes into its skill's
rejected-edit memory (stage "user"), so later nights do not stage the same proposal again.

    user_rejections()        the memory entries of a rejected proposal: one per numbered change
                             (core/report/changes.py), with what it adds (op "add", or "replace" of the
                             lines it removes) or, when it only removes, what it deletes; the
                             file's structure is left out (blank lines, a frontmatter block at its
                             start, headings, skillsleep's `<!-- … -->` region markers): a new
                             skill's proposal is the whole file, and only its rules were learned
    memory_key()             whose memory a proposal's rejection goes into: its night's skill (the
                             file, and the section when there is one)
    remembered()             the entries of every proposal rejected for one memory file, for
                             `doctor --repair` to rebuild that memory with them

`core/train/memory.drop_rejected_by_user()` drops a new edit that says only what the user rejected.
The reflection is shown the entries as every other rejected edit (core/models/prompts.py); they are kept
across nights like them (`[train]` memory, the newest `night_store.MAX_REJECTED`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skillsleep.core.report.changes import Change
from skillsleep.core.shared.errors import StateDamaged
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import USER_REJECTED, RejectedEdit

if TYPE_CHECKING:
    from skillsleep.core.night.nights import Nights
    from skillsleep.core.report.proposal_record import Proposal
    from skillsleep.core.report.proposals import Proposals

_STRUCTURE = re.compile(r"^\s*(?:#{1,6}\s|<!--.*-->\s*$)")  # a heading, a region marker


def user_rejections(changes: Sequence[Change], proposal: str, night: int | None) -> list[RejectedEdit]:
    """The rejected-edit memory entries of `proposal` (of night `night`), which the user rejected."""
    why = f"{USER_REJECTED} {proposal}" + (f" (night {night})" if night else "")
    out: list[RejectedEdit] = []
    for change in changes:
        added = _stated(change.added, at_start=change.new_start == 0)
        removed = _stated(change.removed, at_start=change.start == 0)
        if added:
            target = "\n".join(removed) or None
            edit = Edit(op="replace" if target else "add", target=target, content="\n".join(added))
        elif removed:
            edit = Edit(op="delete", target="\n".join(removed))
        else:
            continue
        epoch = max((night or 1) - 1, 0)  # a night is an epoch of the skill's training
        out.append(RejectedEdit(edit=edit, stage="user", proposal=proposal, reason=why, epoch=epoch, step=0))
    return out


def _stated(lines: list[str], *, at_start: bool) -> list[str]:
    """The lines of a change that state something: not blank, not the file's structure."""
    out: list[str] = []
    front = False  # inside a frontmatter block that opens the file
    for n, line in enumerate(line.rstrip("\r\n") for line in lines):
        if at_start and n == 0 and line.strip() == "---":
            front = True
        elif front:
            front = line.strip() != "---"
        elif line.strip() and not _STRUCTURE.match(line):
            out.append(line)
    return out


def memory_key(nights: Nights, p: Proposal) -> str:
    """The memory a rejection of `p` goes into: the skill its night trained (as that night's record
    names it), else, with no readable record, the proposal's file with its section."""
    try:
        night_skill = nights.get(p.night).skill_path if p.night is not None else ""
    except StateDamaged:
        night_skill = ""
    section = p.details.get("section")
    return night_skill or p.skill_path + (f"#{section}" if isinstance(section, str) and section else "")


def remembered(proposals: Proposals, nights: Nights, memory: Path) -> tuple[list[RejectedEdit], list[str]]:
    """The entries of every rejected proposal whose rejection goes into the memory file `memory`,
    and the ids of those whose staged files cannot be read (they give none: the caller says so)."""
    out: list[RejectedEdit] = []
    unreadable: list[str] = []
    for p in proposals.list():
        if p.status == "rejected" and nights.memory_path(memory_key(nights, p)) == memory:
            try:
                out += user_rejections(proposals.changes(p), p.id, p.night)
            except OSError:
                unreadable.append(p.id)
    return out, unreadable
