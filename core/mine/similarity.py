"""How alike two requests are, by their words: the lexical half of mining's grouping.

Texts are normalized (lowercase; URLs, uuids, quoted strings, paths, file names, hex ids and
numbers → <url> <id> <str> <path> <num>; a leading slash command → <cmd> and its name, so
"/commit" and "/review" stay two tasks; punctuation dropped; first NORMALIZE_CHARS characters).
`similarity` = mean of the Ochiai (cosine of sets) overlap of the content words (a small stop
list removed) and of the character 3-grams of those words; it depends on the two texts only, not
on the rest of the night, so the same requests group the same way night after night. At or above
GROUP_THRESHOLD two requests are one task; at or above RELATED_THRESHOLD they are distinct tasks
of one cluster (near-duplicates must stay in one split); `plausible` pairs (a lower similarity, or
one request's words inside the other's) are the only ones the optimizer is asked to merge.
"""

from __future__ import annotations

import hashlib
import math
import re

GROUP_THRESHOLD = 0.7  # near-duplicates: one task
RELATED_THRESHOLD = 0.55  # near each other: distinct tasks, one cluster (one split)
PLAUSIBLE_THRESHOLD = 0.3  # possibly paraphrases: the optimizer is asked (see `plausible`)
CONTAINED = 0.75  # the shorter request's words inside the longer one's: possibly paraphrases
NORMALIZE_CHARS = 1000

Features = tuple[frozenset[str], frozenset[str]]  # content words, their character 3-grams

_SUBS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:https?|ftp|file|ssh)://\S+"), " <url> "),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), " <id> "),
    (re.compile(r"`[^`\n]{1,120}`|\"[^\"\n]{1,120}\"|(?<!\w)'[^'\n]{1,120}'(?!\w)|“[^”\n]{1,120}”"), " <str> "),
    (re.compile(r"(?<!\S)[@~.]?[\w.-]*[/\\][\w./\\-]*"), " <path> "),
    (re.compile(r"\b[\w-]+(?:\.[\w-]+)*\.(?:[a-z][a-z0-9]{0,4})\b(?!\.\w)"), " <path> "),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"), " <id> "),
    (re.compile(r"(?<![\w<])[v#]?\d+(?:[.,:]\d+)*(?:st|nd|rd|th|px|ms|s|kb|mb|gb|%)?\b"), " <num> "),
    (re.compile(r"[^\w\s<>]|_"), " "),
)
# A leading slash command ("/review-pr 12", "/commit") names the command: its name stays words (the
# path pattern below would make every "/name" the same "<path>", merging distinct commands).
_COMMAND = re.compile(r"^\s*/([\w][\w:.-]*)(?=\s|$)")
PLACEHOLDERS = frozenset({"<url>", "<id>", "<str>", "<path>", "<num>", "<cmd>"})


def vocabulary(words: str) -> frozenset[str]:
    """A set of words, written as one text (a vocabulary reads best as words)."""
    return frozenset(words.split())


_STOP = vocabulary(
    "a an the to of in on at for with and or is are be it its this that these those my our your me i we you "
    "please pls can could would will should just also then now some any all by from as so"
)


def normalize(text: str) -> str:
    """The comparable form of a request: lowercase, variable parts replaced by placeholders."""
    s = _COMMAND.sub(r"<cmd> \1 ", text[:NORMALIZE_CHARS].lower(), count=1)
    for pattern, repl in _SUBS:
        s = pattern.sub(repl, s)
    return " ".join(w for w in s.split() if w not in {"<", ">"})


def features(key: str) -> Features:
    """What `similarity` compares of a normalized text."""
    tokens = key.split()
    words = [w for w in tokens if w not in _STOP] or tokens
    grams = {f" {w} "[i : i + 3] for w in words if w not in PLACEHOLDERS for i in range(len(w))}
    return frozenset(words), frozenset(grams)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def feature_similarity(fa: Features, fb: Features) -> float:
    """`similarity` of two texts from their `features`."""
    return 0.5 * _overlap(fa[0], fb[0]) + 0.5 * _overlap(fa[1], fb[1])


def similarity(a: str, b: str) -> float:
    """How alike two requests are, 0–1, after `normalize` (1.0: the same normalized text)."""
    ka, kb = normalize(a), normalize(b)
    return 1.0 if ka == kb else feature_similarity(features(ka), features(kb))


def plausible(fa: Features, fb: Features) -> bool:
    """Whether two requests may be paraphrases of one task, worth asking the optimizer about: at
    least PLAUSIBLE_THRESHOLD alike, or the shorter one's content words (placeholders included)
    at least CONTAINED within the other's and a real word shared ("implement <num>" in a
    templated "implement issue <num> from the tracker …")."""
    if feature_similarity(fa, fb) >= PLAUSIBLE_THRESHOLD:
        return True
    shared = fa[0] & fb[0]
    smaller = min(len(fa[0]), len(fb[0]))
    return bool(smaller and shared - PLACEHOLDERS and len(shared) / smaller >= CONTAINED)


def task_id(*keys: str) -> str:
    """The id of a task first mined with the normalized requests `keys` (their set, in any
    order); with one request, the id earlier versions gave that task."""
    return "mine-" + hashlib.sha256("\n".join(sorted(set(keys))).encode("utf-8")).hexdigest()[:12]
