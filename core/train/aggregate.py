"""Aggregate (gradient aggregation): merge edits that say the same thing; their support joins
(the distinct trajectories behind them: copies of one reply count once).

First an exact de-duplication by `Edit.key()`. Then a hierarchical merge by the optimizer
(role "merge"): chunks of `group_size` edits are merged concurrently, then the outputs are
chunked and merged again, until one chunk was merged or a level reduces nothing. A bad reply
or an invalid group never loses an edit: the edits concerned are kept unmerged, and why is
recorded in `problems`.

`merge_screened` is the step's merge between two safety screens (core/privacy/safety.py). The
result keeps each merged edit's members (`AggregateResult.merges`): a merge never makes a step
worse, so a merged edit the second screen refuses gives way to its members (they passed the first),
and one the edit rules would refuse gives way to them when each would land (core/train/unmerge.py).
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from pydantic import Field, StrictInt

from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import describe_edit, render
from skillsleep.core.models.replies import Lenient, Reply, Text, Unfit, given, item_numbers, raw
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.privacy.safety import screen_all
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Edit, EditKind, EditOp, Message, Record, UnusableReply, folded
from skillsleep.core.shared.rejected import RejectedEdit


class MergeGroup(Reply):
    """Edits the optimizer says are one (numbered from 1), and the edit that replaces them."""

    members: list[Lenient[StrictInt]]
    op: EditOp
    target: Text = ""
    content: Text = ""
    rationale: Text = ""


class MergeReply(Reply):
    """The optimizer's merge groups for one chunk of edits."""

    groups: list[Lenient[MergeGroup]]


class MergedEdit(Record):
    """An edit the optimizer merged, and the proposed edits it stands for (through every level)."""

    edit: Edit
    members: list[Edit]


class AggregateResult(Record):
    """The merged edits, the ones the optimizer merged with their members, and what went wrong on
    the way (recorded, never fatal)."""

    edits: list[Edit]
    problems: list[UnusableReply] = Field(default_factory=list)
    merges: list[MergedEdit] = Field(default_factory=list)

    def members(self, edit: Edit) -> list[Edit]:
        """The proposed edits `edit` merged (equal by `Edit.key()`), or none when it merged nothing."""
        return next((m.members for m in self.merges if m.edit.key() == edit.key()), [])


class Screened(NamedTuple):
    """The proposed edits merged, the safe ones among them, and those the safety screen refused."""

    merged: AggregateResult
    safe: list[Edit]
    refused: list[RejectedEdit]


async def merge_screened(llm: LLM, edits: list[Edit], *, group_size: int, redactor: Redactor) -> Screened:
    """`edits` screened, merged (`aggregate`) and screened again: an unsafe proposal (often an
    instruction lifted from a transcript) never reaches the merge prompt, nor gets reworded there
    past the screen. Both screens redact with `redactor`."""
    proposed, refused = screen_all(edits, redactor)
    merged = await aggregate(llm, proposed, group_size=group_size)
    safe: list[Edit] = []
    for edit in merged.edits:
        ok, no = screen_all([edit], redactor)
        safe += ok or merged.members(edit)  # a merge the screen refuses: its members passed it, they go on
        refused += no
    return Screened(merged, safe, refused)


def joined(edits: list[Edit]) -> dict[str, object]:
    """The support of edits that say one thing: their distinct trajectories (`evidence`), so copies
    of one reply count once; an edit without recorded evidence adds its own support."""
    evidence = sorted({e for edit in edits for e in edit.evidence})
    return {"evidence": evidence, "support": len(evidence) + sum(e.support for e in edits if not e.evidence)}


def dedup(edits: list[Edit]) -> list[Edit]:
    """Exact de-duplication by `Edit.key()`: first occurrence kept, support joined, order kept."""
    by_key: dict[str, list[Edit]] = {}
    for edit in edits:
        by_key.setdefault(edit.key(), []).append(edit)
    return [same[0] if len(same) == 1 else same[0].model_copy(update=joined(same)) for same in by_key.values()]


async def aggregate(llm: LLM, edits: list[Edit], *, group_size: int = 8) -> AggregateResult:
    """De-duplicate exactly, then merge similar edits level by level with the optimizer."""
    if group_size < 2:
        raise ValueError(f"group_size must be at least 2, got {group_size}")
    current = dedup(edits)
    problems: list[UnusableReply] = []
    members: dict[str, list[Edit]] = {}  # a merged edit's key → the proposed edits it stands for
    level = 1
    while len(current) > 1:
        chunks = [current[i : i + group_size] for i in range(0, len(current), group_size)]
        labels = [f"merge level {level} chunk {n}/{len(chunks)}" for n in range(1, len(chunks) + 1)]
        results = await asyncio.gather(*(_merge_chunk(llm, c, label) for c, label in zip(chunks, labels, strict=True)))
        for _, _, groups in results:
            for edit, group in groups:
                members[edit.key()] = [m for e in group for m in members.get(e.key(), [e])]
        merged = dedup([edit for chunk_edits, _, _ in results for edit in chunk_edits])
        problems += [problem for _, chunk_problems, _ in results for problem in chunk_problems]
        reduced = len(merged) < len(current)
        current = merged
        if len(chunks) == 1 or not reduced:
            break
        level += 1
    merges = [MergedEdit(edit=e, members=members[e.key()]) for e in current if e.key() in members]
    return AggregateResult(edits=current, problems=problems, merges=merges)


