"""The token rules: provider-prefixed formats, headers, URLs with credentials, private keys, and
"the password is …" in prose. Each rule names the literals that every match contains (its gates);
`core/privacy/scan.py` finds which gates a text holds in one pass, and only those rules run. Where that
literal is one or two letters (`A`, `gh`, `SK`), found in almost any text, the gate is a regex of
the match's fixed start (`gh[pousr]_`) instead, so the rule runs only where a token can begin."""

from __future__ import annotations

import re

from skillsleep.core.privacy.secret_providers import PROVIDER_RULES
from skillsleep.core.privacy.secret_values import ALNUM, Rule, code_like, placeholder, random_enough, rule

# --- rules -------------------------------------------------------------------------------------------


def _pem_body(v: str) -> bool:
    return sum(c.isalnum() for c in v) >= 16


def _header_token(v: str) -> bool:
    """A token after `Authorization:`, not a scheme word left in front of one already redacted."""
    return not placeholder(v) and re.fullmatch(r"[A-Za-z-]+", v) is None


def not_placeholder(v: str) -> bool:
    return not placeholder(v)


def _random_letters(v: str) -> bool:
    """Random letters of both cases, not an identifier in camel case (`requiredCharacteristicTypes…`):
    a few capitals start its words, where a random draw holds about as many capitals as not."""
    upper = sum(c.isupper() for c in v)
    return 0.25 * len(v) <= upper <= 0.75 * len(v)


# what `curl -u user:PASSWORD` holds when it shows no password (gitleaks' curl-auth-user allowlist):
# a word that names the field, a variable (`$2`, `${{ … }}`), a `<placeholder>` or `[PLACEHOLDER]`
_CURL_WORDS = frozenset(["pass", "password", "passwd", "pwd", "test", "token", "secret", "changeit", "changeme"])


def _curl_password(v: str) -> bool:
    return not (
        placeholder(v)
        or v.lower() in _CURL_WORDS
        or v.startswith(("$", "<", "[", "{{"))
        or v.endswith((">", "]", "}}"))
        or len(set(v.lower())) < 3
    )


_B62 = "[A-Za-z0-9]"
_URLSAFE = "[A-Za-z0-9_-]"
_NONE: frozenset[str] = frozenset()

