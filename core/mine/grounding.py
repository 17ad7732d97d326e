"""Grounding (mining, judge writing): a judge the optimizer wrote keeps only what the sessions say.

The evidence of a task is the user's own words: the request of each instance and what the user
said after it (corrections, repeated asks, reverts; `intents.Evidence`, an agent's error text is
not the user's words). Words are compared as tokens (runs of letters and digits, case folded),
so `ANSWER:` is grounded by "put the answer last" and `src/app.ts` by "fix src/app.ts".

- A literal of a check (the text of contains / not_contains / starts_with / ends_with /
  section_present / tool_called, every literal run of a regex, the number of a length check, the
  word "json" for json_valid) is grounded when its tokens appear, adjacent and in order, in one
  text of the evidence (a literal of punctuation only: when it appears verbatim). An ungrounded
  check is dropped.
- A check must be satisfiable by every instance. A literal that a positive check requires
  (contains, starts_with, ends_with, section_present, tool_called, regex, last_line_regex, a
  length) and that varies by instance (an id, a file name, a path, a number: `similarity`'s
  placeholders, or any digit), yet is missing from some instance's words, names one instance:
  a `contains` is generalised to a regex over its shape (digits → `\\d+`, the rest kept, e.g.
  `PROJ-\\d+`) when every instance's words hold a match of that shape; any other is dropped.
  A literal that is only the wording of some requests (in no correction, repeated ask or revert,
  and not in every instance's words: "ruff" of "commit message for the ruff pass" in a task whose
  other requests are about other changes) is no requirement every instance can meet: dropped, in a
  negative check too (`not_contains "ruff formatting pass"` forbids one request's own subject).
- A line the user shows in the corrections of most corrected instances (at least 2; shown: after
  a line ending in `:`, in a code fence or in backticks, e.g. "You forgot it again:\n
  Signed-off-by: Sam <sam@example.com>") is text the user demands in every reply
  (`demanded_lines`): a `contains` check for it is added to the judge, and a negative check it
  would fail is dropped.
- Checks that no reply can pass together (`contains X` and `not_contains X`, `regex P` and
  `not_regex P`) are both dropped.
- A rubric sentence, and a check's feedback, is kept only when every content word is grounded:
  its words less the stop words and the judging words (`answer`, `must`, `user`, ...; JUDGING),
  each matched by a light stem (`tests` ~ `test`, `fixing` ~ `fix`), and a placeholder of several
  words in angle brackets (how the prompts show a format: `<what the user required>`) only when
  the evidence holds it verbatim. A dropped feedback leaves the scorer's own, which names the
  literal.

So nothing a prompt shows as an example (and no other invented requirement) survives unless the
sessions hold it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import pairwise

from pydantic import Field

from skillsleep.core.mine.intents import Instance
from skillsleep.core.mine.similarity import normalize, vocabulary
from skillsleep.core.models.prompts import PLACEHOLDER
from skillsleep.core.shared.records import Check, Judge, Record, Run
from skillsleep.core.train.checks import run_checks
from skillsleep.core.train.languages import LANGUAGES

USER_EVIDENCE = frozenset({"correction", "repeat", "revert"})  # evidence whose text is the user's words
POSITIVE = frozenset(
    {"contains", "starts_with", "ends_with", "section_present", "tool_called", "regex", "last_line_regex"}
)
_LENGTH = frozenset({"max_chars", "min_chars", "max_lines", "max_words", "min_words", "max_sentences"})
_PATTERNS = frozenset({"regex", "not_regex", "last_line_regex"})
_TOKEN = re.compile(r"[^\W_]+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_PLACEHOLDER = re.compile(r"<(?:id|path|num|url|str)>")

STOP = vocabulary(
    "a an the to of in on at for with and or nor but if then than so as by from into onto about over under "
    "is are was were be been being am it its it's this that these those there here they them their he she "
    "his her we our you your i me my not no yes any all each every some such other another own same both "
    "either neither one ones what which who whom whose when where why how while also just only very too "
    "more most less least much many few can could would will shall should may might must need needs do "
    "does did done doing has have had having get gets got make makes made s t"
)
JUDGING = vocabulary(
    "answer answers answered response responses respond reply replies agent user users user's request "
    "requests requested ask asks asked asking task tasks grader grade rubric score requirement requirements "
    "require requires required check checks shown given data include includes contain contains mention "
    "mentions state states give gives provide provides say says said follow follows address addresses "
    "accomplish accomplishes complete completely correct correctly fully way form without nobody anything "
    "everything something earlier before previous previously attempt attempts corrected correction "
    "corrections again instead good well properly exactly clearly"
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly")


class Grounded(Record):
    """What grounding kept of a judge, and what it dropped (why)."""

    checks: list[Check] = Field(default_factory=list)
    rubric: str | None = None
    dropped: list[str] = Field(default_factory=list)


def tokens(text: str) -> list[str]:
    """The words of a text as grounding compares them: runs of letters and digits, case folded."""
    return _TOKEN.findall(text.casefold())


def stem(word: str) -> str:
    """A light stem: `tests`, `testing`, `tested` → `test` (never shorter than 3 letters)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and not word[-1].isdigit():
        word = word[:-1]  # running → runn → run
    return word


