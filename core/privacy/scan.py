"""Which of a fixed set of literals and regexes a text contains, and where some of them end, in one
pass over it.

Redaction runs a rule only where its literal occurs (`ghp_`, `-----BEGIN`, `password` …). With a
few hundred literals, testing each with `in` costs a few hundred passes over every string harvested;
Hyperscan (Intel's multi-pattern matcher, the `hyperscan` package) finds all of them in one pass,
and in the same pass reports where each match of the `located` regexes ends, so the rules that
start from those places need no scan of their own. Where its wheel does not exist (it ships for
x86-64 Linux/Windows/macOS and arm64 macOS) presence comes from `in` checks and `re.search`, so the
result never depends on the engine, only the speed; the places are then not known (None).

Patterns are ASCII and Hyperscan reads the text one byte per character (`?` for any character
beyond ASCII, which no pattern's literal holds), so an offset it reports is an offset in the str.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

_hs: Any = None
try:
    import hyperscan

    _hs = hyperscan
except ImportError:  # no wheel for this platform: the plain scan below gives the same answer
    pass

ENGINE = "hyperscan" if _hs is not None else "python"
Ends = dict[str, list[int]]  # located regex → the offsets where its matches end, in order


class LiteralScan:
    """`scan(text)`: the literals of `exact` found as they are, of `folded` (lower case) found in
    any case, and the `regexes` and `located` regexes (simple ones: no lookaround, no
    backreference) that match, and where each match of a `located` regex ends."""

    def __init__(
        self,
        exact: Sequence[str],
        folded: Sequence[str],
        regexes: Sequence[str] = (),
        located: Sequence[str] = (),
        *,
        engine: str = ENGINE,
    ) -> None:
        self._exact = tuple(dict.fromkeys(exact))
        self._folded = tuple(dict.fromkeys(f.lower() for f in folded))
        self._regexes = tuple(dict.fromkeys(regexes))
        self._located = tuple(x for x in dict.fromkeys(located) if x not in self._regexes)
        self._compiled = [re.compile(x) for x in self._regexes + self._located]
        self._patterns = self._exact + self._folded + self._regexes + self._located
        if not all(p.isascii() for p in self._patterns):
            raise ValueError("LiteralScan patterns must be ASCII: the text is scanned one byte per character")
        self._first_located = len(self._patterns) - len(self._located)
        self._db: Any = None
        if engine == "hyperscan" and _hs is not None and self._patterns:
            self._db = _compile(self._exact, self._folded, self._regexes, self._located)
            self._scratch = _hs.Scratch(self._db)

    @property
    def locates(self) -> bool:
        """Whether `scan` reports where the located regexes' matches end (Hyperscan is there)."""
        return self._db is not None

    def scan(self, s: str) -> tuple[set[str], Ends | None]:
        """The literals and regexes that occur in `s`, and where each located regex's matches end
        (every end, overlapping ones too); None for the places where Hyperscan is missing."""
        if self._db is None:
            low = s.lower()
            hits = {g for g in self._exact if g in s} | {g for g in self._folded if g in low}
            return hits | {x.pattern for x in self._compiled if x.search(s)}, None
        events: list[tuple[int, int]] = []
        data = s.encode("ascii", "replace")  # a byte per character: offsets are str offsets
        try:
            self._db.scan(data, match_event_handler=_collect, context=events, scratch=self._scratch)
        except _hs.ScratchInUseError:  # another thread is scanning with this one: use a scratch of our own
            events.clear()
            self._db.scan(data, match_event_handler=_collect, context=events, scratch=_hs.Scratch(self._db))
        if not events:  # most texts: nothing to sort out
            return set(), {}
        ends: Ends = {}
        first, patterns = self._first_located, self._patterns
        for i, end in events:
            if i >= first:
                ends.setdefault(patterns[i], []).append(end)
        return {patterns[i] for i, _ in events}, ends


def _collect(i: int, _from: int, to: int, _flags: int, events: list[tuple[int, int]]) -> None:
    """Hyperscan's match handler: one shared function (no closure per scan), the scan's own list
    passed as its context."""
    events.append((i, to))


@functools.lru_cache(maxsize=8)
def _compile(
    exact: tuple[str, ...], folded: tuple[str, ...], regexes: tuple[str, ...], located: tuple[str, ...]
) -> Any:
    """One database per pattern set, shared: compiling takes milliseconds, a scratch space none.
    Literals and plain regexes report their first match only; located regexes every match end."""
    assert _hs is not None
    patterns = [re.escape(g).encode() for g in exact + folded] + [x.encode() for x in regexes + located]
    one, caseless = _hs.HS_FLAG_SINGLEMATCH, _hs.HS_FLAG_SINGLEMATCH | _hs.HS_FLAG_CASELESS
    flags = [one] * len(exact) + [caseless] * len(folded) + [one] * len(regexes) + [0] * len(located)
    db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
    db.compile(expressions=patterns, ids=list(range(len(patterns))), flags=flags)
    return db
