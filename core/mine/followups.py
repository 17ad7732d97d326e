"""Follow-ups (mining): is the user's next message about the open request, or a new one?

A follow-up is a user text after a request in the same session (acknowledgements such as "ok",
"thanks" are read before this, by `core.mine.intents`). It is evidence about the open request only
when it refers to it; otherwise it starts a new request, even when it says "still" or "not"
("scrolling back in xterm.js still does not work" after "start phoenix in background" is a new
request: nothing of it was asked or touched since). `classify` decides, in this order:

1. revert: "revert / undo / roll back" followed by what the agent did ("it", "that", "this",
   "your …", "the change(s)", "everything", "all", "those", "these"), or "put it back";
2. an answer: a bare "no" / "no thanks" / "not now" / "no need" right after the agent asked a
   question ("Shall I also update the docs?") declines an offer; it is no correction;
3. correction, said outright: the text opens with a negation of the attempt ("no" (but not "no
   worries / problem / rush"), "nope", "nah", "wrong", "incorrect", "that's wrong", "that's /
   this is / it's not right|correct|it|what"), or holds a phrase that can only point at the
   agent's last attempt ("you forgot / missed / didn't / did not / broke / ignored / should
   have", "why did you", "I said / asked / told you", "as I said", "try again", "do it again",
   "start over", "same error / problem / issue", "fix it / this / that", "not what I asked /
   wanted / meant / said");
4. repeat: a retry of the same request: as close to it as near-duplicates are
   (`similarity.feature_similarity` of the normalized texts ≥ `GROUP_THRESHOLD`, 0.7);
5. correction about the same subject: the text carries a weak marker (a negation anywhere:
   "not", "no", "never", "n't"; "still", "again", "instead", "but", "however", "actually",
   "wait", "same", "redundant", "wrong", "broken", "bad idea", "stop …ing", "revise", "redo") and
   its subject is the open request's: at least `SUBJECT_OVERLAP` (a quarter) of its subject words
   occur in the span, or it names no subject at all ("still failing", "doesn't work": a bare
   complaint can only be about what just happened). A text that opens by accepting the attempt
   ("great, …", "thanks, …", "perfect, …", "looks good, …") with no "but" / "however" within
   two words of it is not one: its weak markers belong to the next request ("great, now plan it;
   do not commit until the last step"), while "great, but …" is read as above;
6. otherwise a new request.

Subject words: the lower-case words of three or more letters ("xterm.js" → "xterm"), less a stop
list (function words, the markers above, words of asking such as "need", "please", "make"), each
cut to a stem by a light suffix rule ("scrolling", "scrolled", "scrolls" → "scroll"; "files" →
"fil", as "file"). The span of the open request: the request, the user's earlier follow-ups to it,
the agent's text and the arguments of its tool calls (commands, paths, patterns, edits) since the
request, each read up to `SPAN_CHARS`; tool results are not in it (a listing or a log names
everything). The overlap is the share of the follow-up's distinct subject words found in the span;
it measures words shared, not meaning, so a complaint that names its subject only in new words
("the page is blank" after "add a dark mode") is read as a new request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from skillsleep.core.mine.similarity import (
    GROUP_THRESHOLD,
    Features,
    feature_similarity,
    features,
    normalize,
    vocabulary,
)

SUBJECT_OVERLAP = 0.25  # share of a follow-up's subject words that must occur in the span
SPAN_CHARS = 4000  # of each text or tool argument read into a span

FollowUp = Literal["correction", "revert", "repeat", "answer", "request"]

_REVERT = re.compile(
    r"\b(?:revert|undo|roll ?back)\s+(?:it|that|this|those|these|everything|all|your\b|the changes?\b|what you)|"
    r"\bput it back\b|^(?:revert|undo|roll ?back)\W*$",
    re.I,
)
_OUTRIGHT_START = re.compile(
    r"^(?:no\b(?! (?:worries|problem|rush))|nope\b|nah\b|wrong\b|incorrect\b)|"
    r"^(?:that|this|it)(?:'?s| is) (?:wrong|incorrect|not (?:right|correct|it|what))\b",
    re.I,
)
_OUTRIGHT_ANYWHERE = re.compile(
    r"\b(?:you (?:forgot|missed|didn'?t|did not|broke|ignored|should have|were supposed to)|why did you|"
    r"i (?:said|asked|told you|already asked)|as i said|try again|do it again|start over|"
    r"same (?:error|problem|issue|failure|result|thing)|fix (?:it|this|that)\b|"
    r"not what i (?:asked|wanted|meant|said))",
    re.I,
)
_WEAK = re.compile(
    r"\b(?:not|no|never|nothing|cannot|\w+n't|(?:do|does|did|is|are|was|were|wo|ca|should|could|would)nt|"
    r"still|again|instead|but|however|actually|wait|same|redundant|"
    r"wrong|incorrect|broken|bad idea|unacceptable|revise|redo|stop\s+\w+ing)\b",
    re.I,
)
_ACCEPTING = re.compile(
    r"^(?:great|perfect|thanks|thank you|thx|nice|cool|awesome|excellent|brilliant|lgtm|works|"
    r"(?:looks|sounds|it'?s|that'?s|this is|very) good|good job)\b",
    re.I,
)
_CONTRAST = re.compile(r"\W*(?:\w+\W+){0,2}?(?:but|however|though|although)\b", re.I)
_DECLINE = re.compile(r"^(?:no|nope|nah|no thanks?(?: you)?|not now|not yet|no need|not needed)\W*$", re.I)
_WORD = re.compile(r"[a-z][a-z0-9]{2,}")

_STOP = vocabulary(
    "the and for with that this there these those then than what when where which who whom whose how why "
    "from into onto about above below over under again also just like need needs needed make sure please "
    "pls can could would should will shall may might must let lets you your yours our ours they them their "
    "its was were are been being have has had does did doing done not don doesn didn isn wasn won aren "
    "weren haven hasn hadn couldn shouldn wouldn cannot still instead but however though although "
    "actually wait same never nothing none any some all more less only very much really yet now here "
    "okay good great fine thanks thank yes yeah think see look looks get got getting want know one way "
    "thing things work works working worked fail fails failed failing wrong incorrect broken bad idea "
    "redundant revise redo stop stopped error errors issue issues problem problems try tried again "
    "use using used show tell give take put keep add let's out off too every each other another both "
    "whether while because since until after before once if else than"
)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            if suffix == "es" and not word[:-2].endswith(("s", "x", "z", "ch", "sh")):
                continue  # "files" → "file" (below), "fixes" → "fix"
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def subject_words(text: str) -> set[str]:
    """The stems of the content words of `text` (its subject), as the module docstring defines."""
    return {_stem(w) for w in _WORD.findall(text[:SPAN_CHARS].lower()) if w not in _STOP}


def _strings(value: Any) -> Iterable[str]:
    """Every string inside a tool call's arguments."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class Span:
    """What the open request and the work since it are about: its subject words, and whether the
    agent's last words asked the user a question."""

    def __init__(self, request: str, key: str) -> None:
        self.request: Features = features(key)
        self.key = key
        self.words = subject_words(request)
        self.asked = False  # the agent's last text ends in a question

    def agent_text(self, text: str) -> None:
        """The agent's own words since the request."""
        self.words |= subject_words(text)
        stripped = text.rstrip().rstrip("*_`)] ")
        self.asked = stripped.endswith("?")

    def tool_call(self, arguments: dict[str, Any] | None, tool: str | None = None) -> None:
        """A tool call the agent made since the request (its arguments: commands, paths, edits)."""
        for value in _strings(arguments or {}):
            self.words |= subject_words(value)
        if tool:
            self.words |= subject_words(tool)

    def user_text(self, text: str) -> None:
        """A follow-up of the user's that stayed with this request (a correction, a repeat)."""
        self.words |= subject_words(text)
        self.asked = False

    def overlap(self, text: str) -> float | None:
        """The share of `text`'s subject words found in the span; None when it names no subject."""
        words = subject_words(text)
        return len(words & self.words) / len(words) if words else None


