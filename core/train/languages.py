"""Which language a reply is written in, as the `language` rule check reads it: the language whose
common function words (articles, conjunctions, forms of "to be", prepositions) the reply uses most.

Words two of the languages share (`de`, `en`, `la`, `que`, `un`, `es`, `a`, `se`, `in`, …) count
for none of them, so a reply's numbers, names and quoted English do not tip the count. No model and
no dictionary: deterministic, and enough to tell a Spanish reply from an English one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["LANGUAGES", "function_words"]

_WORD = re.compile(r"[^\W\d_]+")

LANGUAGES: Mapping[str, tuple[str, frozenset[str]]] = {
    "en": (
        "English",
        frozenset(
            [
                "the",
                "and",
                "is",
                "are",
                "were",
                "of",
                "to",
                "with",
                "that",
                "this",
                "it",
                "for",
                "you",
                "they",
                "what",
                "which",
                "not",
                "from",
                "each",
                "how",
                "there",
                "then",
                "at",
                "by",
                "be",
                "have",
                "has",
                "had",
                "he",
                "she",
                "we",
                "our",
                "their",
                "his",
                "her",
            ]
        ),
    ),
    "es": (
        "Spanish",
        frozenset(
            [
                "el",
                "los",
                "las",
                "del",
                "al",
                "y",
                "está",
                "están",
                "fue",
                "con",
                "para",
                "por",
                "una",
                "cada",
                "tiene",
                "tienen",
                "hay",
                "más",
                "pero",
                "entonces",
                "este",
                "esta",
                "estos",
                "estas",
                "como",
                "su",
                "sus",
                "lo",
                "sin",
                "sobre",
                "cuando",
                "porque",
                "también",
                "muy",
                "cuántos",
                "cuántas",
            ]
        ),
    ),
    "fr": (
        "French",
        frozenset(
            [
                "le",
                "les",
                "des",
                "du",
                "et",
                "est",
                "sont",
                "avec",
                "pour",
                "une",
                "dans",
                "sur",
                "pas",
                "ce",
                "cette",
                "qui",
                "au",
                "aux",
                "mais",
                "ou",
                "il",
                "elle",
                "nous",
                "vous",
                "ils",
                "leur",
                "chaque",
                "aussi",
                "très",
            ]
        ),
    ),
    "de": (
        "German",
        frozenset(
            [
                "der",
                "die",
                "das",
                "und",
                "ist",
                "sind",
                "mit",
                "für",
                "ein",
                "eine",
                "nicht",
                "auf",
                "dem",
                "den",
                "zu",
                "von",
                "auch",
                "sich",
                "wir",
                "sie",
                "jeden",
                "aber",
                "oder",
                "wie",
            ]
        ),
    ),
}
"""Each supported language's code: its name and its function words."""


def function_words(text: str) -> dict[str, int]:
    """How many of `text`'s words are function words of each language, by code."""
    words = [w.casefold() for w in _WORD.findall(text)]
    return {code: sum(w in vocabulary for w in words) for code, (_, vocabulary) in LANGUAGES.items()}
