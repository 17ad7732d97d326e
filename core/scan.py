"""Which of a fixed set of literals a text contains, in one pass over it.

Redaction runs a rule only where its literal occurs (`ghp_`, `-----BEGIN`, `password` …). With a
few hundred literals, testing each with `in` costs a few hundred passes over every string harvested;
Hyperscan (Intel's multi-pattern matcher, the `hyperscan` package) finds all of them in one pass.
Where its wheel does not exist (it ships for x86-64 Linux/Windows/macOS and arm64 macOS) the same
answer comes from `in` checks, so the result never depends on the engine, only the speed.
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


class LiteralScan:
    """`present(text)`: the literals of `exact` found as they are, of `folded` (lower case) found
    in any case, and the `regexes` (simple ones: no lookaround, no backreference) that match."""

    def __init__(
        self, exact: Sequence[str], folded: Sequence[str], regexes: Sequence[str] = (), *, engine: str = ENGINE
    ) -> None:
        self._exact = tuple(dict.fromkeys(exact))
        self._folded = tuple(dict.fromkeys(f.lower() for f in folded))
        self._regexes = tuple(dict.fromkeys(regexes))
        self._compiled = [re.compile(x) for x in self._regexes]
        self._literals = self._exact + self._folded + self._regexes
        self._db: Any = None
        if engine == "hyperscan" and _hs is not None and self._literals:
            self._db = _compile(self._exact, self._folded, self._regexes)
            self._scratch = _hs.Scratch(self._db)

    def present(self, s: str) -> set[str]:
        """The literals that occur in `s`."""
        if self._db is None:
            low = s.lower()
            hits = {g for g in self._exact if g in s} | {g for g in self._folded if g in low}
            return hits | {x.pattern for x in self._compiled if x.search(s)}
        found: set[int] = set()
        data = s.encode("utf-8", "surrogatepass")
        try:
            self._db.scan(data, match_event_handler=lambda i, _f, _t, _fl, _c: found.add(i), scratch=self._scratch)
        except _hs.ScratchInUseError:  # another thread is scanning with this one: use a scratch of our own
            self._db.scan(
                data, match_event_handler=lambda i, _f, _t, _fl, _c: found.add(i), scratch=_hs.Scratch(self._db)
            )
        return {self._literals[i] for i in found}


class MatchStarts:
    """`starts(text)`: the offsets where matches of one regex (simple, as above, and of ASCII
    characters only: case folds as in ASCII) begin, in order, in one pass; None where Hyperscan is
    missing: the caller then finds them its own way."""

    def __init__(self, regex: str, *, engine: str = ENGINE) -> None:
        self._db: Any = None
        if engine == "hyperscan" and _hs is not None:
            self._db = _compile_starts(regex)
            self._scratch = _hs.Scratch(self._db)

    def starts(self, s: str) -> list[int] | None:
        if self._db is None:
            return None
        found: set[int] = set()
        data = s.encode("ascii", "replace")  # a byte per character (`?` matches nothing): offsets are str offsets
        try:
            self._db.scan(data, match_event_handler=lambda _i, f, _t, _fl, _c: found.add(f), scratch=self._scratch)
        except _hs.ScratchInUseError:  # another thread is scanning with this one: use a scratch of our own
            self._db.scan(
                data, match_event_handler=lambda _i, f, _t, _fl, _c: found.add(f), scratch=_hs.Scratch(self._db)
            )
        return sorted(found)


@functools.lru_cache(maxsize=8)
def _compile_starts(regex: str) -> Any:
    """A database reporting every match of `regex` with its leftmost start."""
    assert _hs is not None
    db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
    db.compile(expressions=[regex.encode()], ids=[0], flags=[_hs.HS_FLAG_SOM_LEFTMOST])
    return db


@functools.lru_cache(maxsize=8)
def _compile(exact: tuple[str, ...], folded: tuple[str, ...], regexes: tuple[str, ...]) -> Any:
    """One database per literal set, shared: compiling takes milliseconds, a scratch space none."""
    assert _hs is not None
    patterns = [re.escape(g).encode() for g in exact + folded] + [x.encode() for x in regexes]
    one, caseless = _hs.HS_FLAG_SINGLEMATCH, _hs.HS_FLAG_SINGLEMATCH | _hs.HS_FLAG_CASELESS
    flags = [one] * len(exact) + [caseless] * len(folded) + [one] * len(regexes)
    db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
    db.compile(expressions=patterns, ids=list(range(len(patterns))), flags=flags)
    return db
