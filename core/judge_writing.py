"""Judge writing (mining, step 4): a judge for each kept task, written by the optimizer from what
the user asked and corrected.

One optimizer call per task (role "mine") reads the wordings, the corrections and the outcome
counts (as data) and returns rule checks and/or a rubric. Each check is validated: a type
`core.judges` supports (`records.CheckType`), a value of the right kind by the scorer's own rules
(`checks.check_problem`: text, a compiling regex, a whole number ≥ 0, none for json_valid; a
quoted number is taken as one), at most MAX_CHECKS; a check or a rubric that the safety screen
flags is dropped too, and so is a check value, a feedback or a rubric copied from the
judge-writing instructions rather than the user's words (a small model echoes the prompt's
examples; a check keeps the scorer's own feedback then). Dropped checks are listed per task and
counted. With no valid check and no rubric (or a reply that cannot be read) the judge is
DEFAULT_RUBRIC. It refers to the request shown in the task data instead of quoting it, because a
rubric is read by the judge as instructions and transcript text must only ever reach a model
framed as data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from pydantic import ConfigDict, Field, StrictInt, StrictStr, ValidationError

from skillsleep.core.checks import COUNT_CHECKS, check_problem
from skillsleep.core.errors import ParseError
from skillsleep.core.intents import EVIDENCE_CHARS, Evidence, Outcomes
from skillsleep.core.llm import LLM
from skillsleep.core.prompts import data_block, render, truncate
from skillsleep.core.records import Check, CheckType, Edit, Judge, Message, Record, UnusableReply
from skillsleep.core.replies import OPTIONAL, Lenient, Reply, Text, Unfit, raw
from skillsleep.core.safety import screen

REQUEST_CHARS = 1500
WORDING_CHARS = 300
JUDGE_WORDINGS = 3
JUDGE_EVIDENCE = 8
MAX_CHECKS = 6
COPIED_MIN_CHARS = 8  # shorter texts (a word like "JSON") are not taken for a copy of the instructions
RUBRIC_CHARS = 800
REPLY_TOKENS = 1024

DEFAULT_RUBRIC = (
    "The response accomplishes the user's request shown in the task data: it does what was asked, "
    "completely and correctly, in the form the user asked for, without changes nobody asked for."
)

_CHECK_TYPES: tuple[str, ...] = get_args(CheckType)
CHECK_HELP: dict[str, str] = {
    "contains": "the answer contains the text `value`",
    "not_contains": "the answer does not contain the text `value`",
    "regex": "some part of the answer matches the regular expression `value`",
    "not_regex": "no part of the answer matches the regular expression `value`",
    "starts_with": "the answer starts with the text `value`",
    "ends_with": "the answer ends with the text `value`",
    "last_line_regex": "the answer's last line matches the regular expression `value` in full",
    "section_present": "the answer has a markdown heading containing `value`",
    "max_chars": "the answer has at most `value` characters",
    "min_chars": "the answer has at least `value` characters",
    "max_lines": "the answer has at most `value` lines",
    "max_words": "the answer has at most `value` words",
    "min_words": "the answer has at least `value` words",
    "json_valid": "the answer is valid JSON (value null)",
    "tool_called": "the agent called the tool named `value` (for example Bash, Edit, Write)",
}


class CheckReply(Reply):
    """A rule check as the optimizer writes it (`validate_check` decides whether it is usable)."""

    type: CheckType
    value: StrictStr | StrictInt | None = None
    case_sensitive: bool = Field(default=True, json_schema_extra=OPTIONAL)
    feedback: Text = ""


class JudgeReply(Reply):
    """The optimizer's judge for one task: rule checks and/or a rubric."""

    model_config = ConfigDict(title="mine_judge")

    checks: list[Lenient[CheckReply]] = Field(default_factory=list)
    rubric: Text = ""


class WrittenJudge(Record):
    """A task's judge, where it came from, the checks dropped, and what could not be used."""

    judge: Judge
    source: Literal["optimizer", "default"]
    dropped: list[str] = Field(default_factory=list)
    problems: list[UnusableReply] = Field(default_factory=list)


def _unsafe(text: str) -> str | None:
    refusal = screen(Edit(op="add", content=text))
    return None if refusal is None else f"{refusal.rule}: “{refusal.matched}”"


def validate_check(raw: object) -> tuple[Check | None, str]:
    """A model's check → a Check that `core.judges` can run, or None and why it was dropped."""
    if not isinstance(raw, dict):
        return None, f"not an object: {raw!r}"
    kind, value = raw.get("type"), raw.get("value")
    if kind not in _CHECK_TYPES:
        return None, f"unknown check type {kind!r} (supported: {', '.join(_CHECK_TYPES)})"
    if kind in COUNT_CHECKS and isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())  # models often quote numbers
    elif kind == "json_valid":
        value = None
    sensitive = raw.get("case_sensitive", True)
    if not isinstance(sensitive, bool):
        return None, f"case_sensitive must be true or false, got {sensitive!r}"
    feedback = raw.get("feedback")
    feedback = " ".join(feedback.split()) if isinstance(feedback, str) and feedback.strip() else None
    try:
        check = Check(type=kind, value=value, case_sensitive=sensitive, feedback=feedback)
    except ValidationError:
        return None, f"{kind} needs text or a whole number as its value, got {value!r}"
    problem = check_problem(check)
    if problem:
        return None, f"the {kind} check {problem}"
    for text in (value if isinstance(value, str) else "", feedback or ""):
        problem = _unsafe(text) if text else None
        if problem:
            return None, f"{kind} check refused by the safety screen ({problem})"
    return check, ""


