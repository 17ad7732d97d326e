"""Why a replay failed, and what to do about it: one table for every agent CLI.

A failed episode is a `Run.error` a person (or the optimizer) can act on. The kinds come from two
places: what the agent's output says (`classify` reads its error text and HTTP status) and what
the process did (killed at the timeout, exited without its final record, exited non-zero after
it). `explain` words a kind with the agent's own facts (`Wording`); no agent rewords the table.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

__all__ = ["Failure", "Wording", "classify", "exited", "explain"]


class Failure(StrEnum):
    AUTH = "auth"  # the provider refused the credentials (401/403, "not logged in", …)
    MISSING_KEY = "missing_key"  # the agent looked for a key variable that is not set
    RATE_LIMIT = "rate_limit"  # 429, quotas
    CONNECT = "connect"  # no answer from the model server at all
    CONTEXT = "context"  # the prompt does not fit the model
    SERVER = "server"  # 5xx, overloaded
    MODEL = "model"  # another refusal of the request: usually the model name
    TURN_LIMIT = "turn_limit"  # the agent stopped at its own turn limit
    TIMEOUT = "timeout"  # the agent stopped at its own deadline
    OTHER = "other"
    KILLED = "killed"  # the process group was killed at timeout_s
    NO_RESULT = "no_result"  # the output ends before the agent's final record
    EXIT = "exit"  # a complete output, but a non-zero exit


class Wording(BaseModel):
    """One agent's facts that the table's messages name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # how messages call the agent: "Claude Code"
    harness: str  # its harness name, for "… in the <harness> harness settings"
    check: str  # what to try by hand: "check that `claude -p hello` works in this environment"
    login: str  # how to give it credentials
    provider: str  # where else its model server is configured (besides `base_url`)
    final: str  # what a complete output ends with: "a final result"
    install_hint: str  # how to (re)install the CLI
    lean: str = ""  # how to make its prompt smaller, for a context overflow (", and …")
    exit_word: str = "status"  # "exited with status 3"
    seconds: str = "{:g} s"  # how a timeout reads


_TABLE: dict[Failure, str] = {
    Failure.AUTH: "{name} could not authenticate ({detail}): {login}; with `base_url` set, put the server's key in "
    "the environment variable named by `api_key_env`.",
    Failure.MISSING_KEY: "{name} did not find the key it needs ({detail}); set that variable in the environment "
    "skillsleep runs in (`api_key_env` names it).",
    Failure.RATE_LIMIT: "the model server{at} rate-limited {name} ({detail}); lower `concurrency` in the {harness} "
    "harness settings or try again later.",
    Failure.CONNECT: "{name} could not reach the model server{at} ({detail}): the model server did not answer; start "
    "the server, or fix `base_url` (or {provider}).",
    Failure.CONTEXT: "{name}'s prompt does not fit the model's context ({detail}); use a model or server with a "
    "larger context (llama.cpp: --ctx-size 16384){lean}.",
    Failure.SERVER: "the model server{at} failed to answer ({detail}); check the server and its logs, then run again.",
    Failure.MODEL: "the model server{at} rejected {name}'s request ({detail}); check `target_model` and `base_url` "
    "in the {harness} harness settings.",
    Failure.TURN_LIMIT: "{name} stopped at its turn limit before finishing ({detail}); raise `max_turns` in the "
    "{harness} harness settings, or make the task smaller.",
    Failure.TIMEOUT: "{name} timed out before finishing ({detail}); raise timeout_s, or check that the model "
    "server{at} answers.",
    Failure.OTHER: "{name} reported an error ({detail}); {check}, and look at `target_model` / `base_url` in the "
    "{harness} harness settings.",
    Failure.KILLED: "{name} did not finish within {seconds} (timed out) and its process group was killed; raise "
    "timeout_s, or check that {where} answers.",
    Failure.NO_RESULT: "{name} {exited} without {final} ({detail}); {check}, or reinstall it: {install_hint}",
    Failure.EXIT: "{name} {exited} ({detail}); {check}.",
}

_MARKERS: dict[Failure, tuple[str, ...]] = {
    Failure.AUTH: (
        "invalid api key", "not logged in", "login", "authentication", "unauthorized", "forbidden", "oauth token",
        "x-api-key", "api key", "apikey", "invalid key", "credential", "auth profile",
    ),
    Failure.MISSING_KEY: ("missing environment variable",),
    Failure.RATE_LIMIT: ("rate limit", "rate_limit", "too many requests", "usage limit", "quota"),
    Failure.CONNECT: (
        "connection refused", "econnrefused", "unable to connect", "fetch failed", "enotfound", "connection error",
        "connection failed", "econnreset", "socket hang up", "network", "unreachable", "getaddrinfo",
        "error sending request", "stream disconnected", "name does not resolve", "dns",
    ),
    Failure.CONTEXT: (
        "context size", "context length", "context window", "maximum context", "context_length_exceeded",
        "context overflow",
    ),
    Failure.SERVER: ("high demand", "overloaded"),
}  # fmt: skip
_CODES = {Failure.AUTH: re.compile(r"\b40[13]\b"), Failure.RATE_LIMIT: re.compile(r"\b429\b")}
_SERVER_CODE = re.compile(r"\b5\d\d\b")
_MODEL_REFUSED = ("not found", "does not exist", "not supported")


def classify(detail: str, *, status: int | None = None) -> Failure:
    """The kind of an error the agent reported: `detail` is its text, `status` the HTTP status it
    names (when its output has one). The first kind that fits wins, in the order of `Failure`;
    a connection failure needs no status (a status means the server answered)."""
    low = detail.lower()

    def said(kind: Failure) -> bool:
        code = _CODES.get(kind)
        return any(m in low for m in _MARKERS.get(kind, ())) or bool(code and code.search(low))

    if status in (401, 403) or said(Failure.AUTH):
        return Failure.AUTH
    if said(Failure.MISSING_KEY):
        return Failure.MISSING_KEY
    if status == 429 or said(Failure.RATE_LIMIT):
        return Failure.RATE_LIMIT
    if status is None and said(Failure.CONNECT):
        return Failure.CONNECT
    if said(Failure.CONTEXT):
        return Failure.CONTEXT
    if (status is not None and status >= 500) or said(Failure.SERVER) or _SERVER_CODE.search(low):
        return Failure.SERVER
    if status is not None or ("model" in low and any(m in low for m in _MODEL_REFUSED)):
        return Failure.MODEL
    return Failure.OTHER


def exited(returncode: int | None, words: Wording) -> str:
    """How the process ended, in words: "exited with status 3", "was killed by signal 9"."""
    if returncode is not None and returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with {words.exit_word} {returncode}"


def explain(
    kind: Failure,
    words: Wording,
    detail: str = "",
    *,
    server: str = "",
    timeout_s: float = 0.0,
    returncode: int | None = None,
) -> str:
    """The message of `kind` for the agent of `words`. `server` is the model server's URL when the
    replay chose one (`base_url`), `detail` what the agent (or its stderr) said."""
    facts = words.model_dump() | {
        "detail": detail,
        "at": f" at {server}" if server else "",
        "where": f"the model server at {server}" if server else "the agent's model provider",
        "seconds": words.seconds.format(timeout_s),
        "exited": exited(returncode, words),
    }
    return _TABLE[kind].format(**facts)