class Grounds:
    """A task's evidence: every instance's words, for grounding the judge written for it."""

    def __init__(self, instances: Iterable[Instance]) -> None:
        instances = list(instances)
        self.instances: list[list[str]] = []
        for instance in instances:
            texts = [instance.prompt, *(e.text for e in instance.evidence if e.kind in USER_EVIDENCE and e.text)]
            self.instances.append(texts)
        self.texts = [t for texts in self.instances for t in texts]
        self.said = [e.text for i in instances for e in i.evidence if e.kind in USER_EVIDENCE and e.text]
        self._phrases = [f" {' '.join(tokens(t))} " for t in self.texts]
        self._stems = {stem(w) for t in self.texts for w in tokens(t)}

    def has(self, literal: str, texts: Sequence[str] | None = None) -> bool:
        """Whether `literal` appears in the evidence (or in `texts`): its tokens adjacent, in order."""
        words = tokens(literal)
        if not words:
            folded = literal.strip().casefold()
            return bool(folded) and any(folded in t.casefold() for t in (texts if texts is not None else self.texts))
        phrase = f" {' '.join(words)} "
        phrases = self._phrases if texts is None else [f" {' '.join(tokens(t))} " for t in texts]
        return any(phrase in p for p in phrases)

    def in_every_instance(self, literal: str) -> bool:
        return all(self.has(literal, texts) for texts in self.instances)

    def one_requests_words(self, literal: str) -> bool:
        """Whether `literal` is only the wording of some requests: in no correction, repeated ask or
        revert, and not in every instance (a reply to another request could never hold it)."""
        return not self.has(literal, self.said) and not self.in_every_instance(literal)

    def ungrounded_words(self, sentence: str) -> list[str]:
        """The content words of `sentence` that no text of the evidence holds (by stem), and each
        placeholder (`<what the user required>`, how prompts mark a format) it does not hold verbatim."""
        marks = [m for m in PLACEHOLDER.findall(sentence) if not any(m.casefold() in t.casefold() for t in self.texts)]
        words = [w for w in tokens(sentence) if w not in STOP and w not in JUDGING]
        return list(dict.fromkeys([*marks, *(w for w in words if stem(w) not in self._stems)]))

    def every_instance_matches(self, pattern: re.Pattern[str]) -> bool:
        return all(any(pattern.search(t) for t in texts) for texts in self.instances)


def ground_judge(checks: Sequence[Check], rubric: str | None, grounds: Grounds) -> Grounded:
    """The checks and rubric sentences that `grounds` supports; each dropped one with why (a
    generalised check keeps the feedback written for it)."""
    out = Grounded()
    for n, check in enumerate(checks, 1):
        kept, why = ground_check(check, grounds)
        if kept is None:
            out.dropped.append(f"check {n} ({check.type}): {why}")
            continue
        if kept is check and kept.feedback and (missing := grounds.ungrounded_words(kept.feedback)):
            out.dropped.append(f"the feedback of check {n}: {_words_missing(missing)}")
            kept = kept.model_copy(update={"feedback": None})
        out.checks.append(kept)
    out.checks = _consistent(out.checks, out.dropped)
    sentences = [s.strip() for s in _SENTENCE.split(rubric or "") if s.strip()]
    kept_sentences = []
    for n, sentence in enumerate(sentences, 1):
        missing = grounds.ungrounded_words(sentence)
        if missing:
            out.dropped.append(f"rubric sentence {n}: {_words_missing(missing)}")
        else:
            kept_sentences.append(sentence)
    out.rubric = " ".join(kept_sentences) or None
    return out


