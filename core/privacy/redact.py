"""Secret redaction: nothing harvested is stored or sent anywhere before it passes through here.

`Redactor.text` replaces each secret with `[REDACTED:<kind>]` and leaves the context readable (the
user and host of a URL, the NAME of a `.env` line, the word "Bearer"). Rules run in order, most
specific first, so a GitHub token inside a git URL is counted as `github_token`. Text already
replaced is never looked at again, which makes redaction idempotent.

Speed: every rule names a gate literal; a rule whose gate is absent from the text costs nothing
more than one substring scan shared by the rules with the same gate.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from skillsleep.core.privacy.scan import ENGINE, Ends, LiteralScan
from skillsleep.core.privacy.secret_names import name_strength, secret_name
from skillsleep.core.privacy.secret_rules import FOLDS_TO_ASCII, PROSE_RULES, PROSE_WORDS, TOKEN_RULES
from skillsleep.core.privacy.secret_values import (
    FILLER,
    IDENTIFIER,
    STANDALONE,
    STANDALONE_GATE,
    Rule,
    code_like,
    looks_generated,
    placeholder,
    public_blocks,
    random_enough,
)
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.session import Session, Turn

__all__ = ["REDACTED", "Redactor", "redaction_markers", "secret_name"]

REDACTED = "[REDACTED:{kind}]"

_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _ALNUM | frozenset("_.-")


def _mark(kind: str) -> str:
    return REDACTED.format(kind=kind)


def redaction_markers(text: str) -> list[str]:
    """The `[REDACTED:<kind>]` markers in `text`, each once, in order."""
    return list(dict.fromkeys(_MARKER.findall(text)))


# --- `NAME=value`, `"name": "value"`, `name: value`: found from the secret word outwards ------------

_KEY_WORDS = ("secret", "token", "pass", "pwd", "key", "auth", "credential", "private", "pat")
_KEYWORD = re.compile("|".join(_KEY_WORDS), re.IGNORECASE)
_SEP_VALUE = re.compile(
    r"(?P<cq>\\{0,3}[\"']?\]?)(?P<sep>[ \t]*(?:===?|!==?|=>|:=|=|:|[ \t]value[ \t]*=)[ \t]*@?)"
    r"(?:(?P<vq>\\{0,3}[\"'`])(?P<quoted>.*?)(?P=vq)|(?P<bare>[^\s\"'`,;)}\]\\]+))"
)
# `--api-key VALUE`: a command-line flag whose name says secret
_FLAG_VALUE = re.compile(
    r"(?P<cq>)(?P<sep>[ \t]+)(?:(?P<vq>[\"'])(?P<quoted>[^\"'\n]*?)(?P=vq)|(?P<bare>[^\s\"'`,;)}\]\\]+))"
)
_LINE_LEAD = re.compile(r"[ \t]*(?:[-+>][ \t]+)?(?:export[ \t]+|set[ \t]+|\$env:)?[\"']?")


# `_keyed` redacts only a secret word's name followed by a separator (`=`, `:`, `==`, `!=`, `=>`,
# ` value =`) or a `--flag` name followed by a blank, which this regex finds: a far better gate than
# the words alone, which `pat`, `key`, `token` make common. Names are ASCII (`_NAME_CHARS`), so a
# character beyond ASCII that lower-cases to a word's letter (K KELVIN SIGN is k) ends a name
# rather than starting one: ASCII case folding finds every name that can hold a secret.
_NAME_RUN = r"[A-Za-z0-9_.\-]*"
_WORDS = "|".join(_KEY_WORDS)
_KEYED_GATE = (
    rf"(?i)--{_NAME_RUN}(?:{_WORDS}){_NAME_RUN}[ \t]"
    rf"|(?:{_WORDS}){_NAME_RUN}\\{{0,3}}[\"']?\]?[ \t]*(?:[=!:]|[ \t]value)"
)

_CASE_GATES = tuple(dict.fromkeys(r.gate for r in TOKEN_RULES if not r.fold and not r.gate_is_regex))
_REGEX_GATES = tuple(dict.fromkeys(r.gate for r in TOKEN_RULES + PROSE_RULES if r.gate_is_regex))
_FOLD_GATES = tuple(
    dict.fromkeys([r.gate for r in TOKEN_RULES if r.fold and not r.gate_is_regex] + list(PROSE_WORDS.values()))
)
# the two gates whose places the scan reports: `_keyed` and `_standalone` start from them
_LOCATED_GATES = (_KEYED_GATE, STANDALONE_GATE)


def _by_gate(rules: Sequence[Rule]) -> dict[str, tuple[Rule, ...]]:
    """The rules of each gate, in rule order."""
    out: dict[str, list[Rule]] = {}
    for r in rules:
        out.setdefault(r.gate, []).append(r)
    return {gate: tuple(rs) for gate, rs in out.items()}


_TOKEN_ORDER = {id(r): i for i, r in enumerate(TOKEN_RULES)}
_PROSE_ORDER = {id(r): i for i, r in enumerate(PROSE_RULES)}
_TOKEN_BY_GATE = _by_gate(TOKEN_RULES)
_PROSE_BY_GATE = _by_gate(PROSE_RULES)


def _present_rules(by_gate: dict[str, tuple[Rule, ...]], order: dict[int, int], present: set[str]) -> list[Rule]:
    """The rules whose gate is present, in rule order (a text holds a few of the hundred gates)."""
    found = [r for gate in present for r in by_gate.get(gate, ())]
    return sorted(found, key=lambda r: order[id(r)]) if len(found) > 1 else found


def _keyword_hits(s: str, low: str) -> list[int]:
    """Offsets of the secret words in `s` (`low` is its lower()), in order (literal scans: much
    faster than one regex)."""
    if len(low) != len(s):
        return [m.start() for m in _KEYWORD.finditer(s)]
    hits: list[int] = []
    for word in _KEY_WORDS:
        i = low.find(word)
        while i >= 0:
            hits.append(i)
            i = low.find(word, i + 1)
    hits.sort()
    return hits


def _name_end(s: str, end: int) -> int:
    """The last character of the name whose separator a `_KEYED_GATE` match ends with at `end`:
    before `=`, `:` or `!`, ` value`, or the blank after a `--flag`, and the quotes, `]` and
    backslashes between (no character of a name)."""
    i = end - 1
    if s[i] in "=!:":
        i -= 1
    elif s[i] not in " \t":
        i -= len("value")  # `name value = …`: the blank before the word
    while s[i] not in _NAME_CHARS:
        i -= 1
    return i


def _line_starts(s: str, ends: list[int]) -> list[int]:
    """Where the lines begin that `STANDALONE_GATE` matches ending at `ends` cover, in order (a
    match ends after its line's newline, or at the end of the text)."""
    starts = set()
    for end in ends:
        eol = end - 1 if s[end - 1] == "\n" else end
        starts.add(s.rfind("\n", 0, eol) + 1)
    return sorted(starts)


class Redactor:
    """Replaces secrets in text, JSON-like values and sessions; `counts` tallies them by kind."""

    def __init__(self, extra_patterns: Sequence[str] = (), *, engine: str = ENGINE) -> None:
        self.patterns, self.engine = tuple(extra_patterns), engine  # what another process builds it from
        self.counts: Counter[str] = Counter()
        self._lowered: dict[str, str] = {}
        self._custom: list[re.Pattern[str]] = []
        self._scan = LiteralScan(_CASE_GATES, _FOLD_GATES, _REGEX_GATES, _LOCATED_GATES, engine=engine)
        for pattern in extra_patterns:
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"invalid redaction pattern {pattern!r}: {exc}; fix or remove it") from None
            if compiled.fullmatch(""):
                raise ConfigError(f"redaction pattern {pattern!r} matches the empty string; make it match a secret")
            self._custom.append(compiled)

    # -- text --------------------------------------------------------------------------------------

    def text(self, s: str) -> str:
        """A copy of `s` with every secret replaced by `[REDACTED:<kind>]`."""
        if len(s) < 8 and not self._custom:  # too short to hold a secret the rules would see
            return s
        for pattern in self._custom:
            s = self._outside_markers(s, functools.partial(pattern.sub, self._custom_repl))
        scanned = s
        present, ends = self._scan.scan(s)  # looked up before redacting: redacting never adds a gate
        if not present:
            return s
        if not s.isascii() and any(c in s for c in FOLDS_TO_ASCII):  # the prose gates may miss: go by word
            present = (present - PROSE_WORDS.keys()) | {gate for gate, word in PROSE_WORDS.items() if word in present}
        self._lowered = {}  # lower() of each piece the fold rules search, reused across rules
        for rule in _present_rules(_TOKEN_BY_GATE, _TOKEN_ORDER, present):
            s = self._outside_markers(s, functools.partial(self._apply, rule))
        if _KEYED_GATE in present:
            s = self._located(s, scanned, ends, _KEYED_GATE, self._keyed)
        for rule in _present_rules(_PROSE_BY_GATE, _PROSE_ORDER, present):
            s = self._outside_markers(s, functools.partial(self._apply, rule))
        if STANDALONE_GATE in present:
            s = self._located(s, scanned, ends, STANDALONE_GATE, self._standalone)
        self._lowered = {}
        return s

    @staticmethod
    def _outside_markers(s: str, fn: Callable[[str], str]) -> str:
        """Apply `fn` to the parts of `s` that are not already a redaction marker."""
        if "[REDACTED:" not in s:
            return fn(s)
        parts = _MARKER.split(s)
        markers = _MARKER.findall(s)
        out = [fn(parts[0])]
        for marker, part in zip(markers, parts[1:], strict=True):
            out += [marker, fn(part)]
        return "".join(out)

    def _located(
        self, s: str, scanned: str, ends: Ends | None, gate: str, fn: Callable[[str, list[int] | None], str]
    ) -> str:
        """`fn` over the parts of `s` outside markers. While `s` is still the text scanned and holds
        no marker, `fn` starts from where the scan saw `gate`'s matches end; otherwise each part
        finds its own places (as the first rules changed it, the offsets would be wrong)."""
        if ends is not None and s is scanned and "[REDACTED:" not in s:
            return fn(s, ends[gate])
        return self._outside_markers(s, lambda part: fn(part, None))

    def _lower(self, s: str) -> str:
        """`s.lower()`, computed once per piece of text while its rules run."""
        return self._lowered.get(s) or self._lowered.setdefault(s, s.lower())

    def _apply(self, rule: Rule, s: str) -> str:
        hay, pattern = s, rule.pattern
        if rule.fold:
            hay = self._lower(s)
            if len(hay) != len(s):  # a few characters (İ) lower-case to two: search case-insensitively
                hay, pattern = s, rule.fallback
        out: list[str] = []
        done = 0
        for m in pattern.finditer(hay):
            start, end = m.span(rule.group)
            if start < 0 or (m.start() and s[m.start() - 1] in rule.boundary):
                continue
            if rule.check is not None and not rule.check(s[start:end]):
                continue
            if rule.kind != "private_key" and FILLER.search(s, start, end):  # `ghp_xxxx…`: a placeholder
                continue
            out += [s[done:start], _mark(rule.kind)]
            done = end
            self.counts[rule.kind] += 1
        return "".join(out) + s[done:] if out else s

    def _standalone(self, s: str, ends: list[int] | None) -> str:
        """Redact a generated-looking token that is a whole line by itself (no name, no prefix);
        `ends`, where known, are where the gate's matches end: only their lines are looked at."""
        out: list[str] = []
        done = 0
        if ends is None:
            matches: Iterable[re.Match[str] | None] = STANDALONE.finditer(s)
        else:
            matches = map(functools.partial(STANDALONE.match, s), _line_starts(s, ends))
        public: list[tuple[int, int]] | None = None  # a public key's or certificate's lines are no secret
        for m in matches:
            if m is None or not looks_generated(m.group(1)):
                continue
            public = public_blocks(s) if public is None else public  # found once, where a token is
            if not any(a < m.start() < b for a, b in public):
                out += [s[done : m.start(1)], _mark("high_entropy_token")]
                done = m.end(1)
                self.counts["high_entropy_token"] += 1
        return "".join(out) + s[done:] if out else s

    def _custom_repl(self, m: re.Match[str]) -> str:
        group = 1 if m.re.groups else 0
        if m.start(group) < 0 or m.start(group) == m.end(group):
            return m.group(0)
        self.counts["custom"] += 1
        s = m.string
        return s[m.start() : m.start(group)] + _mark("custom") + s[m.end(group) : m.end()]

    def _keyed(self, s: str, ends: list[int] | None) -> str:
        """Redact values whose key names a secret, scanning outwards from each secret word (or from
        the name before each `_KEYED_GATE` match's end, where `ends` gives them)."""
        out: list[str] = []
        done = 0  # everything before this offset is already in `out`
        scanned = 0  # names before this offset were already looked at
        for hit in self._keyed_hits(s, ends):
            if hit < scanned:
                continue
            start = end = hit
            while start > done and s[start - 1] in _NAME_CHARS:
                start -= 1
            while end < len(s) and s[end] in _NAME_CHARS:
                end += 1
            scanned = end
            name = s[start:end].lstrip(".-")
            strength = name_strength(name) if name else 0
            m = _SEP_VALUE.match(s, end) if strength else None
            kind = "keyed_secret"
            if m is None and strength == 2 and s.startswith("--", start):
                m, kind, strength = _FLAG_VALUE.match(s, end), "keyword_secret", 1  # its value must look generated
            if m is None:
                continue
            span = self._keyed_value(s, start, m, name, weak=strength < 2)
            if span is not None:
                out += [s[done : span[0]], _mark(kind)]
                done = scanned = max(scanned, span[1])
                self.counts[kind] += 1
        return "".join(out) + s[done:] if out else s

    def _keyed_hits(self, s: str, ends: list[int] | None) -> list[int]:
        """A place in each name run of `s` that may hold a secret's name, in order: the end of the
        name before each `_KEYED_GATE` match (a match ends just after the separator of a name run
        that can hold one; the other runs of secret words redact nothing, and a run reads the same
        from any of its characters), or each secret word where Hyperscan is missing."""
        if ends is None and not self._scan.locates:
            return _keyword_hits(s, self._lower(s))
        if ends is None:
            ends = (self._scan.scan(s)[1] or {}).get(_KEYED_GATE, [])
        return sorted({_name_end(s, end) for end in ends})

    @staticmethod
    def _keyed_value(s: str, name_start: int, m: re.Match[str], name: str, *, weak: bool) -> tuple[int, int] | None:
        """The span to redact after `name` + separator, or None when the value is not a literal."""
        if name.lower().endswith("authorization"):
            return None  # the header rules redact its token and keep the scheme word (`Bearer`, `Api-Token`)
        line_start = s.rfind("\n", 0, name_start) + 1
        lead = _LINE_LEAD.fullmatch(s, line_start, name_start) is not None
        env_style = lead and m.group("sep") == "=" and not m.group("cq")
        quoted = m.group("quoted")
        value = m.group("bare") if quoted is None else quoted
        if len(value) < 3 or placeholder(value) or (weak and not env_style and not random_enough(value, 8)):
            return None
        if quoted is not None:
            code = "`" in m.group("vq") and code_like(value, name)  # markdown `config.api_key`
            return None if code else (m.start("quoted"), m.end("quoted"))
        if not env_style and code_like(value, name):
            return None
        yaml_line = lead and m.group("sep").strip() == ":"
        if not env_style and not yaml_line and IDENTIFIER.fullmatch(value):
            return None  # `api_key = apiKeyValue`, "Credentials: via …": a variable or a word
        if lead and (env_style or m.group("sep").strip() == ":"):
            # a whole `.env` / YAML line: the value runs to the end of the line
            eol = s.find("\n", m.start("bare"))
            eol = len(s) if eol < 0 else eol
            if "`" in s[m.start("bare") : eol] and IDENTIFIER.fullmatch(value):
                return None  # markdown prose: "- Credentials: via `context.credentials`"
            return m.start("bare"), len(s[:eol].rstrip())
        return m.start("bare"), m.end("bare")

    # -- structures ----------------------------------------------------------------------------

    def value(self, v: Any) -> Any:
        """A redacted copy of a JSON-like value: strings are redacted, and the whole value of a
        dict key that names a secret (`password`, `api_key`, `Authorization` …) is replaced. A
        value with nothing to redact comes back as it is (the same object), so nothing is copied."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            out = {
                k: self._keyed_item(k, x) if isinstance(k, str) and secret_name(k) else self.value(x)
                for k, x in v.items()
            }
            return v if all(out[k] is x for k, x in v.items()) else out
        if isinstance(v, (list, tuple)):
            items = [self.value(x) for x in v]
            if all(a is b for a, b in zip(items, v, strict=True)):
                return v
            return items if isinstance(v, list) else tuple(items)
        return v

    def _keyed_item(self, key: str, v: Any) -> Any:
        if v is None or isinstance(v, bool) or v == "" or v == [] or v == {}:
            return v
        if isinstance(v, str) and (placeholder(v) or _MARKER.fullmatch(v)):
            return self.text(v)
        self.counts["keyed_secret"] += 1
        return _mark("keyed_secret")

    def edit(self, e: Edit) -> Edit:
        """A redacted copy of an edit an optimizer wrote: its new text and its rationale. The target
        is kept: it names a line of the skill as it is (a redacted one would match no line)."""
        content = None if e.content is None else self.text(e.content)
        return e.model_copy(update={"content": content, "rationale": self.text(e.rationale)})

    def session(self, s: Session) -> Session:
        """A redacted copy of a session: every turn's text and arguments (the project path and
        ids are kept). The input is not modified; a turn with nothing to redact is shared, not copied."""
        return s.model_copy(update={"turns": [self._turn(t) for t in s.turns]})

    def _turn(self, t: Turn) -> Turn:
        text, arguments = self.text(t.text), self.value(t.arguments)
        if text is t.text and arguments is t.arguments:
            return t
        return t.model_copy(update={"text": text, "arguments": arguments})
