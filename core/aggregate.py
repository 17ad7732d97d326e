"""Aggregate (gradient aggregation): merge edits that say the same thing; support counts add up.

First an exact de-duplication by `Edit.key()`. Then a hierarchical merge by the optimizer
(role "merge"): chunks of `group_size` edits are merged concurrently, then the outputs are
chunked and merged again, until one chunk was merged or a level reduces nothing. A bad reply
or an invalid group never loses an edit: the edits concerned are kept unmerged, and why is
recorded in `failures`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from skillsleep.core.errors import ParseError
from skillsleep.core.llm import LLM
from skillsleep.core.prompts import describe_edit, render
from skillsleep.core.records import Edit, Message, Record

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "groups": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "members": {"type": "array", "items": {"type": "integer"}},
                    "op": {"type": "string", "enum": ["add", "delete", "replace"]},
                    "target": {"type": "string"},
                    "content": {"type": "string"},
                    "rationale": {"type": "string"},
                },
                "required": ["members", "op", "target", "content", "rationale"],
            },
        }
    },
    "required": ["groups"],
}


class AggregateResult(Record):
    """The merged edits, and what went wrong on the way (recorded, never fatal)."""

    edits: list[Edit]
    failures: list[str] = Field(default_factory=list)


def dedup(edits: list[Edit]) -> list[Edit]:
    """Exact de-duplication by `Edit.key()`: first occurrence kept, support summed, order kept."""
    by_key: dict[str, Edit] = {}
    for edit in edits:
        seen = by_key.get(edit.key())
        by_key[edit.key()] = edit if seen is None else seen.model_copy(update={"support": seen.support + edit.support})
    return list(by_key.values())


async def aggregate(llm: LLM, edits: list[Edit], *, group_size: int = 8) -> AggregateResult:
    """De-duplicate exactly, then merge similar edits level by level with the optimizer."""
    if group_size < 2:
        raise ValueError(f"group_size must be at least 2, got {group_size}")
    current = dedup(edits)
    failures: list[str] = []
    level = 1
    while len(current) > 1:
        chunks = [current[i : i + group_size] for i in range(0, len(current), group_size)]
        labels = [f"merge level {level} chunk {n}/{len(chunks)}" for n in range(1, len(chunks) + 1)]
        results = await asyncio.gather(*(_merge_chunk(llm, c, label) for c, label in zip(chunks, labels, strict=True)))
        merged = dedup([edit for chunk_edits, _ in results for edit in chunk_edits])
        failures += [failure for _, chunk_failures in results for failure in chunk_failures]
        reduced = len(merged) < len(current)
        current = merged
        if len(chunks) == 1 or not reduced:
            break
        level += 1
    return AggregateResult(edits=current, failures=failures)


async def _merge_chunk(llm: LLM, chunk: list[Edit], where: str) -> tuple[list[Edit], list[str]]:
    if len(chunk) < 2:
        return chunk, []
    listing = "\n\n".join(describe_edit(edit, n) for n, edit in enumerate(chunk, 1))
    messages = [
        Message(role="system", content=render("merge_system")),
        Message(role="user", content=render("merge_user", count=len(chunk), edits=listing)),
    ]
    try:
        reply = await llm.ask_json("merge", messages, SCHEMA, cache_system=True)
    except ParseError as exc:
        return chunk, [f"{where}: malformed reply, edits kept unmerged: {exc}"]
    groups = reply.get("groups")
    if not isinstance(groups, list):
        return chunk, [f"{where}: the reply has no list under 'groups', edits kept unmerged"]
    used: set[int] = set()
    merged_at: dict[int, Edit] = {}
    failures: list[str] = []
    for n, group in enumerate(groups, 1):
        members, problem = _members(group, len(chunk), used)
        edit = None
        if members:
            edit, problem = _merged_edit(group, [chunk[i] for i in members])
        if edit is None:
            failures.append(f"{where}: group {n} ignored: {problem}")
            continue
        used.update(members)
        merged_at[min(members)] = edit
    out = [merged_at.get(i, edit) for i, edit in enumerate(chunk) if i in merged_at or i not in used]
    return out, failures


def _members(group: object, size: int, used: set[int]) -> tuple[list[int], str]:
    """Validated 0-based member indexes of a group (the prompt numbers edits from 1)."""
    if not isinstance(group, dict) or not isinstance(group.get("members"), list):
        return [], "no list of members"
    raw = group["members"]
    if not all(isinstance(m, int) and not isinstance(m, bool) for m in raw):
        return [], f"members are not all edit numbers: {raw}"
    if any(m < 1 or m > size for m in raw):
        return [], f"member numbers out of range 1..{size}: {raw}"
    if len(set(raw)) != len(raw):
        return [], f"duplicate members: {raw}"
    if len(raw) < 2:
        return [], f"a group needs at least two members: {raw}"
    indexes = [m - 1 for m in raw]
    if used.intersection(indexes):
        return [], f"members already merged in an earlier group: {raw}"
    return indexes, ""


def _merged_edit(group: dict[str, Any], members: list[Edit]) -> tuple[Edit | None, str]:
    """The group's merged edit, or None when it is invalid (its targets must be the members')."""
    op = group.get("op")
    if op not in ("add", "delete", "replace"):
        return None, f"unknown op {op!r}"
    target, content = _text(group.get("target")), _text(group.get("content"))
    support = sum(m.support for m in members)
    lapse = sum(m.support for m in members if m.kind == "execution_lapse")
    kind = "execution_lapse" if lapse * 2 > support else "skill_defect"
    rationale = _text(group.get("rationale")) or "; ".join(dict.fromkeys(m.rationale for m in members if m.rationale))
    if kind == "execution_lapse":
        if content is None:
            return None, "a merged reminder needs content"
        return Edit(op="add", content=content, rationale=rationale, kind=kind, support=support), ""
    if target is not None:
        target = _member_target(target, members)
        if target is None:
            return None, "its target is not the target of any member (targets are never invented)"
    if op in ("delete", "replace") and target is None:
        return None, f"{op} needs the target of one of its members"
    if op in ("add", "replace") and content is None:
        return None, f"{op} needs content"
    content = None if op == "delete" else content
    return Edit(op=op, target=target, content=content, rationale=rationale, kind=kind, support=support), ""


def _member_target(target: str, members: list[Edit]) -> str | None:
    """The member's exact target that `target` names (whitespace and case folded), or None."""
    norm = lambda s: " ".join(s.split()).lower()  # noqa: E731
    for member in members:
        if member.target is not None and norm(member.target) == norm(target):
            return member.target
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
