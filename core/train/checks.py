"""Rule checks of a judge (`contains`, `regex`, `section_present`, `max_chars`, `tool_called`, …):
each passes or fails with plain-word feedback that says what was required and what was seen.

The value each check type needs is one rule, read by the scorer and by the task reader alike
(`check_problem`), so a task file with a check it cannot use is refused before any model call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Check, Judge, Run
from skillsleep.core.train.languages import LANGUAGES, function_words

__all__ = ["COUNT_CHECKS", "CheckResult", "check_problem", "compile_pattern", "quoted", "run_checks", "sentences"]

_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$", re.M)
_JSON_BLOCK = re.compile(r"^```json[ \t]*\n(.*?)\n```[ \t]*$", re.S | re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORDLIKE = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class CheckResult:
    """One component's verdict; `feedback` is empty when it passed."""

    passed: bool
    feedback: str = ""
    value: float | None = None  # the soft value (None: 1.0 when passed, else 0.0)

    @property
    def soft(self) -> float:
        return self.value if self.value is not None else float(self.passed)


def run_checks(judge: Judge, run: Run) -> list[CheckResult]:
    """Evaluate every rule check of `judge` on `run`, in order."""
    return [_run_check(check, run) for check in judge.checks]


def check_problem(check: Check) -> str | None:
    """Why the scorer cannot use `check` (its value does not fit its type), or None."""
    try:
        _CHECKS[check.type][0](check)
    except ConfigError as exc:
        return str(exc)
    return None


def _value(check: Check, read: Callable[[Check], Any]) -> Any:
    try:
        return read(check)
    except ConfigError as exc:
        raise ConfigError(f"the {check.type} check {exc}") from None


def _shown(value: object) -> str:
    return "no value" if value is None else json.dumps(value)


def _text(check: Check) -> str:
    if not isinstance(check.value, str) or not check.value.strip():
        raise ConfigError(f'needs a non-empty text value, got {_shown(check.value)}; give it as "value": "…"')
    return check.value


def _count(check: Check) -> int:
    value = check.value
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f'needs a whole number ≥ 0 as its value, got {_shown(value)}; give it as "value": 100')
    return value


def _language(check: Check) -> str:
    if not isinstance(check.value, str) or check.value not in LANGUAGES:
        codes = ", ".join(f"{code} ({name})" for code, (name, _) in LANGUAGES.items())
        raise ConfigError(f'needs a language code, one of {codes}, got {_shown(check.value)}; give it as "value": "es"')
    return check.value


def _no_value(check: Check) -> None:
    return None


def _pattern(check: Check) -> re.Pattern[str]:
    flags = re.MULTILINE | (0 if check.case_sensitive else re.IGNORECASE)
    return compile_pattern(_text(check), flags)


def compile_pattern(pattern: str, flags: int) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ConfigError(f"the pattern {pattern!r} is not a valid regular expression ({exc}); fix it") from None


def _run_check(check: Check, run: Run) -> CheckResult:
    read, judge = _CHECKS[check.type]
    outcome = judge(check, _value(check, read), run)
    if outcome is None:
        return CheckResult(True)
    required, seen = outcome
    return CheckResult(False, f"{check.feedback.rstrip('. ')}; {seen}" if check.feedback else f"{required}; {seen}")


Outcome = tuple[str, str] | None  # None: passed; else (what was required, what was seen)


def _fold(check: Check, text: str) -> str:
    return text if check.case_sensitive else text.casefold()


def _contains(check: Check, needle: str, run: Run) -> Outcome:
    if _fold(check, needle) in _fold(check, run.response):
        return None
    seen = "it does not"
    if check.case_sensitive and needle.casefold() in run.response.casefold():
        seen = "it has it only with different capitalisation"
    return f"the answer must contain `{needle}`", seen


def _not_contains(check: Check, needle: str, run: Run) -> Outcome:
    hay = _fold(check, run.response)
    at = hay.find(_fold(check, needle))
    if at < 0:
        return None
    return f"the answer must not contain `{needle}`", f"it does, in the line {quoted(_line_at(run.response, at))}"


def _regex(check: Check, pattern: re.Pattern[str], run: Run) -> Outcome:
    if pattern.search(run.response):
        return None
    return f"the answer must match the pattern `{pattern.pattern}`", "no part of it does"


def _not_regex(check: Check, pattern: re.Pattern[str], run: Run) -> Outcome:
    found = pattern.search(run.response)
    if found is None:
        return None
    return f"the answer must not match the pattern `{check.value}`", f"it does, at {quoted(found.group(0))}"


def _starts_with(check: Check, prefix: str, run: Run) -> Outcome:
    return _edge(check, prefix, run, end=False)


def _ends_with(check: Check, suffix: str, run: Run) -> Outcome:
    return _edge(check, suffix, run, end=True)


def _edge(check: Check, affix: str, run: Run, *, end: bool) -> Outcome:
    """Whether the answer starts (or, with `end`, ends) with `affix`, leading (trailing) space aside."""
    text = run.response.rstrip() if end else run.response.lstrip()
    folded, wanted = _fold(check, text), _fold(check, affix)
    if folded.endswith(wanted) if end else folded.startswith(wanted):
        return None
    width, side = max(len(affix), 40), "end" if end else "start"
    seen = quoted(text[-width:] if end else text[:width]) if text else "nothing (it is empty)"
    return f"the answer must {side} with `{affix}`", f"it {side}s with {seen}"


