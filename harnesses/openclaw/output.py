"""What `openclaw agent exec --json` prints (one envelope) and what the run wrote into its own
state dir, read into a `Run` (docs/agents.md, "OpenClaw")."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skillsleep.core.shared.records import Run, ToolCall
from skillsleep.core.shared.session import Session
from skillsleep.harnesses.failures import Failure, classify, explain
from skillsleep.harnesses.openclaw.cli import WORDS
from skillsleep.harnesses.openclaw.store import read_openclaw_sqlite
from skillsleep.harnesses.openclaw.transcripts import openclaw_sources, parse_openclaw_jsonl
from skillsleep.harnesses.openclaw.wire import usage

__all__ = [
    "envelope_of",
    "last_assistant_text",
    "node_problem",
    "parse_openclaw_output",
    "read_run_sessions",
    "tool_calls_from_sessions",
]

NODE_HINT = (
    "OpenClaw needs Node.js 24.16 or newer (node:sqlite): put a Node 24.16+ `node` first on PATH "
    "(e.g. `nvm install 24`, or the bin folder of the npm package node@24) and run again"
)
_NODE_PROBLEM = re.compile(r"node:sqlite is unavailable|use 24\.16\+|requires Node(?:\.js)? (?:>= ?)?24", re.I)
_NODE_VERSION = re.compile(r"Node(?:\.js)? v?(\d+\.\d+\.\d+)")


def envelope_of(stdout: str) -> dict[str, Any] | None:
    """The `agent exec --json` envelope in stdout: the whole text as one JSON object, else the last
    JSON object starting on its own line that looks like an envelope (has `ok` or `status`)."""
    text = stdout.strip()
    if not text:
        return None
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return whole
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    for match in re.finditer(r"(?m)^[ \t]*\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.end() - 1)
        except ValueError:
            continue
        if isinstance(value, dict) and ("ok" in value or "status" in value):
            found = value
    return found


def _cost(env: Mapping[str, Any]) -> float:
    usage = env.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    value = cost.get("total") if isinstance(cost, dict) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        value = env.get("costUsd")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return 0.0


def _payload_texts(env: Mapping[str, Any], *, errors: bool) -> list[str]:
    payloads = env.get("payloads")
    out = []
    for p in payloads if isinstance(payloads, list) else []:
        if (
            isinstance(p, dict)
            and isinstance(p.get("text"), str)
            and p["text"].strip()
            and bool(p.get("isError")) == errors
        ):
            out.append(p["text"].strip())
    return out


def _error_message(env: Mapping[str, Any]) -> str:
    error = env.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"].strip():
        return str(error["message"]).strip()
    if isinstance(error, str) and error.strip():
        return error.strip()
    texts = _payload_texts(env, errors=True)
    return " ".join(texts) if texts else f"status {env.get('status')!r}, no details"


def node_problem(text: str) -> str | None:
    """The error to show when OpenClaw's output says its Node.js is too old, else None."""
    if not _NODE_PROBLEM.search(text):
        return None
    found = _NODE_VERSION.search(text)
    runs_on = f" (it ran on Node {found.group(1)})" if found else ""
    return f"{NODE_HINT}{runs_on}."


def _failure(env: Mapping[str, Any], server: str) -> str:
    """The error of a failed envelope, worded as what to do."""
    detail = _error_message(env)[:500]
    node = node_problem(detail)
    if node:
        return node
    kind = classify(detail)
    error = env.get("error")
    timed_out = env.get("status") == "timeout" or (isinstance(error, dict) and error.get("kind") == "timeout")
    if kind is Failure.OTHER and timed_out:
        kind = Failure.TIMEOUT
    return explain(kind, WORDS, detail, server=server)


def parse_openclaw_output(stdout: str, *, server: str = "") -> Run:
    """The `Run` that `openclaw agent exec --json` printed. Pure: no I/O; `latency_s` and
    `exit_status` are left for the caller.

    The response is `final` (else the non-error payload texts joined); usage from `usage`
    (input counts the whole prompt, cache reads included; `cached_tokens = cacheRead`); cost from
    `usage.cost.total` (else `costUsd`); tool calls are the names in `toolSummary.tools`, one
    each, without arguments (the envelope has no more; the harness replaces them with the
    transcript's). An envelope that is not ok (`ok: false` or `status` other than "ok") gives an
    error Run saying what to do; no envelope (garbage, truncated or empty output) gives an error
    Run too. `server` (where the model server is, if known) is only used in messages. Never raises."""
    env = envelope_of(stdout)
    if env is None:
        what = "printed nothing on stdout" if not stdout.strip() else "printed no JSON envelope on stdout"
        return Run(error=f"OpenClaw {what} (the run was cut off or crashed)")
    final = env.get("final")
    response = (
        final.strip() if isinstance(final, str) and final.strip() else "\n".join(_payload_texts(env, errors=False))
    )
    summary = env.get("toolSummary")
    tools = summary.get("tools") if isinstance(summary, dict) else None
    calls = [ToolCall(name=t) for t in tools if isinstance(t, str) and t] if isinstance(tools, list) else []
    ok = env.get("ok") is True and env.get("status", "ok") == "ok"
    error = None if ok else _failure(env, server)
    return Run(
        response=response if ok else (final.strip() if isinstance(final, str) else ""),
        tool_calls=calls,
        usage=usage(env.get("usage")),
        cost_usd=_cost(env),
        error=error,
    )


def tool_calls_from_sessions(sessions: list[Session]) -> list[ToolCall]:
    """Every tool call of the sessions in order, with its arguments and the text of its result
    (prefixed `[error] ` when the tool failed; None when no result came back)."""
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    for session in sessions:
        for turn in session.turns:
            if turn.kind == "tool_call":
                call = ToolCall(name=turn.tool or "?", arguments=dict(turn.arguments or {}))
                calls.append(call)
                if turn.call_id:
                    by_id[turn.call_id] = call
            elif turn.kind == "tool_result" and turn.call_id in by_id:
                by_id[turn.call_id].result = f"[error] {turn.text}" if turn.is_error else turn.text
    return calls


def read_run_sessions(state_dir: Path, session_id: str | None = None) -> list[Session]:
    """The sessions a run wrote into its own state dir (only `session_id`'s when it is found)."""
    sessions: list[Session] = []
    for source in openclaw_sources(state_dir).files:
        if source.suffix == ".sqlite":
            sessions += read_openclaw_sqlite(source)[0].sessions
        else:
            try:
                sessions += parse_openclaw_jsonl(source.read_bytes(), source=str(source)).sessions
            except OSError:
                continue
    wanted = [s for s in sessions if session_id and s.id == session_id]
    return wanted or sessions


def last_assistant_text(sessions: list[Session]) -> str:
    for session in reversed(sessions):
        for turn in reversed(session.turns):
            if turn.kind == "assistant" and turn.text:
                return turn.text
    return ""