async def _merge_chunk(
    llm: LLM, chunk: list[Edit], where: str
) -> tuple[list[Edit], list[UnusableReply], list[tuple[Edit, list[Edit]]]]:
    """The chunk merged, the problems, and each merged edit with the chunk's edits it merged."""
    if len(chunk) < 2:
        return chunk, [], []
    listing = "\n\n".join(describe_edit(edit, n) for n, edit in enumerate(chunk, 1))
    messages = [
        Message(role="system", content=render("merge_system")),
        Message(role="user", content=render("merge_user", count=len(chunk), edits=listing)),
    ]
    try:
        reply = await llm.ask_model("merge", messages, MergeReply, cache_system=True)
    except ParseError as exc:
        return (
            chunk,
            [UnusableReply(role="merge", where=where, error=f"malformed reply, edits kept unmerged: {exc}")],
            [],
        )
    used: set[int] = set()
    merged_at: dict[int, Edit] = {}
    problems: list[UnusableReply] = []
    groups: list[tuple[Edit, list[Edit]]] = []
    for n, group in enumerate(reply.groups, 1):
        edit, members, problem = _merged_group(group, chunk, used)
        if edit is None:
            problems.append(UnusableReply(role="merge", where=where, error=f"group {n} ignored: {problem}"))
            continue
        used.update(members)
        merged_at[min(members)] = edit
        groups.append((edit, [chunk[i] for i in members]))
    out = [merged_at.get(i, edit) for i, edit in enumerate(chunk) if i in merged_at or i not in used]
    return out, problems, groups


def _merged_group(group: MergeGroup | Unfit, chunk: list[Edit], used: set[int]) -> tuple[Edit | None, list[int], str]:
    """A group's merged edit and its members' indexes, or None and why the group is ignored."""
    if isinstance(group, Unfit):
        return None, [], group.error
    members, problem = _members(group, len(chunk), used)
    if not members:
        return None, [], problem
    edit, problem = _merged_edit(group, [chunk[i] for i in members])
    return edit, members, problem


def _members(group: MergeGroup, size: int, used: set[int]) -> tuple[list[int], str]:
    """Validated 0-based member indexes of a group: a group naming anything but distinct edits
    1..size is ignored whole (its merged text was written for the edits it named)."""
    numbers = item_numbers(group.members, size)
    written = [raw(m) for m in group.members]
    if numbers.not_numbers:
        return [], f"members are not all edit numbers: {written}"
    if numbers.out_of_range:
        return [], f"member numbers out of range 1..{size}: {written}"
    if numbers.repeated:
        return [], f"duplicate members: {written}"
    if len(numbers.indexes) < 2:
        return [], f"a group needs at least two members: {written}"
    if used.intersection(numbers.indexes):
        return [], f"members already merged in an earlier group: {written}"
    return numbers.indexes, ""


def _merged_edit(group: MergeGroup, members: list[Edit]) -> tuple[Edit | None, str]:
    """The group's merged edit, or None when it is invalid (its targets must be the members')."""
    op = group.op
    target, content = given(group.target), given(group.content)
    support = joined(members)
    lapse = sum(m.support for m in members if m.kind == "execution_lapse")
    kind: EditKind = "execution_lapse" if lapse * 2 > sum(m.support for m in members) else "skill_defect"
    rationale = given(group.rationale) or "; ".join(dict.fromkeys(m.rationale for m in members if m.rationale))
    if kind == "execution_lapse":
        if content is None:
            return None, "a merged reminder needs content"
        return Edit.model_validate(
            {"op": "add", "content": content, "rationale": rationale, "kind": kind, **support}
        ), ""
    if target is not None:
        target = _member_target(target, members)
        if target is None:
            return None, "its target is not the target of any member (targets are never invented)"
    if op in ("delete", "replace") and target is None:
        return None, f"{op} needs the target of one of its members"
    if op in ("add", "replace") and content is None:
        return None, f"{op} needs content"
    content = None if op == "delete" else content
    fields = {"op": op, "target": target, "content": content, "rationale": rationale, "kind": kind}
    return Edit.model_validate({**fields, **support}), ""


def _member_target(target: str, members: list[Edit]) -> str | None:
    """The member's exact target that `target` names (whitespace and case folded), or None."""
    for member in members:
        if member.target is not None and folded(member.target) == folded(target):
            return member.target
    return None
