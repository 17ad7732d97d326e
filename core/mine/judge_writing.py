"""Judge writing (mining, step 4): a judge for each kept task, written by the optimizer from what
the user asked and corrected.

One optimizer call per task (role "mine") reads the wordings, the corrections and the outcome
counts (as data) and returns rule checks and/or a rubric. Each check is validated: a type
`core.train.judges` supports (`records.CheckType`), a value of the right kind by the scorer's own rules
(`checks.check_problem`: text, a compiling regex, a whole number ≥ 0, none for json_valid; a
quoted number is taken as one); a check or a rubric that the safety screen flags is dropped.
Then the judge is grounded in the task's instances (`core.mine.grounding`): a check whose literal the
user never wrote, or that only one instance could pass, is dropped or generalised; a rubric
sentence or a feedback with a word the user never wrote is dropped (so a prompt's example never
survives), and at most MAX_CHECKS checks stay. What was dropped is listed per task and counted.
A line the user's corrections keep showing (`grounding.demanded_lines`: "Signed-off-by: …" after
"You forgot it again:") is added as a `contains` check. Such a judge has `grounding = "evidence"`.
With nothing usable and grounded (or a reply that cannot be read) the judge is the demanded lines'
checks; without any, the outcome-signals rubric (`outcome_judge`, `grounding = "outcome-signals"`):
DEFAULT_RUBRIC and a sentence for each signal the instances show
(corrections, repeated asks, reverts, interrupts, errors, successes), by count and kind. It refers
to the request shown in the task data instead of quoting it, because a rubric is read by the judge
as instructions and transcript text must only ever reach a model framed as data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal, get_args

from pydantic import ConfigDict, Field, StrictInt, StrictStr, ValidationError

from skillsleep.core.mine.grounding import Grounds, demanded_lines, ground_judge, with_demanded
from skillsleep.core.mine.intents import EVIDENCE_CHARS, Evidence, EvidenceKind, Instance, Outcomes
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import data_block, render, truncate
from skillsleep.core.models.replies import OPTIONAL, Lenient, Reply, Text, Unfit, raw
from skillsleep.core.privacy.safety import screen
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import Check, CheckType, Edit, Judge, Message, Record, UnusableReply
from skillsleep.core.train.checks import COUNT_CHECKS, check_problem

REQUEST_CHARS = 1500
WORDING_CHARS = 300
JUDGE_WORDINGS = 3
JUDGE_EVIDENCE = 8
MAX_CHECKS = 6
RUBRIC_CHARS = 800
REPLY_TOKENS = 1024

DEFAULT_RUBRIC = (
    "The response accomplishes the user's request shown in the task data: it does what was asked, "
    "completely and correctly, in the form the user asked for, without changes nobody asked for."
)
# The outcome-signals rubric: one sentence per kind of evidence the instances show.
_SIGNALS: dict[EvidenceKind, str] = {
    "correction": "The user corrected the answer in {n} of {total} earlier attempts: score strictly whether "
    "the response does exactly what the request asks, not something close to it.",
    "repeat": "The user had to ask again in {n} of {total} earlier attempts: the response must finish the "
    "request in this one answer, leaving no part of it for later.",
    "revert": "The user reverted the agent's work in {n} of {total} earlier attempts: score lower any change "
    "the request did not ask for.",
    "interrupt": "The user interrupted the agent in {n} of {total} earlier attempts: the response must stay "
    "on the request and not wander into other work.",
    "error": "{n} of {total} earlier attempts ended in an error: the response must finish the work without "
    "stopping on an error, or say plainly what stopped it.",
}
_SUCCESS = (
    "{n} of {total} earlier attempts ended as the user wanted (accepted, or followed by new work): a response "
    "that does what was asked and no more passes."
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
    "max_sentences": "the answer has at most `value` sentences (a line counts as at least one)",
    "language": "the answer is written in the language `value` (en, es, fr or de)",
    "json_valid": "the answer is valid JSON (value null)",
    "tool_called": "the agent called the tool named `value` (a tool the user named)",
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

    # maxItems / maxLength bound a constrained decoder (the embedded 0.5B otherwise lists every
    # check type until the token cap); a longer reply from another model is cut, not refused
    checks: list[Lenient[CheckReply]] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_CHECKS})
    rubric: Text = Field(default="", json_schema_extra={"maxLength": RUBRIC_CHARS})


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
    """A model's check → a Check that `core.train.judges` can run, or None and why it was dropped."""
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


