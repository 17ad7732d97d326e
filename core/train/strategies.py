"""Where a step's extra candidates come from (`[train] candidates = N > 1`): different strategies,
not samples of one proposal.

    candidate 1   "optimizer"         the clip of the optimizer's ranked edits (what N = 1 applies)
    candidate 2   "quoted literals"   when the judges of the batch's failing tasks all name literal
                                      format lines (`quoting.demands`): ONE instruction quoting each
                                      of them ("Every reply must include the heading `## Findings`
                                      and a line starting with `Score:`."), no model call
                  "worked example"    otherwise: one short example reply added to the skill, built
                                      from the shortest passing trajectory of the batch; when none
                                      passed, the optimizer is asked for one (role "example", one call),
                                      kept only when it meets its task's own rule checks
    candidate 3   the worked example when candidate 2 quoted literals
    further       "optimizer": each ranked edit on its own (`candidates.edit_sets`)

A strategy whose edit does not change the skill (already there, refused by the rules or the safety
screen), makes a skill that is already a candidate (the optimizer's clip may be the quoted form
itself), or is an edit the memory holds (refused, or applied and not followed) gives no candidate;
the next one takes its place. With N = 1 the trainer asks for one of them only when the clip
changes nothing (`candidates.instead`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import data_block, editable_text, render, truncate
from skillsleep.core.models.replies import Reply, Text
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.privacy.safety import screen_all
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Edit, Message, Run, Strategy, Task, UnusableReply
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.checks import run_checks
from skillsleep.core.train.edits import EditLimits, apply_edits
from skillsleep.core.train.memory import drop_remembered
from skillsleep.core.train.quoting import Demands, instruction, pattern_piece
from skillsleep.core.train.reflect import Trajectory

EXAMPLE_TOKENS = 512
PROMPT_CHARS = 80  # the task's prompt as the example names it


@dataclass
class Extra:
    """A step's extra strategy candidates (each its strategy and edits, in order), the optimizer's
    replies it could not use, and the edits the safety screen refused."""

    candidates: list[tuple[Strategy, list[Edit]]] = field(default_factory=list)
    problems: list[UnusableReply] = field(default_factory=list)
    refused: list[RejectedEdit] = field(default_factory=list)


def _piece(kind: str, value: str, demands: Demands) -> str | None:
    if kind == "section_present" and value.strip() in demands.sections and "`" not in value:
        heading = value.strip() if value.strip().startswith("#") else f"## {value.strip()}"
        return f"the heading `{heading}`"
    if kind in ("contains", "starts_with", "ends_with") and value.strip() in demands.texts and "`" not in value:
        return demands.piece(value.strip()) or f"the text `{value.strip()}`"
    if kind in ("regex", "last_line_regex") and value in demands.patterns:
        return pattern_piece(value)
    return None


def quoted_edit(failing: list[Task], demands: Demands) -> Edit | None:
    """One add quoting every literal line `demands` names, in the order of the first failing task's
    checks; None when they name none."""
    if not failing:
        return None
    checks = [(c.type, c.value if isinstance(c.value, str) else "") for c in failing[0].judge.checks]
    pieces = list(dict.fromkeys(p for kind, value in checks if (p := _piece(kind, value, demands))))
    if not pieces:
        return None
    last = [v for kind, v in checks if kind == "last_line_regex" and v in demands.patterns]
    rationale = "quoted literals: the final line the judges require" if len(pieces) == 1 and last else ""
    content = instruction(pieces, rationale)
    return Edit(op="add", content=content, rationale=rationale or "quoted literals: the lines the judges require")


def example_content(prompt: str, reply: str, limits: EditLimits) -> str | None:
    """An example reply to `prompt` as at most `limits.max_content_lines` lines (the reply's lines
    quoted with `> `; the middle cut when long) within `limits.max_content_chars`."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    room = limits.max_content_lines - 1
    if not lines or room < 1:
        return None
    if len(lines) > room:
        lines = [*lines[: room - 2], "…", lines[-1]] if room >= 3 else lines[-room:]
    head = f'Example of a good reply (to "{_cut(" ".join(prompt.split()), PROMPT_CHARS)}"):'
    each = max((limits.max_content_chars - len(head)) // len(lines) - 3, 8)
    content = "\n".join([head, *(f"> {_cut(line, each)}" for line in lines)])
    return content if len(content) <= limits.max_content_chars else None


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class ExampleReply(Reply):
    """The optimizer's example reply to one task."""

    reply: Text = ""


async def _asked(llm: LLM, skill: Skill, t: Trajectory, limits: EditLimits) -> tuple[str, list[UnusableReply]]:
    """The example call: one short reply to `t`'s task that meets what its feedback asks for."""
    user = render(
        "example_user",
        skill=data_block("SKILL", editable_text(skill)),
        task=data_block("TASK", truncate(t.task.prompt, 1500)),
        feedback=data_block("FEEDBACK", truncate("\n".join(t.rollout.score.feedback) or "(none)", 800)),
        max_lines=limits.max_content_lines - 1,
    )
    messages = [Message(role="system", content=render("example_system")), Message(role="user", content=user)]
    try:
        reply = await llm.ask_model("example", messages, ExampleReply, max_tokens=EXAMPLE_TOKENS, cache_system=True)
    except ParseError as exc:
        return "", [UnusableReply(role="example", where="example", error=f"malformed reply, no example: {exc}")]
    return reply.reply, []


def unmet(task: Task, reply: str) -> list[str]:
    """The feedback of each rule check of `task` that `reply` fails, its `<answer>` placeholders
    read as the task's expected answer (an example the agent copies must meet the format it shows:
    the 1.5B optimizer wrote `{"Label": "implausible", …}` for a judge wanting a `Label:` line)."""
    if not reply.strip():
        return []
    answer = (task.judge.answer or "").strip()
    text = reply.replace("<answer>", answer) if answer else reply
    return [r.feedback for r in run_checks(task.judge, Run(response=text)) if not r.passed]


def _unanswered(t: Trajectory) -> str:
    """`t`'s reply with its task's expected answer written as `<answer>` (never one task's answer in the skill)."""
    answer, reply = (t.task.judge.answer or "").strip(), t.rollout.run.response
    return re.sub(rf"(?<!\w){re.escape(answer)}(?!\w)", "<answer>", reply) if answer else reply


async def example_edit(
    llm: LLM, skill: Skill, trajectories: list[Trajectory], limits: EditLimits
) -> tuple[Edit | None, list[UnusableReply]]:
    """The worked example: the shortest passing reply of the batch, else one asked of the optimizer
    for the first failing task."""
    passing = sorted((t for t in trajectories if t.passed), key=lambda t: (len(t.rollout.run.response), t.task.id))
    problems: list[UnusableReply] = []
    if passing:
        t, reply, why = passing[0], _unanswered(passing[0]), "a reply that passed"
    elif trajectories:
        t, why = trajectories[0], "asked of the optimizer: no reply of the batch passed"
        reply, problems = await _asked(llm, skill, t, limits)
        if missed := unmet(t.task, reply):
            error = f"the optimizer's example reply misses its task's own checks, no example: {'; '.join(missed)}"
            return None, [*problems, UnusableReply(role="example", where="example", error=error)]
    else:
        return None, []
    content = example_content(t.task.prompt, reply, limits)
    return (Edit(op="add", content=content, rationale=f"worked example: {why}") if content else None), problems


async def extra(
    llm: LLM,
    current: Skill,
    trajectories: list[Trajectory],
    demands: Demands,
    limits: EditLimits,
    *,
    n: int,
    redactor: Redactor,
    taken: Sequence[Skill] = (),
    remembered: Sequence[RejectedEdit] = (),
) -> Extra:
    """Up to `n - 1` strategy candidates for a step whose first candidate is the optimizer's clip;
    `taken`: the skills already candidates; `remembered`: the run's memory of rejected edits."""
    out = Extra()
    if n < 2:
        return out

    def new(edits: list[Edit]) -> bool:
        kept, _ = drop_remembered(edits, list(remembered), current)
        result = apply_edits(current, kept, limits)
        return bool(kept) and bool(result.applied) and result.skill not in (current, *taken)

    failing = [t.task for t in trajectories if not t.passed]
    quoted = quoted_edit(failing, demands)
    if quoted is not None and new([quoted]):
        out.candidates.append(("quoted literals", [quoted]))
    if len(out.candidates) < n - 1:
        edit, out.problems = await example_edit(llm, current, trajectories, limits)
        safe, out.refused = screen_all([edit] if edit else [], redactor)
        if safe and new(safe):
            out.candidates.append(("worked example", safe))
    return out