def ground_check(check: Check, grounds: Grounds) -> tuple[Check | None, str]:
    """`check` as the evidence supports it (generalised where it named one instance), or None and why."""
    for literal in check_literals(check):
        if not grounds.has(literal):
            return None, f"{literal!r} is not in the user's words"
    if check.type in _NEGATION:
        for literal in check_literals(check):
            if grounds.one_requests_words(literal):
                return (
                    None,
                    f"{literal!r} is the wording of some requests: forbidding it is no requirement of every instance",
                )
    if check.type not in POSITIVE and check.type not in _LENGTH:
        return check, ""
    for literal in check_literals(check):
        if _varies(literal) and not grounds.in_every_instance(literal):
            general = _generalised(check, literal, grounds)
            if general is None:
                return None, f"{literal!r} names one instance's id, file or number, and no shape fits every instance"
            return general, ""
        if grounds.one_requests_words(literal):
            return None, f"{literal!r} is the wording of some requests, not a requirement every instance can meet"
    return check, ""


def check_literals(check: Check) -> list[str]:
    """The literals a check names: its text, a regex's literal runs, a length's number, `json`, a
    language's name."""
    if check.type == "json_valid":
        return ["json"]
    if check.type == "language":  # the user names the language, not its code
        return [LANGUAGES[check.value][0]] if isinstance(check.value, str) and check.value in LANGUAGES else []
    if check.type in _LENGTH:
        return [str(check.value)]
    if not isinstance(check.value, str):
        return []
    if check.type in _PATTERNS:
        return regex_literals(check.value)
    return [check.value]


def regex_literals(pattern: str) -> list[str]:
    """The literal runs of a regular expression: `^ANSWER: \\d+` → ["ANSWER: "]; `(a|bc)x?` →
    ["a", "bc"] (a quantified character ends a run and is left out)."""
    runs: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        step = 1
        if c == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            current.append(pattern[i + 1])
            step = 2
        elif c in "*+?{":
            if current:
                current.pop()  # the quantified character may be absent or repeated
            step = _skip_quantifier(pattern, i)
            runs.append("".join(current))
            current = []
        elif c in "\\[()|^$.":
            runs.append("".join(current))
            current = []
            step = _skip_special(pattern, i)
        else:
            current.append(c)
        i += step
    runs.append("".join(current))
    return [run for run in (r.strip() for r in runs) if run]


def _skip_quantifier(pattern: str, i: int) -> int:
    if pattern[i] == "{":
        end = pattern.find("}", i)
        return (end - i + 1) if end > 0 else 1
    return 2 if pattern[i + 1 : i + 2] in ("?", "+") else 1


def _skip_special(pattern: str, i: int) -> int:
    """How many characters the special at `i` spans: an escape class (`\\d`), a character class
    (`[...]`), a group opening with its extension (`(?:`, `(?P<name>`), or one character."""
    c = pattern[i]
    if c == "\\":
        return 2
    if c == "[":
        j = i + 1 + (pattern[i + 1 : i + 2] == "^")
        j += pattern[j : j + 1] == "]"
        while j < len(pattern) and pattern[j] != "]":
            j += 2 if pattern[j] == "\\" else 1
        return j - i + 1
    if c == "(" and pattern[i + 1 : i + 2] == "?":
        found = re.compile(r"\(\?(?:P?<[^>]*>|[=!:]|<[=!]|[a-zA-Z-]+[:)])").match(pattern, i)
        return len(found.group(0)) if found else 2
    return 1


def _varies(literal: str) -> bool:
    """Whether a literal is the kind of text that differs from instance to instance."""
    return any(ch.isdigit() for ch in literal) or bool(_PLACEHOLDER.search(normalize(literal)))