async def write_judge(
    llm: LLM,
    task_id: str,
    wordings: list[str],
    evidence: list[Evidence],
    outcomes: Outcomes,
    instances: Sequence[Instance],
) -> WrittenJudge:
    """The judge the optimizer writes for one task, kept as far as `instances` ground it
    (`core.mine.grounding`); the outcome-signals rubric when nothing of it is usable and grounded."""
    messages = judge_messages(wordings, evidence, outcomes)
    where = f"judge for {task_id}"
    fallback = outcome_judge(outcomes, instances)
    try:
        reply = await llm.ask_model("mine", messages, JudgeReply, max_tokens=REPLY_TOKENS, cache_system=True)
    except ParseError as exc:
        problem = f"the optimizer's reply could not be read ({exc}); the outcome-signals rubric is used"
        return WrittenJudge(judge=fallback, source="default", problems=[_problem(where, problem)])
    checks, dropped = _checks(reply.checks)
    rubric = " ".join(reply.rubric.split()) or None
    problems = []
    if rubric is not None and (unsafe := _unsafe(rubric)):
        problems.append(_problem(where, f"the rubric was refused by the safety screen ({unsafe})"))
        rubric = None
    grounded = ground_judge(checks, rubric, Grounds(instances))
    dropped += grounded.dropped
    grounded.checks = with_demanded(grounded.checks, demanded_lines(instances), dropped)
    if len(grounded.checks) > MAX_CHECKS:
        dropped += [f"check {c.type}: more than {MAX_CHECKS} checks" for c in grounded.checks[MAX_CHECKS:]]
    if not grounded.checks and grounded.rubric is None:
        return WrittenJudge(judge=fallback, source="default", dropped=dropped, problems=problems)
    rubric = truncate(grounded.rubric, RUBRIC_CHARS) if grounded.rubric else None
    judge = Judge(checks=grounded.checks[:MAX_CHECKS], rubric=rubric, grounding="evidence")
    return WrittenJudge(judge=judge, source="optimizer", dropped=dropped, problems=problems)


def outcome_judge(outcomes: Outcomes, instances: Sequence[Instance]) -> Judge:
    """The judge where nothing written is grounded: a `contains` check for each line the user's
    corrections demand (`grounding.demanded_lines`, so `grounding = "evidence"`); without one,
    DEFAULT_RUBRIC and one sentence per outcome signal the instances show (counts and kinds only:
    the rubric is read as instructions, so it never quotes a transcript)."""
    demanded = with_demanded([], demanded_lines(instances), [])
    if demanded:
        return Judge(checks=demanded[:MAX_CHECKS], grounding="evidence")
    total = outcomes.total or len(instances)
    signals = Counter(kind for i in instances for kind in {e.kind for e in i.evidence})
    sentences = [DEFAULT_RUBRIC]
    for kind, sentence in _SIGNALS.items():
        if signals[kind]:
            sentences.append(sentence.format(n=signals[kind], total=total))
    if outcomes.success:
        sentences.append(_SUCCESS.format(n=outcomes.success, total=total))
    return Judge(rubric=" ".join(sentences), grounding="outcome-signals")


def _checks(written: list[CheckReply | Unfit]) -> tuple[list[Check], list[str]]:
    """The usable checks and the dropped ones (why)."""
    checks: list[Check] = []
    dropped: list[str] = []
    for n, item in enumerate(written, 1):
        check, why = validate_check(item.model_dump() if isinstance(item, CheckReply) else raw(item))
        if check is None:
            dropped.append(f"check {n}: {why}")
        else:
            checks.append(check)
    return checks, dropped


def _problem(where: str, error: str) -> UnusableReply:
    return UnusableReply(role="mine", where=where, error=error)
