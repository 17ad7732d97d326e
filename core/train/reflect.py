"""Reflect (the backward pass): an optimizer model reads trajectories in minibatches → edits.

Each minibatch mixes failed and passed trajectories, so the optimizer sees what went wrong and
what already works. Every finding is classified: a `skill_defect` edits the skill body; an
`execution_lapse` (the skill already says it, the agent lapsed) becomes a reminder note for the
protected appendix. A malformed reply or an invalid finding is recorded in `problems`, never
applied; so is a finding whose content copies a format placeholder of the reflect or repair
instructions (`<the exact text the feedback asks for>`) instead of the text it stands for. A
finding's support is the distinct trajectories it rests on (`backing`): the failed ones of its
minibatch, each a task and its reply, so copies of one reply to one task count once.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Iterable

from pydantic import Field

from skillsleep.core.document.folder import SkillFolder
from skillsleep.core.document.skill import RegionName, Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import (
    copied_placeholders,
    data_block,
    describe_memory,
    editable_text,
    or_none,
    render,
    truncate,
)
from skillsleep.core.models.replies import Lenient, Reply, Text, Unfit, given
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Edit, EditKind, EditOp, Judge, Message, Record, Rollout, Task, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.folder_context import folder_section
from skillsleep.core.train.quoting import LITERAL_CHECKS

RESPONSE_CHARS = 1000  # longer responses are cut in the middle: the head and the end matter most
PROMPT_CHARS = 1500
FEEDBACK_CHARS = 400  # one requirement line in the feedback summary
SUMMARY_LINES = 5
REPLY_TOKENS = 2048  # a minibatch of findings; a reply cut off at the limit is a ParseError
_DIGITS = re.compile(r"\d+")


class Finding(Reply):
    """One finding of the optimizer: what the feedback requires, and the edit that follows."""

    # Field order is generation order under a grammar: the requirement first (read off the
    # feedback), the new line last, so a small model writes it from the evidence.
    # (Measured with Qwen2.5-Coder-0.5B: with "kind" last it copied agent replies.)
    diagnosis: Text = ""
    kind: EditKind
    op: EditOp
    target: Text = ""
    content: Text = ""


class ReflectReply(Reply):
    """The optimizer's findings on one minibatch."""

    findings: list[Lenient[Finding]]


class Trajectory(Record):
    """One task and the scored rollout the current skill produced on it."""

    task: Task
    rollout: Rollout

    @property
    def passed(self) -> bool:
        return self.rollout.score.hard >= 1.0 and self.rollout.run.error is None


def reply_key(t: Trajectory) -> str:
    """A trajectory as independent evidence: its real task (a dream counts as its parent) and its reply
    with case, whitespace and digits folded, so copies of one reply (samples, paraphrases) are one."""
    folded = " ".join(_DIGITS.sub("0", t.rollout.run.response.casefold()).split())
    digest = hashlib.sha256(folded.encode("utf-8")).hexdigest()[:12]
    return f"{t.task.parent or t.task.id}:{digest}"


def backing(batch: list[Trajectory]) -> list[str]:
    """The distinct trajectories a finding on `batch` rests on: its failed ones (all of them when
    none failed), by `reply_key`."""
    failed = [t for t in batch if not t.passed]
    return sorted({reply_key(t) for t in failed or batch})


class ReflectContext(Record):
    """What the optimizer should know besides the trajectories."""

    earlier_steps: list[str] = Field(default_factory=list)
    rejected: list[RejectedEdit] = Field(default_factory=list)
    meta_skill: str = ""
    preferences: str = ""
    max_skill_chars: int | None = None
    folder: SkillFolder | None = None  # the skill folder's other files, redacted (folder_context.py)
    edit_frontmatter: bool = False  # the user lets edits change the frontmatter: it is shown as editable


class ReflectResult(Record):
    """Proposed edits, plus what could not be used (malformed replies, invalid findings)."""

    edits: list[Edit]
    problems: list[UnusableReply] = Field(default_factory=list)


def minibatches(trajectories: list[Trajectory], size: int) -> list[list[Trajectory]]:
    """Split into ceil(n/size) minibatches, dealing failures then successes round-robin, so
    each minibatch holds both kinds where there are enough of each (deterministic order)."""
    if size < 1:
        raise ValueError(f"minibatch_size must be at least 1, got {size}")
    if not trajectories:
        return []
    count = math.ceil(len(trajectories) / size)
    ordered = [t for t in trajectories if not t.passed] + [t for t in trajectories if t.passed]
    batches: list[list[Trajectory]] = [[] for _ in range(count)]
    for i, trajectory in enumerate(ordered):
        batches[i % count].append(trajectory)
    return batches


