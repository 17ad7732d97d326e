"""Names that say their value is a secret: `DB_PASSWORD`, `apiKey`, `x-api-key`, `client_secret`."""

from __future__ import annotations

import functools
import re

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
        "account",
        "shared",
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
# words that end in a secret word and name no secret: `tokenizer`, `io.jsonwebtoken` (a library)
_NOT_SECRET_STEMS = ("tokeniz", "jsonwebtoken")
_PUBLIC = frozenset(["public", "publishable", "pub"])  # a public key or token is meant to be seen
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
    return name_strength(name) > 0


@functools.lru_cache(maxsize=4096)
def name_strength(name: str) -> int:
    """2: the name says secret (`password`); 1: it may (`auth`, `pass`, `private`); 0: it does not."""
    if name.upper() in _NOT_SECRET_NAMES:
        return 0
    if name.upper().startswith("TF_TOKEN_"):  # Terraform's per-host token variables: TF_TOKEN_app_terraform_io
        return 2
    segs = [s.lower() for s in _SEGMENT.findall(name)]
    if not segs or segs[-1] in _BENIGN_LAST or not _PUBLIC.isdisjoint(segs):
        return 0
    if segs[-1] == "pat" and len(segs) > 1:  # GITHUB_PAT: a personal access token
        return 2
    strength = 0
    for i, seg in enumerate(segs):
        if not all(t in _TRAILING_OK or t.isdigit() for t in segs[i + 1 :]):
            continue
        if seg in _SECRET_WORDS or (seg.endswith(_SECRET_SUFFIXES) and not seg.startswith(_NOT_SECRET_STEMS)):
            return 2
        if seg == "key" and i > 0 and segs[i - 1] in _KEY_QUALIFIERS:
            return 2
        if seg in _WEAK_WORDS:
            strength = 1
    return strength
