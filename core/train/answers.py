"""Answer matching of a judge: the response's answer (the last match of `answer_pattern`, or the
whole response) against the expected one, exactly, normalized, or as a number."""

from __future__ import annotations

import math
import re

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Judge
from skillsleep.core.train.checks import CheckResult, compile_pattern, quoted

__all__ = ["answer_problems", "is_answer_line", "match_answer", "states_answer"]

_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_QUOTED = re.compile(r"`[^`\n]*`")
_EDGE_PUNCT = " \t\n\"'`“”‘’«».,;:!?*_"


def match_answer(judge: Judge, response: str) -> CheckResult | None:
    """Compare the response's answer with `judge.answer` (None when the judge has no answer)."""
    if judge.answer is None:
        return None
    expected, want, pattern = _expected(judge), _expected_number(judge), _answer_pattern(judge)
    if pattern is not None:
        matches = list(pattern.finditer(response))
        if not matches:
            return CheckResult(
                False,
                f"no answer in the form `{pattern.pattern}` was found in the response; "
                f"the expected answer is {quoted(expected)}",
            )
        got = matches[-1].group(1) or ""
    else:
        got = response
    if want is not None:
        return _match_number(expected, want, got)
    ok = got.strip() == expected.strip() if judge.answer_match == "exact" else _normalize(got) == _normalize(expected)
    if ok:
        return CheckResult(True)
    seen = f"the response answered {quoted(got)}" if got.strip() else "the response gave no answer"
    return CheckResult(False, f"the expected answer is {quoted(expected)}; {seen}")


def is_answer_line(judge: Judge, text: str) -> bool:
    """Whether `text`, all of it, is an answer `judge` accepts: `ANSWER: True` for a task whose
    answer is True (the whole line matches `answer_pattern`, or is the answer where it has none)."""
    if judge.answer is None or not text.strip():
        return False
    try:
        pattern = _answer_pattern(judge)
        result = match_answer(judge, text)
    except ConfigError:
        return False
    if pattern is not None and pattern.fullmatch(text.strip()) is None:
        return False
    return result is not None and result.passed


def states_answer(judge: Judge, text: str) -> bool:
    """Whether `text` states, outside backticks, an answer `judge` accepts in its answer form
    (`… without working. ANSWER: True`); a quoted form (`ANSWER: True` in backticks) is a format
    rule's literal, not a stated answer. False for a judge without `answer_pattern`."""
    if judge.answer is None or judge.answer_pattern is None:
        return False
    bare = _QUOTED.sub(" ", text)
    try:
        pattern = _answer_pattern(judge)
        result = match_answer(judge, bare)
    except ConfigError:
        return False
    return pattern is not None and pattern.search(bare) is not None and result is not None and result.passed


def answer_problems(judge: Judge) -> list[str]:
    """What in the judge's answer settings the scorer would refuse, one line each with the fix."""
    problems = []
    if judge.answer is not None:
        for rule in (_expected_number if judge.answer_match == "number" else _expected, _answer_pattern):
            try:
                rule(judge)
            except ConfigError as exc:
                problems.append(str(exc))
    return problems


def _expected(judge: Judge) -> str:
    if judge.answer is None or not judge.answer.strip():
        raise ConfigError("the answer is empty; give the expected answer, or drop 'answer'")
    return judge.answer


def _expected_number(judge: Judge) -> float | None:
    """The expected answer as a number when answer_match is "number" (else None)."""
    if judge.answer_match != "number":
        return None
    want = _parse_number(_expected(judge))
    if want is None:
        raise ConfigError(
            f"the expected answer {judge.answer!r} is not a number, but answer_match is 'number'; "
            'give a number, or use answer_match "normalized"'
        )
    return want


def _answer_pattern(judge: Judge) -> re.Pattern[str] | None:
    """`answer_pattern` compiled; it must hold exactly one capture group, around the answer."""
    if judge.answer_pattern is None:
        return None
    try:
        pattern = compile_pattern(judge.answer_pattern, re.MULTILINE)
    except ConfigError as exc:
        raise ConfigError(f"answer_pattern: {exc}") from None
    if pattern.groups != 1:
        raise ConfigError(
            f"answer_pattern {judge.answer_pattern!r} needs exactly one capture group ( … ) around the "
            f"answer, it has {pattern.groups}; make any other group non-capturing: (?: … )"
        )
    return pattern


def _normalize(text: str) -> str:
    """Casefold, drop markdown emphasis/code marks, collapse whitespace, trim edge punctuation."""
    text = text.replace("**", "").replace("`", "")
    return " ".join(text.split()).casefold().strip(_EDGE_PUNCT)


def _parse_number(text: str) -> float | None:
    """The last number in `text` (thousands commas allowed), or None."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    try:
        return float(found[-1].replace(",", "").rstrip("."))
    except ValueError:
        return None


def _match_number(expected: str, want: float, got: str) -> CheckResult:
    have = _parse_number(got)
    if have is not None and math.isclose(have, want, rel_tol=1e-9, abs_tol=1e-6):
        return CheckResult(True)
    seen = (
        f"the response answered {quoted(got)}"
        if have is not None
        else f"the response contains no number ({quoted(got)})"
    )
    return CheckResult(False, f"the expected answer is {quoted(expected)}; {seen}")
