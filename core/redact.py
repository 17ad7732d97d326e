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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from skillsleep.core.errors import ConfigError
from skillsleep.core.records import Edit
from skillsleep.core.session import Session

REDACTED = "[REDACTED:{kind}]"

_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _ALNUM | frozenset("_.-")


def _mark(kind: str) -> str:
    return REDACTED.format(kind=kind)


def redaction_markers(text: str) -> list[str]:
    """The `[REDACTED:<kind>]` markers in `text`, each once, in order."""
    return list(dict.fromkeys(_MARKER.findall(text)))


# --- what a value must look like -----------------------------------------------------------------

_STOP_VALUES = frozenset(
    [
        "true",
        "false",
        "null",
        "none",
        "nil",
        "yes",
        "no",
        "on",
        "off",
        "undefined",
        "required",
        "optional",
        "str",
        "string",
        "bytes",
        "int",
        "integer",
        "number",
        "bool",
        "boolean",
        "any",
        "object",
        "secretstr",
        "bearer",
        "basic",
        "token",
        "digest",
    ]
)
_PLACEHOLDER = re.compile(
    r"\[[^\]]*\]|\$\{[^}]*\}?|\$\(.*|\$[A-Za-z_]\w*|<[^<>]*>|\{\{.*\}\}|%[A-Za-z_]\w*%|[*xX•.#_-]{3,}|\.\.\.|…"
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _placeholder(value: str) -> bool:
    v = value.strip().strip("\"'`")
    return not v or v.lower() in _STOP_VALUES or _PLACEHOLDER.fullmatch(v) is not None


def _code_like(value: str, name: str) -> bool:
    """An expression rather than a literal: `os.environ["X"]`, `get_token()`, `self.password`."""
    return (
        "(" in value or "[" in value or value.startswith("{") or _DOTTED.fullmatch(value) is not None or value == name
    )


def _random_enough(value: str, min_len: int) -> bool:
    """Looks generated rather than a word: long enough, letters and digits or mixed case."""
    if len(value) < min_len or value.startswith(("/", "./", "~", "$")) or "://" in value:
        return False
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() for c in value)
    return ((lower or upper) and digit) or (lower and upper and symbol and len(value) >= 12)


# --- names that say "secret" -----------------------------------------------------------------------

_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_WORDS = frozenset(
    [
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "token",
        "credential",
        "credentials",
        "authorization",
        "apikey",
        "privatekey",
        "accesskey",
        "secretkey",
    ]
)
_WEAK_WORDS = frozenset(["auth", "pass", "private"])  # secret only when the value looks generated
_SECRET_SUFFIXES = ("password", "passwd", "passphrase", "secret", "apikey", "token", "credential", "credentials")
_KEY_QUALIFIERS = frozenset(
    [
        "api",
        "access",
        "private",
        "secret",
        "signing",
        "encryption",
        "master",
        "client",
        "service",
        "license",
        "app",
        "auth",
    ]
)
_BENIGN_LAST = frozenset(
    [
        "count",
        "counts",
        "limit",
        "limits",
        "max",
        "min",
        "type",
        "types",
        "url",
        "uri",
        "endpoint",
        "file",
        "files",
        "path",
        "dir",
        "length",
        "len",
        "size",
        "budget",
        "ttl",
        "expiry",
        "expires",
        "expiration",
        "exp",
        "id",
        "ids",
        "name",
        "names",
        "method",
        "mode",
        "provider",
        "enabled",
        "required",
        "field",
        "header",
        "env",
        "var",
        "prefix",
        "format",
        "usage",
        "used",
        "remaining",
        "rate",
        "ratio",
        "policy",
        "helper",
        "index",
        "strategy",
        "version",
        "kind",
        "class",
        "schema",
        "pattern",
        "regex",
        "rule",
        "rules",
        "cache",
        "timeout",
        "flow",
        "scope",
        "scopes",
        "audience",
        "issuer",
        "algorithm",
        "alg",
        "source",
        "label",
        "description",
        "help",
        "ip",
        "address",
        "addr",
        "subnet",
        "network",
        "repo",
        "dns",
        "host",
        "port",
        "user",
        "username",
        "email",
        "location",
        "store",
        "storage",
        "manager",
    ]
)
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
# what may follow the secret word in a name: `SECRET_KEY_BASE`, `DB_PASSWORD_PROD`, `TOKEN_2`,
# but not `time_to_first_token_ms` or `token_limit_override`
_TRAILING_OK = frozenset(
    [
        "key",
        "keys",
        "value",
        "secret",
        "token",
        "base",
        "b64",
        "base64",
        "hex",
        "raw",
        "str",
        "string",
        "enc",
        "encrypted",
        "plain",
        "plaintext",
        "prod",
        "production",
        "dev",
        "development",
        "staging",
        "stage",
        "test",
        "testing",
        "live",
        "local",
        "default",
        "main",
        "primary",
        "new",
        "old",
        "current",
        "next",
        "prev",
        "previous",
        "ro",
        "rw",
        "admin",
        "root",
        "master",
    ]
)