TOKEN_RULES: list[Rule] = [
    rule(
        "private_key",
        "-----BEGIN",
        r"[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"((?:[\s\S]{0,40000}?(?=-----END[ A-Z0-9]*PRIVATE KEY))"
        r"|[A-Za-z0-9+/=\s\\:,.()-]*)",  # a block cut off before its END line: redact the body we have
        group=1,
        boundary=_NONE,
        check=_pem_body,
    ),
    rule("anthropic_key", "sk-ant-", _URLSAFE + "{20,}", gate="sk-"),
    rule("openrouter_key", "sk-or-v1-", _B62 + "{32,}", gate="sk-"),
    rule("openai_key", "sk-", "(?:proj|svcacct|admin)-" + _URLSAFE + "{20,}"),
    rule("openai_key", "sk-", _B62 + "{20}T3BlbkFJ" + _B62 + "{20}"),
    rule("deepseek_key", "sk-", "[0-9a-f]{32}(?![A-Za-z0-9_-])"),
    rule("api_key", "sk-", _URLSAFE + "{20,}", check=lambda v: random_enough(v[3:], 20)),
    rule("google_api_key", "AIza", _URLSAFE + "{35}"),
    rule("google_oauth", "GOCSPX-", _URLSAFE + "{20,}"),
    rule("google_oauth", "ya29.", _URLSAFE + "{20,}"),
    rule("github_token", "gh", "[pousr]_" + _B62 + "{30,}", gate_regex="gh[pousr]_"),
    rule("github_token", "github_pat_", "[A-Za-z0-9_]{22,}"),
    rule(
        "gitlab_token",
        "gl",
        "(?:pat|ptt|dt|rt|soat|cbt)-" + _URLSAFE + r"{20,}(?:\.[0-9a-z]{2,})?",
        gate_regex="gl(?:pat|ptt|dt|rt|soat|cbt)-",
    ),
    rule("slack_webhook", "hooks.slack.com/", r"(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}"),
    # Slack's token types, as gitleaks' slack rules shape them: numeric parts after the prefix
    # (`xoxo-indieweb-1.jpg`, `xoxb-my-bot-token` are none)
    rule("slack_token", "xox", r"[bpe]-\d{8,14}-[A-Za-z0-9-]{10,}+(?![#*])"),
    rule("slack_token", "xox", r"[os]-\d+-\d+-\d+-[A-Za-z0-9]+"),
    rule("slack_token", "xox", r"[ar]-(?:\d-)?[A-Za-z0-9-]{8,}", check=lambda v: random_enough(v[5:], 8)),
    rule("slack_token", "xoxe", r"(?:\.xox[bp])?-\d-[A-Za-z0-9]{140,}", gate="xoxe"),
    rule("slack_token", "xapp-", r"\d-[A-Za-z0-9-]{10,}"),
    rule("stripe_key", "", "[sr]k_live_" + _B62 + "{10,}", gate="_live_"),
    rule("stripe_key", "", "[sr]k_test_" + _B62 + "{10,}", gate="_test_"),
    rule("stripe_key", "", "[sr]k_prod_" + _B62 + "{10,}", gate="_prod_"),
    rule("stripe_key", "whsec_", _B62 + "{20,}"),
    rule(
        "aws_access_key",
        "A",
        "(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|BIA|CCA)[A-Z0-9]{16}(?![A-Z0-9])",
        gate_regex="A(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|BIA|CCA)",
        check=lambda v: not v.endswith("EXAMPLE"),  # AWS's documented example key
    ),
    rule("huggingface_token", "hf_", _B62 + "{34}(?![A-Za-z0-9_])", check=lambda v: _random_letters(v[3:])),
    rule("npm_token", "npm_", _B62 + "{36}"),
    rule("pypi_token", "pypi-AgE", _URLSAFE + "{50,}"),
    rule("twilio_key", "SK", "[0-9a-f]{32}(?![A-Za-z0-9])", gate_regex="SK[0-9a-f]{8}"),
    rule("twilio_key", "AC", "[0-9a-f]{32}(?![A-Za-z0-9])", gate_regex="AC[0-9a-f]{8}"),
    rule("sendgrid_key", "SG.", r"[A-Za-z0-9_=-]{16,32}\.[A-Za-z0-9_=-]{30,64}"),
    rule("groq_key", "gsk_", _B62 + "{40,}"),
    rule("xai_key", "xai-", _B62 + "{40,}"),
    rule("replicate_key", "r8_", _B62 + "{30,}"),
    rule("digitalocean_token", "do", "[opr]_v1_[a-f0-9]{64}", gate="_v1_"),
    rule("shopify_token", "shp", "(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    rule("telegram_token", "", r"\d{5,16}:AA" + _URLSAFE + "{33}(?!" + _URLSAFE + ")", gate=":AA"),
    *PROVIDER_RULES,
    rule("jwt", "eyJ", _URLSAFE + r"{8,}\.eyJ" + _URLSAFE + r"{8,}\." + _URLSAFE + "*"),
    rule(
        "curl_password",
        "curl",
        # on the line of `curl` or one of the next 8 its trailing backslash continues; user and
        # password each bare or quoted (`-u 'jane:…'`, `--user "id":"…"`, `--user kevin:'…'`)
        r"\b(?:[^\n]*\\\n){0,8}?[^\n]*?[ \t](?:-u|--user)(?:=|[ \t]+)"
        r"(?:\"[^\"\s:]*\"|'[^'\s:]*'|[\"']?[^\s:\"']*):[\"']?([^\s\"']+)",
        group=1,
        check=_curl_password,
    ),
    rule(
        "url_password",
        "://",
        r"[^\s:/?#@\"'<>\[\]]*:([^\s/?#\"'<>]+)@",
        group=1,
        boundary=_NONE,
        check=not_placeholder,
    ),
    rule(
        "basic_auth",
        "authorization",
        r"[\"']?\s*[:=]\s*[\"']?basic\s+([a-z0-9+/=._~-]{6,})",
        gate="authorization",
        group=1,
        fold=True,
    ),
    rule(
        "bearer_token",
        "authorization",
        r"[\"']?\s*[:=]\s*[\"']?(?:[a-z][a-z0-9_-]{1,24}[ \t]+(?:[a-z_]{1,12}=)?)?([^\s\"',;\[{(\\<][^\s\"',;\\]{7,})",
        gate="authorization",
        group=1,
        check=_header_token,
        fold=True,
    ),
    rule("bearer_token", "bearer", r"\s+([a-z0-9._~+/-]+=*)", group=1, check=lambda v: random_enough(v, 12), fold=True),
    rule(
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
# Their gates: the word, its separator and the start of a value the check can accept (a bare value
# is 12 or more of `_BARE_TOKEN`'s characters), so "tokens" in prose runs no rule.
_EXPLICIT_GATE = r"s?(?:[ \t]*[:=][ \t]*|[ \t]+(?:is|was|to|would be|should be)[ \t]+)[\"'`]?[^\s\"'`<>\\]{6}"
_BARE_GATE = r"s?[ \t]+[\"'`]?[A-Za-z0-9_+=-]{12}"
_WORD_BOUNDARY = ALNUM | frozenset("_")
_BARE_TOKEN = re.compile(r"[A-Za-z0-9_+=-]{12,}")  # no dots or slashes: "tokens truncated…/a.ts:264" is not one


def _explicit_secret(v: str) -> bool:
    return not placeholder(v) and not code_like(v, "") and random_enough(v, 6)


def _bare_secret(v: str) -> bool:
    letters = sum(c.isalpha() for c in v)
    token_like = _BARE_TOKEN.fullmatch(v) is not None
    return token_like and _explicit_secret(v) and letters >= 2 and any(c.isdigit() for c in v)


def _prose_rules() -> list[tuple[Rule, str]]:
    """Each prose rule and its whole word (`api key`)."""
    words = _PROSE_WORDS.replace("api key", "api").replace("access key", "access").split()
    out = []
    for word in words:
        literal, rest = (word, "") if word not in ("api", "access") else (word, "[ ]key")
        for sep, check, gate in ((_EXPLICIT, _explicit_secret, _EXPLICIT_GATE), (_BARE, _bare_secret, _BARE_GATE)):
            prose = rule(
                "keyword_secret",
                literal,
                rest + sep,
                group=1,
                boundary=_WORD_BOUNDARY,
                check=check,
                fold=True,
                gate_regex="(?i)" + re.escape(literal) + rest + gate,
            )
            out.append((prose, literal + rest.replace("[ ]", " ")))
    return out


PROSE_RULES = [prose for prose, _ in _prose_rules()]
# The gate of each prose rule → its word. The rules run over lower-cased text (or case-insensitively),
# where K KELVIN SIGN is k, and long s, dotless i and İ match s and i; in a text holding one of those
# the gates (ASCII, case folded as ASCII) may miss a match, so there a prose rule runs wherever its
# word occurs.
PROSE_WORDS = {prose.gate: word for prose, word in _prose_rules()}
FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"  # İ, dotless i, long s, K KELVIN SIGN