def judge_messages(wordings: list[str], evidence: list[Evidence], outcomes: Outcomes) -> list[Message]:
    """The judge-writing prompt: the wordings (the representative first), corrections and errors
    fenced as data."""
    others = wordings[1 : 1 + JUDGE_WORDINGS]
    if others:
        blocks = "\n".join(data_block(f"WORDING {n}", w, limit=WORDING_CHARS) for n, w in enumerate(others, 2))
        wording_text = "Other wordings of the same request:\n" + blocks
    else:
        wording_text = "(no other wordings)"
    shown = evidence[:JUDGE_EVIDENCE]
    if shown:
        lines = []
        for n, e in enumerate(shown, 1):
            head = Evidence(kind=e.kind).line()
            block = ":\n" + data_block(f"{e.kind.upper()} {n}", e.text, limit=EVIDENCE_CHARS) if e.text else ""
            lines.append(f"{n}. {head}{block}")
        corrections = "\n".join(lines)
    else:
        corrections = "(none recorded: no correction, repeated ask, revert or error followed the request)"
    outcome_text = (
        f"{outcomes.total} attempt(s): {outcomes.success} succeeded, {outcomes.failure} failed, "
        f"{outcomes.unknown} without a clear outcome."
    )
    user = render(
        "mine_judge_user",
        request=data_block("REQUEST", wordings[0] if wordings else "", limit=REQUEST_CHARS),
        wordings=wording_text,
        corrections=corrections,
        outcomes=outcome_text,
    )
    check_types = "\n".join(f"   - {name}: {CHECK_HELP.get(name, name)}" for name in _CHECK_TYPES)
    system = render("mine_judge_system", check_types=check_types)
    return [Message(role="system", content=system), Message(role="user", content=user)]


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


class _Copied:
    """Whether a text of the optimizer's judge reply is copied from the judge-writing instructions
    (their examples: "no, use X", the sample feedback) rather than from the user's words. A small
    model returns the prompt's example feedback and rubric for nearly every task; such text is
    never a judge (a judge comes from what the user asked or corrected, never from a prompt's
    examples), and feedback like it would send the reflection after a requirement nobody made."""

    def __init__(self, instructions: str, users_words: Iterable[str]) -> None:
        self.instructions = _flat(instructions)
        self.users_words = _flat("\n".join(users_words))

    def __call__(self, text: str) -> bool:
        flat = _flat(text).strip(" .")
        return len(flat) >= COPIED_MIN_CHARS and flat in self.instructions and flat not in self.users_words


async def write_judge(
    llm: LLM, task_id: str, wordings: list[str], evidence: list[Evidence], outcomes: Outcomes
) -> WrittenJudge:
    """The judge the optimizer writes for one task, or DEFAULT_RUBRIC when nothing of it is usable."""
    messages = judge_messages(wordings, evidence, outcomes)
    where = f"judge for {task_id}"
    try:
        reply = await llm.ask_model("mine", messages, JudgeReply, max_tokens=REPLY_TOKENS, cache_system=True)
    except ParseError as exc:
        problem = f"the optimizer's reply could not be read ({exc}); the default rubric is used"
        return WrittenJudge(judge=Judge(rubric=DEFAULT_RUBRIC), source="default", problems=[_problem(where, problem)])
    copied = _Copied(messages[0].content, [*wordings, *(e.text for e in evidence)])
    checks, dropped, copies = _checks(reply.checks, copied)
    rubric = " ".join(reply.rubric.split()) or None
    if rubric is not None and copied(rubric):
        copies.append("the rubric")
        rubric = None
    problems = []
    if copies:
        problems.append(
            _problem(
                where,
                "the optimizer copied the judge-writing instructions instead of the user's words "
                f"into {', '.join(copies)}; dropped",
            )
        )
    if rubric is not None:
        unsafe = _unsafe(rubric)
        if unsafe:
            problems.append(_problem(where, f"the rubric was refused by the safety screen ({unsafe})"))
            rubric = None
        else:
            rubric = truncate(rubric, RUBRIC_CHARS)
    if not checks and rubric is None:
        return WrittenJudge(judge=Judge(rubric=DEFAULT_RUBRIC), source="default", dropped=dropped, problems=problems)
    return WrittenJudge(
        judge=Judge(checks=checks, rubric=rubric), source="optimizer", dropped=dropped, problems=problems
    )


def _checks(written: list[CheckReply | Unfit], copied: _Copied) -> tuple[list[Check], list[str], list[str]]:
    """The usable checks, the dropped ones (why), and which texts were copied from the instructions."""
    checks: list[Check] = []
    dropped: list[str] = []
    copies: list[str] = []
    for n, item in enumerate(written, 1):
        check, why = validate_check(item.model_dump() if isinstance(item, CheckReply) else raw(item))
        if check is not None and isinstance(check.value, str) and copied(check.value):
            why = f"its value {check.value!r} is copied from the judge-writing instructions, not the user's words"
            check = None
            copies.append(f"check {n}")
        if check is not None and check.feedback and copied(check.feedback):
            check = check.model_copy(update={"feedback": None})  # the scorer's own feedback names the requirement
            copies.append(f"the feedback of check {n}")
        if check is None:
            dropped.append(f"check {n}: {why}")
        elif len(checks) >= MAX_CHECKS:
            dropped.append(f"check {n}: more than {MAX_CHECKS} checks")
        else:
            checks.append(check)
    return checks, dropped, copies


def _problem(where: str, error: str) -> UnusableReply:
    return UnusableReply(role="mine", where=where, error=error)