def secret_name(name: str) -> bool:
    """Whether a variable / key / header name says its value is a secret (`DB_PASSWORD`, `apiKey`,
    `x-api-key`, `client_secret`, `auth`), but not `max_tokens`, `author`, `PWD` or `token_count`."""
    return _name_strength(name) > 0


@functools.lru_cache(maxsize=4096)
def _name_strength(name: str) -> int:
    """2: the name says secret (`password`); 1: it may (`auth`, `pass`, `private`); 0: it does not."""
    if name.upper() in _NOT_SECRET_NAMES:
        return 0
    segs = [s.lower() for s in _SEGMENT.findall(name)]
    if not segs or segs[-1] in _BENIGN_LAST:
        return 0
    strength = 0
    for i, seg in enumerate(segs):
        if not all(t in _TRAILING_OK or t.isdigit() for t in segs[i + 1 :]):
            continue
        if seg in _SECRET_WORDS or (seg.endswith(_SECRET_SUFFIXES) and not seg.startswith("tokeniz")):
            return 2
        if seg == "key" and i > 0 and segs[i - 1] in _KEY_QUALIFIERS:
            return 2
        if seg in _WEAK_WORDS:
            strength = 1
    return strength


# --- rules -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    """One regex rule: `group` of each match is replaced unless `check` rejects the value.

    Patterns start with a literal where they can: the regex engine then jumps from one occurrence
    to the next (a case-insensitive regex or a leading alternation is ten times slower, hence
    `fold`: search the lower-cased text instead)."""

    kind: str
    gate: str  # a literal every match contains: a text without it is never searched
    pattern: re.Pattern[str]
    fallback: re.Pattern[str]  # the same pattern, case-insensitive, for texts whose lower() changes length
    group: int = 0
    boundary: frozenset[str] = _ALNUM  # the match must not follow one of these characters
    check: Callable[[str], bool] | None = None
    fold: bool = False  # gate and pattern are lower case and run over the lower-cased text


def _rule(
    kind: str,
    prefix: str,
    rest: str,
    *,
    gate: str = "",
    group: int = 0,
    boundary: frozenset[str] = _ALNUM,
    check: Callable[[str], bool] | None = None,
    fold: bool = False,
) -> _Rule:
    """A rule matching the literal `prefix` then the regex `rest`, run when `gate` (default: the
    prefix) occurs in the text."""
    pattern = re.escape(prefix) + rest
    compiled, fallback = re.compile(pattern), re.compile(pattern, re.IGNORECASE)
    return _Rule(kind, gate or prefix, compiled, fallback, group, boundary, check, fold)


def _pem_body(v: str) -> bool:
    return sum(c.isalnum() for c in v) >= 16


def _not_placeholder(v: str) -> bool:
    return not _placeholder(v)


_B62 = "[A-Za-z0-9]"
_URLSAFE = "[A-Za-z0-9_-]"
_NONE: frozenset[str] = frozenset()

_TOKEN_RULES: list[_Rule] = [
    _rule(
        "private_key",
        "-----BEGIN",
        r"[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"((?:[\s\S]{0,40000}?(?=-----END[ A-Z0-9]*PRIVATE KEY))"
        r"|[A-Za-z0-9+/=\s\\:,.()-]*)",  # a block cut off before its END line: redact the body we have
        group=1,
        boundary=_NONE,
        check=_pem_body,
    ),
    _rule("anthropic_key", "sk-ant-", _URLSAFE + "{20,}", gate="sk-"),
    _rule("openrouter_key", "sk-or-v1-", _B62 + "{32,}", gate="sk-"),
    _rule("openai_key", "sk-", "(?:proj|svcacct|admin)-" + _URLSAFE + "{20,}"),
    _rule("openai_key", "sk-", _B62 + "{20}T3BlbkFJ" + _B62 + "{20}"),
    _rule("deepseek_key", "sk-", "[0-9a-f]{32}(?![A-Za-z0-9_-])"),
    _rule("api_key", "sk-", _URLSAFE + "{20,}", check=lambda v: _random_enough(v[3:], 20)),
    _rule("google_api_key", "AIza", _URLSAFE + "{35}"),
    _rule("google_oauth", "GOCSPX-", _URLSAFE + "{20,}"),
    _rule("google_oauth", "ya29.", _URLSAFE + "{20,}"),
    _rule("github_token", "gh", "[pousr]_" + _B62 + "{30,}"),
    _rule("github_token", "github_pat_", "[A-Za-z0-9_]{22,}"),
    _rule("gitlab_token", "gl", "(?:pat|ptt|dt|rt|soat|cbt)-" + _URLSAFE + "{20,}"),
    _rule("slack_webhook", "hooks.slack.com/", r"(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}"),
    _rule("slack_token", "xox", "[abposre]-[A-Za-z0-9-]{10,}"),
    _rule("slack_token", "xapp-", r"\d-[A-Za-z0-9-]{10,}"),
    _rule("stripe_key", "", "[sr]k_live_" + _B62 + "{10,}", gate="_live_"),
    _rule("stripe_key", "", "[sr]k_test_" + _B62 + "{10,}", gate="_test_"),
    _rule("stripe_key", "whsec_", _B62 + "{20,}"),
    _rule("aws_access_key", "A", "(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|BIA|CCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    _rule("huggingface_token", "hf_", _B62 + "{30,}", check=lambda v: _random_enough(v, 20)),
    _rule("npm_token", "npm_", _B62 + "{36}"),
    _rule("pypi_token", "pypi-AgE", _URLSAFE + "{50,}"),
    _rule("twilio_key", "SK", "[0-9a-f]{32}(?![A-Za-z0-9])"),
    _rule("twilio_key", "AC", "[0-9a-f]{32}(?![A-Za-z0-9])"),
    _rule("sendgrid_key", "SG.", _URLSAFE + r"{16,32}\." + _URLSAFE + "{30,64}"),
    _rule("groq_key", "gsk_", _B62 + "{40,}"),
    _rule("xai_key", "xai-", _B62 + "{40,}"),
    _rule("replicate_key", "r8_", _B62 + "{30,}"),
    _rule("digitalocean_token", "do", "[opr]_v1_[a-f0-9]{64}", gate="_v1_"),
    _rule("shopify_token", "shp", "(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    _rule("telegram_token", ":AA", r"(?<=\d:AA)" + _URLSAFE + "{33}(?!" + _URLSAFE + ")", boundary=_NONE),
    _rule("jwt", "eyJ", _URLSAFE + r"{8,}\.eyJ" + _URLSAFE + r"{8,}\." + _URLSAFE + "*"),
    _rule(
        "url_password",
        "://",
        r"[^\s:/?#@\"'<>\[\]]*:([^\s/?#\"'<>]+)@",
        group=1,
        boundary=_NONE,
        check=_not_placeholder,
    ),
    _rule(
        "basic_auth",
        "authorization",
        r"[\"']?\s*[:=]\s*[\"']?basic\s+([a-z0-9+/=._~-]{6,})",
        gate="auth",
        group=1,
        fold=True,
    ),
    _rule(
        "bearer_token",
        "authorization",
        r"[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|token|bot|negotiate|digest|ntlm|apikey|sso-key)\s+)?([^\s\"',;\[{(\\][^\s\"',;\\]{7,})",
        gate="auth",
        group=1,
        check=_not_placeholder,
        fold=True,
    ),
    _rule(
        "bearer_token", "bearer", r"\s+([a-z0-9._~+/-]+=*)", group=1, check=lambda v: _random_enough(v, 12), fold=True
    ),
    _rule(
        "aws_secret_key",
        "secret",
        r"_?access_?key[\"']?\s*[:=]\s*[\"']?([a-z0-9/+=]{40})(?![a-z0-9/+=])",
        group=1,
        boundary=_NONE,
        fold=True,
    ),
]

# --- "the password is hunter2", "--token abc123…" -----------------------------------------------------

_PROSE_WORDS = (
    "password passwd passphrase pwd secret token api-key api_key apikey api key access-key access_key access key"
)
_VALUE = r"(?:[\"'`]?)([^\s\"'`<>\\]{5,199}[^\s\"'`<>\\.,;:!?)\]}])"
_EXPLICIT = r"s?(?![a-z0-9_-])(?:[ \t]*[:=][ \t]*|[ \t]+(?:is|was|to|would be|should be)[ \t]+)" + _VALUE
_BARE = r"s?(?![a-z0-9_-])[ \t]+" + _VALUE
_WORD_BOUNDARY = _ALNUM | frozenset("_")
_BARE_TOKEN = re.compile(r"[A-Za-z0-9_+=-]{12,}")  # no dots or slashes: "tokens truncated…/a.ts:264" is not one


def _explicit_secret(v: str) -> bool:
    return not _placeholder(v) and not _code_like(v, "") and _random_enough(v, 6)


def _bare_secret(v: str) -> bool:
    letters = sum(c.isalpha() for c in v)
    token_like = _BARE_TOKEN.fullmatch(v) is not None
    return token_like and _explicit_secret(v) and letters >= 2 and any(c.isdigit() for c in v)


def _prose_rules() -> list[_Rule]:
    words = _PROSE_WORDS.replace("api key", "api").replace("access key", "access").split()
    out = []
    for word in words:
        literal, rest = (word, "") if word not in ("api", "access") else (word, "[ ]key")
        gate = next(g for g in ("pass", "pwd", "secret", "token", "api", "access") if literal.startswith(g))
        for sep, check in ((_EXPLICIT, _explicit_secret), (_BARE, _bare_secret)):
            out.append(
                _rule(
                    "keyword_secret",
                    literal,
                    rest + sep,
                    gate=gate,
                    group=1,
                    boundary=_WORD_BOUNDARY,
                    check=check,
                    fold=True,
                )
            )
    return out


_PROSE_RULES = _prose_rules()

# --- `NAME=value`, `"name": "value"`, `name: value`: found from the secret word outwards ------------

_KEY_WORDS = ("secret", "token", "pass", "pwd", "key", "auth", "credential", "private")
_KEYWORD = re.compile("|".join(_KEY_WORDS), re.IGNORECASE)
_SEP_VALUE = re.compile(
    r"(?P<cq>\\{0,3}[\"']?)(?P<sep>[ \t]*(?:=>|:=|=|:)[ \t]*)"
    r"(?:(?P<vq>\\{0,3}[\"'`])(?P<quoted>.*?)(?P=vq)|(?P<bare>[^\s\"'`,;)}\]\\]+))"
)
_LINE_LEAD = re.compile(r"[ \t]*(?:[-+>][ \t]+)?(?:export[ \t]+|set[ \t]+|\$env:)?[\"']?")


_CASE_GATES = tuple(dict.fromkeys(r.gate for r in _TOKEN_RULES if not r.fold))
_FOLD_GATES = tuple(dict.fromkeys([r.gate for r in _TOKEN_RULES + _PROSE_RULES if r.fold] + list(_KEY_WORDS)))


def _keyword_hits(s: str) -> list[int]:
    """Offsets of the secret words in `s`, in order (literal scans: much faster than one regex)."""
    low = s.lower()
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


class Redactor:
    """Replaces secrets in text, JSON-like values and sessions; `counts` tallies them by kind."""

    def __init__(self, extra_patterns: Sequence[str] = ()) -> None:
        self.counts: Counter[str] = Counter()
        self._lowered: dict[str, str] = {}
        self._custom: list[re.Pattern[str]] = []
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
        if not s:
            return s
        for pattern in self._custom:
            s = self._outside_markers(s, functools.partial(pattern.sub, self._custom_repl))
        low = s.lower()  # the gates are looked up before redacting: redacting never adds one
        present = {g for g in _CASE_GATES if g in s} | {g for g in _FOLD_GATES if g in low}
        if not present:
            return s
        self._lowered = {s: low}  # lower() of each piece the fold rules search, reused across rules
        for rule in _TOKEN_RULES:
            if rule.gate in present:
                s = self._outside_markers(s, functools.partial(self._apply, rule))
        if not present.isdisjoint(_KEY_WORDS):
            s = self._outside_markers(s, self._keyed)
        for rule in _PROSE_RULES:
            if rule.gate in present:
                s = self._outside_markers(s, functools.partial(self._apply, rule))
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

    def _apply(self, rule: _Rule, s: str) -> str:
        hay, pattern = s, rule.pattern
        if rule.fold:
            hay = self._lowered.get(s) or self._lowered.setdefault(s, s.lower())
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
            out += [s[done:start], _mark(rule.kind)]
            done = end
            self.counts[rule.kind] += 1
        return "".join(out) + s[done:] if out else s

    def _custom_repl(self, m: re.Match[str]) -> str:
        group = 1 if m.re.groups else 0
        if m.start(group) < 0 or m.start(group) == m.end(group):
            return m.group(0)
        self.counts["custom"] += 1
        s = m.string
        return s[m.start() : m.start(group)] + _mark("custom") + s[m.end(group) : m.end()]

    def _keyed(self, s: str) -> str:
        """Redact values whose key names a secret, scanning outwards from each secret word."""
        out: list[str] = []
        done = 0  # everything before this offset is already in `out`
        scanned = 0  # names before this offset were already looked at
        for hit in _keyword_hits(s):
            if hit < scanned:
                continue
            start = end = hit
            while start > done and s[start - 1] in _NAME_CHARS:
                start -= 1
            while end < len(s) and s[end] in _NAME_CHARS:
                end += 1
            scanned = end
            name = s[start:end].lstrip(".-")
            strength = _name_strength(name) if name else 0
            m = _SEP_VALUE.match(s, end) if strength else None
            if m is None:
                continue
            span = self._keyed_value(s, start, m, name, weak=strength < 2)
            if span is not None:
                out += [s[done : span[0]], _mark("keyed_secret")]
                done = scanned = max(scanned, span[1])
                self.counts["keyed_secret"] += 1
        return "".join(out) + s[done:] if out else s

    @staticmethod
    def _keyed_value(s: str, name_start: int, m: re.Match[str], name: str, *, weak: bool) -> tuple[int, int] | None:
        """The span to redact after `name` + separator, or None when the value is not a literal."""
        line_start = s.rfind("\n", 0, name_start) + 1
        lead = _LINE_LEAD.fullmatch(s, line_start, name_start) is not None
        env_style = lead and m.group("sep") == "=" and not m.group("cq")
        quoted = m.group("quoted")
        value = m.group("bare") if quoted is None else quoted
        if _placeholder(value) or (weak and not env_style and not _random_enough(value, 8)):
            return None
        if quoted is not None:
            code = "`" in m.group("vq") and _code_like(value, name)  # markdown `config.api_key`
            return None if code else (m.start("quoted"), m.end("quoted"))
        if not env_style and _code_like(value, name):
            return None
        yaml_line = lead and m.group("sep").strip() == ":"
        if not env_style and not yaml_line and _IDENTIFIER.fullmatch(value):
            return None  # `api_key = apiKeyValue`, "Credentials: via …": a variable or a word
        if lead and (env_style or m.group("sep").strip() == ":"):
            # a whole `.env` / YAML line: the value runs to the end of the line
            eol = s.find("\n", m.start("bare"))
            eol = len(s) if eol < 0 else eol
            if "`" in s[m.start("bare") : eol] and _IDENTIFIER.fullmatch(value):
                return None  # markdown prose: "- Credentials: via `context.credentials`"
            return m.start("bare"), len(s[:eol].rstrip())
        return m.start("bare"), m.end("bare")

    # -- structures ----------------------------------------------------------------------------

    def value(self, v: Any) -> Any:
        """A redacted copy of a JSON-like value: strings are redacted, and the whole value of a
        dict key that names a secret (`password`, `api_key`, `Authorization` …) is replaced."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {
                k: self._keyed_item(k, x) if isinstance(k, str) and secret_name(k) else self.value(x)
                for k, x in v.items()
            }
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.value(x) for x in v)
        return v

    def _keyed_item(self, key: str, v: Any) -> Any:
        if v is None or isinstance(v, bool) or v == "" or v == [] or v == {}:
            return v
        if isinstance(v, str) and (_placeholder(v) or _MARKER.fullmatch(v)):
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
        ids are kept). The input is not modified."""
        turns = [
            t.model_copy(update={"text": self.text(t.text), "arguments": self.value(t.arguments)}) for t in s.turns
        ]
        return s.model_copy(update={"turns": turns})