def may_name_literals(tasks: Iterable[Task]) -> bool:
    """Whether a judge of `tasks` may require literal text in the reply (a heading, a label line, a
    fixed line, JSON). False only when every judge has checks and checks nothing else but things of
    other kinds (a length, a language, a forbidden phrase): no literal check, no expected answer, no
    rubric (which may ask for anything). The reflection is then not shown how to quote literal text,
    whose example a small optimizer copies into findings that have nothing to quote."""
    return not all(_literal_free(t.judge) for t in tasks)


def _literal_free(judge: Judge) -> bool:
    plain = judge.rubric is None and judge.answer is None and judge.answer_pattern is None
    return plain and bool(judge.checks) and not any(c.type in LITERAL_CHECKS for c in judge.checks)


async def reflect(
    llm: LLM, skill: Skill, trajectories: list[Trajectory], ctx: ReflectContext, *, minibatch_size: int = 8
) -> ReflectResult:
    """Ask the optimizer (role "reflect") for findings on every minibatch, concurrently."""
    batches = minibatches(trajectories, minibatch_size)
    literal = "\n" + render("reflect_literal") if may_name_literals(t.task for t in trajectories) else ""
    system = Message(role="system", content=render("reflect_system", literal_text=literal))
    shared = _shared_sections(skill, ctx)
    replies = await asyncio.gather(
        *(_reflect_one(llm, system, shared, batch, i, len(batches)) for i, batch in enumerate(batches))
    )
    edits = [edit for batch_edits, _ in replies for edit in batch_edits]
    problems = [problem for _, batch_problems in replies for problem in batch_problems]
    return ReflectResult(edits=edits, problems=problems)


async def _reflect_one(
    llm: LLM, system: Message, shared: dict[str, str], batch: list[Trajectory], index: int, total: int
) -> tuple[list[Edit], list[UnusableReply]]:
    where = f"reflect minibatch {index + 1}/{total}"
    failed = sum(1 for t in batch if not t.passed)
    user = render(
        "reflect_user",
        **shared,
        count=len(batch),
        failed=failed,
        passed=len(batch) - failed,
        trajectories="\n\n".join(_describe_trajectory(t, n) for n, t in enumerate(batch, 1)),
        summary=feedback_summary(batch),
    )
    messages = [system, Message(role="user", content=user)]
    try:
        reply = await llm.ask_model("reflect", messages, ReflectReply, max_tokens=REPLY_TOKENS, cache_system=True)
    except ParseError as exc:
        return [], [UnusableReply(role="reflect", where=where, error=f"malformed reply, nothing used: {exc}")]
    edits: list[Edit] = []
    problems: list[UnusableReply] = []
    evidence = backing(batch)
    for n, finding in enumerate(reply.findings, 1):
        edit, why = as_edit(finding)
        if edit is not None:
            edits.append(edit.model_copy(update={"evidence": evidence, "support": len(evidence)}))
        else:
            problems.append(UnusableReply(role="reflect", where=where, error=f"finding {n} dropped: {why}"))
    return edits, problems


def as_edit(finding: Finding | Unfit) -> tuple[Edit | None, str]:
    """One finding → an Edit, or None and the reason it is invalid."""
    if isinstance(finding, Unfit):
        return None, finding.error
    kind, op = finding.kind, finding.op
    target, content = given(finding.target), given(finding.content)
    rationale = given(finding.diagnosis) or ""
    if content and (copied := copied_placeholders(content, "reflect_literal", "repair_system")):
        return None, f"the content copies the instructions' format {copied[0]} instead of the text it stands for"
    if kind == "execution_lapse":
        # A lapse note goes to the appendix: it never targets or removes a body line.
        if content is None:
            return None, "an execution_lapse needs a reminder as content"
        return Edit(op="add", content=content, rationale=rationale, kind=kind), ""
    if op in ("delete", "replace") and target is None:
        return None, f"{op} needs the exact existing line as target"
    if op in ("add", "replace") and content is None:
        return None, f"{op} needs the new line as content"
    return Edit(op=op, target=target, content=None if op == "delete" else content, rationale=rationale, kind=kind), ""


_PROTECTED_LABELS: tuple[tuple[RegionName, str], ...] = (("slow-update", "GUIDANCE"), ("appendix", "REMINDERS"))


