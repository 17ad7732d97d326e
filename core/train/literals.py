"""Rewrites and refusals of added lines that need no model call, before an edit is applied.

quoted()           an added line that is only a bare heading (`## Summary`) is rewritten into the rule
                   the refusal asks for, the heading quoted in backticks
answer_lines()     an added line that is one batch task's expected answer (`ANSWER: True` where other
                   tasks expect False) is refused before it is applied, so the repair asks for the rule
literal_rule()     an added line that is only a literal output template (`ANSWER: <number>`, a JSON
                   shape) is rewritten into the instruction quoting it, before ranking (the literal
                   lines the judges name, in any number: core/train/quoting.py)
rewritten()        an edit after the rewrites above: what the memory compares (core/train/memory.py)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from skillsleep.core.shared.records import Edit, Task
from skillsleep.core.train.answers import is_answer_line, states_answer

_BARE_HEADING = re.compile(r"^#{1,6}\s+\S")  # a markdown heading line, as an edit's whole content
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
LABEL_WORDS = r"[A-Za-z][\w()/-]*(?: [\w()/-]+){0,2}"  # a label of a literal line: up to three words
# a literal output line: a short label, a colon and only a placeholder (`ANSWER: <number>`, `Verdict: ...`)
TEMPLATE_LINE = re.compile(
    rf"^(?P<label>{LABEL_WORDS}):\s*"  # a label, then a colon
    r"(?:<[^<>]+>|\[[^\[\]]+\]|\{[^{}]*\}|\.\.\.|…)$"  # and only a placeholder: <number>, [value], {x}, ...
)
JSON_SHAPE = re.compile(r'^(?:\{\s*"[^"]+"\s*:.*\}|\[\s*\{\s*"[^"]+"\s*:.*\}\s*\])$')  # {"answer": <number>}
# a label's first word that makes the line an instruction, not a literal ("Write ANSWER: <n>")
INSTRUCTION_VERB = re.compile(
    r"(?:add|always|begin|end|finish|give|include|never|output|print|put|"
    r"reply|respond|return|say|show|start|state|use|write)\b",
    re.IGNORECASE,
)
AT_END = re.compile(r"\b(?:end|ends|ending|last|final|finish)\b", re.IGNORECASE)
AT_START = re.compile(r"\b(?:start|starts|begin|begins|first|open|opens)\b", re.IGNORECASE)


def quoted(edit: Edit) -> Edit | None:
    """An added line that is nothing but a bare heading, rewritten as the rule the refusal asks for:
    the heading quoted in backticks as text every reply must include. A small optimizer often
    writes the literal the reply must contain instead of the rule (even when told how to rewrite
    it); this rewrite costs no call, stays one plain line, and still has to pass the gate. None for
    any other edit."""
    content = (edit.content or "").strip()
    if edit.op != "add" or "\n" in content or "`" in content or not _BARE_HEADING.match(content):
        return None
    return edit.model_copy(update={"content": f"Every reply must include the heading `{content}`."})


def answer_lines(tasks: Iterable[Task]) -> Callable[[Edit], str | None]:
    """Why an added (or replacing) line is refused before it is applied: it is, all of it, the
    expected answer of some of `tasks` and not of the others (`ANSWER: True` where half the batch
    expects False), or states one in the answer's form outside backticks (`Answer at once.
    ANSWER: True`). A small optimizer copies the failures' expected answer into the skill, which
    can only trade some tasks for others; the repair call is asked for the rule instead. None for
    any other edit, and when fewer than two tasks have an expected answer."""
    judged = [t.judge for t in tasks if t.judge.answer is not None]

    def refuse(edit: Edit) -> str | None:
        content = _LIST_MARKER.sub("", (edit.content or "").strip(), count=1)
        if edit.op == "delete" or "\n" in content or len(judged) < 2:
            return None
        hits = sum(is_answer_line(judge, content) or states_answer(judge, content) for judge in judged)
        if not 0 < hits < len(judged):
            return None
        return (
            f"it is the expected answer of {hits} of this batch's {len(judged)} tasks, and the others expect "
            "another: a skill line must hold for every task. Write instead the rule or reasoning step that "
            "gets each task's own answer right"
        )

    return refuse


def literal_rule(edit: Edit) -> Edit | None:
    """An added line that is only a literal output template (a short label with a placeholder value
    such as `ANSWER: <number>` or `Verdict: ...`, or a JSON shape such as `{"answer": <number>}`),
    rewritten without a call into the instruction that quotes it: "End every reply with the line
    `ANSWER: <number>`." (the end or start when the edit's rationale says so, else "Every reply must
    include …"). A small optimizer writes the line the reply must contain instead of the rule, and
    the target model does not read a bare template as one. A label with a concrete value (one
    task's answer) or a line that reads as an instruction is not a template: None, as for any
    other edit (a line the failing tasks' judges all name is quoted by core/train/quoting.py)."""
    content = _LIST_MARKER.sub("", (edit.content or "").strip(), count=1)
    if edit.op != "add" or "\n" in content or "`" in content:
        return None
    label = TEMPLATE_LINE.match(content)
    if label is not None and not INSTRUCTION_VERB.match(label.group("label")):
        what = "the line"
    elif JSON_SHAPE.match(content):
        what = "JSON shaped like"
    else:
        return None
    if AT_END.search(edit.rationale):
        rule = f"End every reply with {what} `{content}`."
    elif AT_START.search(edit.rationale):
        rule = f"Start every reply with {what} `{content}`."
    else:
        rule = f"Every reply must include {what} `{content}`."
    return edit.model_copy(update={"content": rule})


def rewritten(edit: Edit) -> Edit:
    """`edit` after the rewrites that need no call (`quoted`, `literal_rule`)."""
    return quoted(edit) or literal_rule(edit) or edit