def _shape(literal: str) -> str | None:
    """A regex over the shape of an id-like literal: digit runs → `\\d+`, the rest kept
    (`PROJ-123` → `PROJ-\\d+`); None when it has no digits or nothing but digits."""
    parts = re.findall(r"\d+|\D+", literal.strip())
    if not any(p.isdigit() for p in parts) or not any(not p.isdigit() and p.strip() for p in parts):
        return None
    body = "".join(r"\d+" if p.isdigit() else re.escape(p) for p in parts)
    head = r"(?<!\w)" if re.match(r"\w", literal.strip()) else ""
    tail = r"(?!\w)" if re.search(r"\w$", literal.strip()) else ""
    return head + body + tail


def _generalised(check: Check, literal: str, grounds: Grounds) -> Check | None:
    if check.type != "contains":
        return None
    shape = _shape(literal)
    if shape is None:
        return None
    flags = 0 if check.case_sensitive else re.IGNORECASE
    if not grounds.every_instance_matches(re.compile(shape, flags)):
        return None
    shown = re.sub(r"\d+", "<number>", literal.strip())
    return Check(
        type="regex",
        value=shape,
        case_sensitive=check.case_sensitive,
        feedback=f"The answer must name the request's own {shown} (each request names a different one)",
    )


_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
SHOWN_CHARS = 200


def shown_lines(text: str) -> list[str]:
    """The lines a user's message shows as literal text: each line after a line ending in `:`,
    each line of a code fence, each backtick span (at most SHOWN_CHARS long)."""
    shown = [line for block in _FENCE.findall(text) for line in block.splitlines()]
    lines = _FENCE.sub("", text).splitlines()
    shown += [line for before, line in pairwise(lines) if before.rstrip().endswith(":")]
    shown += _SPAN.findall(text)
    kept = (line.strip().strip("`").strip() for line in shown)
    return list(dict.fromkeys(line for line in kept if line and len(line) <= SHOWN_CHARS))


def demanded_lines(instances: Sequence[Instance]) -> list[str]:
    """The lines the user showed in the corrections of at least 2 instances and of more than half
    of the corrected ones: text every reply must hold (by corrected instance, then alphabetically)."""
    corrected = [
        {line for e in i.evidence if e.kind == "correction" and e.text for line in shown_lines(e.text)}
        for i in instances
        if any(e.kind == "correction" for e in i.evidence)
    ]
    order = list(dict.fromkeys(line for lines in corrected for line in sorted(lines)))
    counts = {line: sum(line in lines for lines in corrected) for line in order}
    return [line for line in order if counts[line] >= 2 and counts[line] * 2 > len(corrected)]


def with_demanded(checks: list[Check], demanded: Sequence[str], dropped: list[str]) -> list[Check]:
    """`checks` with a `contains` check first for each demanded line they do not already require,
    less each negative check a demanded line fails (noted in `dropped`)."""
    required = {c.value for c in checks if c.type == "contains"}
    added = [Check(type="contains", value=line) for line in demanded if line not in required]
    kept = []
    for check in checks:
        if check.type in _NEGATION and any(_fails(check, line) for line in demanded):
            dropped.append(f"{check.type} {check.value!r}: the user demands a line it forbids")
        else:
            kept.append(check)
    return [*added, *kept]


def _fails(check: Check, line: str) -> bool:
    return not run_checks(Judge(checks=[check]), Run(response=line))[0].passed


_NEGATION = {"not_contains": "contains", "not_regex": "regex"}


def _consistent(checks: list[Check], dropped: list[str]) -> list[Check]:
    """`checks` less each pair that no reply can pass together (`contains X` and `not_contains X`)."""
    negated = {(_NEGATION[c.type], c.value) for c in checks if c.type in _NEGATION}
    clash = {key for key in negated if any((c.type, c.value) == key for c in checks)}
    dropped += [f"contradictory checks on {value!r}: both dropped" for _, value in sorted(clash, key=str)]
    return [c for c in checks if (_NEGATION.get(c.type, c.type), c.value) not in clash]


def _words_missing(words: list[str]) -> str:
    shown = ", ".join(repr(w) for w in words[:5])
    return f"{shown} {'is' if len(words) == 1 else 'are'} not in the user's words"