def _accepts(text: str) -> bool:
    """The text opens by accepting the attempt, and no "but" follows that within two words."""
    accepted = _ACCEPTING.match(text)
    return accepted is not None and not _CONTRAST.match(text, accepted.end())


def _plain(text: str) -> str:
    return text.replace("\u2019", "'")  # a typographic apostrophe: "don’t"


def classify(text: str, span: Span) -> FollowUp:
    """What a follow-up `text` (stripped, redacted) is to the open request whose `span` is given."""
    text = _plain(text)
    if _REVERT.search(text):
        return "revert"
    if span.asked and _DECLINE.match(text):
        return "answer"
    if _OUTRIGHT_START.match(text) or _OUTRIGHT_ANYWHERE.search(text):
        return "correction"
    key = normalize(text)
    if key == span.key or feature_similarity(features(key), span.request) >= GROUP_THRESHOLD:
        return "repeat"
    if _WEAK.search(text) and not _accepts(text):
        overlap = span.overlap(text)
        if overlap is None or overlap >= SUBJECT_OVERLAP:
            return "correction"
    return "request"


def outright(text: str) -> bool:
    """The text corrects or reverts whatever it follows, whatever its subject (rules 1 and 3)."""
    text = _plain(text)
    return bool(_REVERT.search(text) or _OUTRIGHT_START.match(text) or _OUTRIGHT_ANYWHERE.search(text))