def _shared_sections(skill: Skill, ctx: ReflectContext) -> dict[str, str]:
    protected = [
        data_block(label, skill.region(name)) for name, label in _PROTECTED_LABELS if skill.region(name).strip()
    ]
    return {
        "skill": _skill_block(skill, ctx.edit_frontmatter),
        "folder": folder_section(ctx.folder),
        "protected": "\n\n".join(protected) or "(none)",
        "earlier_steps": or_none("\n".join(f"- {line}" for line in ctx.earlier_steps), "(none yet)"),
        "rejected": or_none(describe_memory(ctx.rejected)),
        "meta_skill": or_none(ctx.meta_skill),
        "preferences": or_none(ctx.preferences),
        "budget": _budget_note(skill, ctx.max_skill_chars),
    }


def _skill_block(skill: Skill, edit_frontmatter: bool) -> str:
    """The editable lines; with the user's opt-in, the frontmatter's lines first (they may be
    replaced or deleted too, its `---` fences never)."""
    block = data_block("SKILL", editable_text(skill))
    inner = skill.frontmatter_lines()
    if not edit_frontmatter or not inner:
        return block
    note = "The frontmatter (name, description, …) may be edited too: replace or delete one of its lines, one line for one."
    return f"{note}\n{data_block('FRONTMATTER', chr(10).join(inner))}\n\n{block}"


def _budget_note(skill: Skill, limit: int | None) -> str:
    size = len(skill.text)
    if limit is None:
        return f"The skill is {size} characters. Keep it short: every line costs the agent attention."
    note = f"The skill is {size} characters; the limit is {limit} characters."
    if size >= limit:
        return note + " It is at or over the limit: prefer delete or replace findings that shorten it."
    return note + " Edits that would push it past the limit are refused, so keep new lines short."


def feedback_summary(batch: list[Trajectory]) -> str:
    """The judge's requirements across the failed trajectories, most frequent first.

    A feedback line reads "requirement; what this reply did" (see checks.py), so lines are grouped
    by the part before the first "; ": the requirement the failures share stands out, once,
    right before the model answers.
    """
    failed = [t for t in batch if not t.passed]
    if not failed:
        return "Every trajectory in this minibatch passed. Propose an edit only if a passing reply shows a good approach the skill does not state yet."
    counts: dict[str, int] = {}
    for t in failed:
        seen: set[str] = set()
        for line in t.rollout.score.feedback or ([t.rollout.run.error] if t.rollout.run.error else []):
            requirement = truncate(line.split("; ", 1)[0].strip(), FEEDBACK_CHARS)
            if requirement and requirement not in seen:
                seen.add(requirement)
                counts[requirement] = counts.get(requirement, 0) + 1
    if not counts:
        return f"{len(failed)} of {len(batch)} trajectories failed, without judge feedback: compare them with the passing ones."
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:SUMMARY_LINES]
    lines = [f"- ({n} of {len(failed)}) {requirement}" for requirement, n in ranked]
    return (
        f"What the judge asked for in the {len(failed)} failed trajectories, most frequent first:\n"
        + "\n".join(lines)
        + "\n"
    )


def _describe_trajectory(t: Trajectory, number: int) -> str:
    score, run = t.rollout.score, t.rollout.run
    status = "PASSED" if t.passed else "FAILED"
    parts = [
        f"### Trajectory {number}: {status} (hard score {score.hard:g}, soft score {score.soft:.2f})",
        "Task prompt:",
        data_block("TASK", t.task.prompt, limit=PROMPT_CHARS),
    ]
    if t.task.context:
        parts += ["Task context:", data_block("CONTEXT", t.task.context, limit=PROMPT_CHARS)]
    parts += ["Agent response:", data_block("RESPONSE", run.response, limit=RESPONSE_CHARS)]
    if run.tool_calls:
        calls = "\n".join(f"{c.name} {truncate(str(c.arguments), 200)}" for c in run.tool_calls[:10])
        parts += ["Tool calls:", data_block("TOOLS", calls)]
    if run.error:
        parts += ["Agent error:", data_block("ERROR", run.error, limit=500)]
    feedback = "\n".join(f"- {line}" for line in score.feedback) or "- (no feedback lines)"
    parts.append(f"Judge feedback:\n{feedback}")
    if score.rationale:
        parts.append("Judge rationale:\n" + data_block("RATIONALE", score.rationale, limit=600))
    return "\n".join(parts)