def _last_line_regex(check: Check, pattern: re.Pattern[str], run: Run) -> Outcome:
    lines = [line.strip() for line in run.response.splitlines() if line.strip()]
    if lines and pattern.fullmatch(lines[-1]):
        return None
    seen = f"the last line was {quoted(lines[-1])}" if lines else "the response is empty"
    return f"the last line must match `{pattern.pattern}`", seen


def _section_present(check: Check, name: str, run: Run) -> Outcome:
    headings = [h.strip() for h in _HEADING.findall(run.response)]
    if any(name.casefold() in h.casefold() for h in headings):
        return None
    seen = "its headings are " + ", ".join(quoted(h) for h in headings) if headings else "it has no headings"
    return f"the answer must have a section headed `{name}` (a markdown heading line such as `## {name}`)", seen


def _max_chars(check: Check, limit: int, run: Run) -> Outcome:
    n = len(run.response)
    return None if n <= limit else (f"the answer must be at most {limit} characters long", f"it is {n} characters long")


def _min_chars(check: Check, limit: int, run: Run) -> Outcome:
    n = len(run.response.strip())
    return (
        None if n >= limit else (f"the answer must be at least {limit} characters long", f"it is {n} characters long")
    )


def _max_lines(check: Check, limit: int, run: Run) -> Outcome:
    n = len(run.response.strip().splitlines())
    return None if n <= limit else (f"the answer must have at most {limit} lines", f"it has {n}")


def _max_words(check: Check, limit: int, run: Run) -> Outcome:
    n = len(run.response.split())
    return None if n <= limit else (f"the answer must have at most {limit} words", f"it has {n}")


def _min_words(check: Check, limit: int, run: Run) -> Outcome:
    n = len(run.response.split())
    return None if n >= limit else (f"the answer must have at least {limit} words", f"it has {n}")


def sentences(text: str) -> list[str]:
    """The sentences of `text`, as `max_sentences` counts them: each line is cut after a `.`, `!` or
    `?` followed by a space; a line is at least one (a heading, a bullet item, an unfinished
    sentence), and a piece without a letter or digit (a rule, a bare bullet mark) is none."""
    return [piece for line in text.splitlines() for piece in _SENTENCE_END.split(line) if _WORDLIKE.search(piece)]


def _max_sentences(check: Check, limit: int, run: Run) -> Outcome:
    n = len(sentences(run.response))
    return None if n <= limit else (f"the answer must have at most {limit} sentences", f"it has {n}")


def _language_is(check: Check, code: str, run: Run) -> Outcome:
    """Written in the language `code`: of the languages known, its function words are the most
    (strictly) and at least 2 (core/train/languages.py)."""
    counts = function_words(run.response)
    others = max(n for c, n in counts.items() if c != code)
    if counts[code] >= 2 and counts[code] > others:
        return None
    found = ", ".join(f"{n} {LANGUAGES[c][0]}" for c, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n)
    seen = f"its common words are {found}" if found else "it has none of the common words of a known language"
    return f"the answer must be written in {LANGUAGES[code][0]}", seen


def _json_valid(check: Check, _: None, run: Run) -> Outcome:
    required = "the answer must be valid JSON (the whole reply, or one ```json fenced block)"
    text = run.response.strip()
    if not text:
        return required, "it is empty"
    blocks = _JSON_BLOCK.findall(text)
    if len(blocks) > 1:
        return required, f"it has {len(blocks)} ```json blocks; give exactly one"
    source = blocks[0] if blocks else text
    try:
        json.loads(source)
    except json.JSONDecodeError as exc:
        return required, f"it could not be parsed: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    return None


def _tool_called(check: Check, name: str, run: Run) -> Outcome:
    called = [c.name for c in run.tool_calls]
    if any(_fold(check, c) == _fold(check, name) for c in called):
        return None
    seen = "it called " + ", ".join(f"`{c}`" for c in dict.fromkeys(called)) if called else "it called no tools"
    return f"the agent must call the tool `{name}`", seen


# The value each check type needs and how it judges; reading the value is the one rule the
# scorer and the task reader share (`check_problem`).
_CHECKS: dict[str, tuple[Callable[[Check], Any], Callable[[Check, Any, Run], Outcome]]] = {
    "contains": (_text, _contains),
    "not_contains": (_text, _not_contains),
    "regex": (_pattern, _regex),
    "not_regex": (_pattern, _not_regex),
    "starts_with": (_text, _starts_with),
    "ends_with": (_text, _ends_with),
    "last_line_regex": (_pattern, _last_line_regex),
    "section_present": (_text, _section_present),
    "max_chars": (_count, _max_chars),
    "min_chars": (_count, _min_chars),
    "max_lines": (_count, _max_lines),
    "max_words": (_count, _max_words),
    "min_words": (_count, _min_words),
    "max_sentences": (_count, _max_sentences),
    "language": (_language, _language_is),
    "json_valid": (_no_value, _json_valid),
    "tool_called": (_text, _tool_called),
}


COUNT_CHECKS: frozenset[str] = frozenset(kind for kind, (read, _) in _CHECKS.items() if read is _count)
"""The check types whose value is a whole number (a limit), not text."""


def _line_at(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)]


def quoted(text: str, limit: int = 160) -> str:
    """`text` in single quotes, cut at `limit` characters."""
    text = text.strip()
    return f"'{text if len(text) <= limit else text[: limit - 1] + '…'}'"
