"""Meta skill (meta-learning): the optimizer's own notes across epochs, on which kinds of edits
helped or hurt. They reach later reflections (`ReflectContext.meta_skill`) and are never
written into the deployed skill.
"""

from __future__ import annotations

from pydantic import Field, StrictStr

from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import as_bullets, bullet_lines, describe_edit, describe_rejected, or_none, render
from skillsleep.core.models.replies import Lenient, Reply
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Edit, Message, Record, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit

META_TOKENS = (
    1024  # twelve notes fit several times over; a longer reply is a small model's loop (cut off: old notes kept)
)


class NotesReply(Reply):
    """The optimizer's notes (a reply without any keeps the old notes)."""

    notes: list[Lenient[StrictStr]] = Field(default_factory=list)


class EpochSummary(Record):
    """What one epoch did: scores at its ends, edits the gate accepted and rejected."""

    epoch: int
    start_score: float
    end_score: float
    accepted: list[Edit]
    rejected: list[RejectedEdit]
    slow_update_counts: dict[str, int] = Field(default_factory=dict)


class MetaResult(Record):
    """The updated notes ("- " bullet lines), or the old ones and the reply that could not be used."""

    meta: str
    problem: UnusableReply | None = None


async def update_meta_skill(llm: LLM, meta: str, summary: EpochSummary, *, max_lines: int = 12) -> MetaResult:
    """Ask the optimizer (role "meta") to fold the epoch's results into its notes."""
    slow = "\n".join(f"- {outcome}: {n}" for outcome, n in summary.slow_update_counts.items())
    user = render(
        "meta_user",
        meta=or_none(meta, "(no notes yet)"),
        epoch=summary.epoch + 1,
        start_score=f"{summary.start_score:.3f}",
        end_score=f"{summary.end_score:.3f}",
        accepted=or_none("\n\n".join(describe_edit(e) for e in summary.accepted)),
        rejected=or_none("\n\n".join(describe_rejected(r) for r in summary.rejected)),
        slow_update=or_none(slow, "(no slow update ran)"),
        max_lines=max_lines,
    )
    messages = [Message(role="system", content=render("meta_system")), Message(role="user", content=user)]
    try:
        limit = min(llm.max_tokens, META_TOKENS)
        reply = await llm.ask_model("meta", messages, NotesReply, max_tokens=limit, cache_system=True)
    except ParseError as exc:
        return MetaResult(meta=meta, problem=_kept(f"malformed reply, old notes kept: {exc}"))
    lines = bullet_lines(reply.notes, max_lines=max_lines)
    if not lines:
        return MetaResult(meta=meta, problem=_kept("the reply held no note lines, old notes kept"))
    return MetaResult(meta=as_bullets(lines))


def _kept(error: str) -> UnusableReply:
    return UnusableReply(role="meta", where="meta skill", error=error)
