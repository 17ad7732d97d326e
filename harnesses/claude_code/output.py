"""What `claude -p --output-format stream-json --verbose` prints, read into a `Run` (docs/agents.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from skillsleep.core.shared.records import Run, ToolCall, Usage
from skillsleep.harnesses import wire
from skillsleep.harnesses.claude_code.cli import WORDS
from skillsleep.harnesses.claude_code.wire import block_text, blocks, usage
from skillsleep.harnesses.failures import Failure, classify, explain

__all__ = ["Output", "parse_claude_output", "read_output"]


@dataclass
class Output:
    """What one run printed, as far as it got."""

    tool_calls: list[ToolCall] = field(default_factory=list)
    by_id: dict[str, ToolCall] = field(default_factory=dict)  # tool_use id → its call, to pair results
    usage_by_message: dict[str, Usage] = field(default_factory=dict)
    last_text: str = ""
    api_error_text: str = ""
    result: dict[str, Any] | None = None  # the final `result` record
    records: int = 0
    skipped: int = 0


def _records(stdout: str) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects in stdout (one per line, or one document for `--output-format json`),
    and how many non-empty lines were not JSON objects."""
    text = stdout.strip()
    if text[:1] in ("{", "["):
        try:
            whole = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(whole, dict):
                return [whole], 0
            if isinstance(whole, list):
                items = [v for v in whole if isinstance(v, dict)]
                return items, len(whole) - len(items)
    return wire.json_objects(text.splitlines())


def _content(message: Any) -> list[Any]:
    return (blocks(message.get("content")) if isinstance(message, dict) else None) or []


def _assistant(rec: dict[str, Any], out: Output) -> None:
    message = rec.get("message")
    texts = []
    for block in _content(message):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            if isinstance(block.get("id"), str) and block["id"] in out.by_id:
                continue  # the same block repeated (a split reply written twice)
            raw = block.get("input")
            call = ToolCall(
                name=str(block.get("name") or "?"),
                arguments=raw if isinstance(raw, dict) else ({} if raw is None else {"input": raw}),
            )
            out.tool_calls.append(call)
            if isinstance(block.get("id"), str):
                out.by_id[block["id"]] = call
    if texts:
        if rec.get("is_api_error_message") or rec.get("isApiErrorMessage"):
            out.api_error_text = "\n".join(texts)  # Claude Code's own error notice, not the model's words
        elif not rec.get("parent_tool_use_id"):  # a subagent's text is not the agent's answer
            out.last_text = "\n".join(texts)
    if isinstance(message, dict) and isinstance(message.get("usage"), dict):
        key = str(message.get("id") or f"#{out.records}")
        out.usage_by_message[key] = usage(message["usage"])  # split replies repeat usage: keep the last


def _user(rec: dict[str, Any], out: Output) -> None:
    for block in _content(rec.get("message")):
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        call = out.by_id.get(str(block.get("tool_use_id")))
        if call is None:
            continue
        text = block_text(block.get("content"))
        call.result = f"[error] {text}" if block.get("is_error") is True else text


def _error_detail(rec: dict[str, Any]) -> str:
    errors = rec.get("errors")
    parts = [str(e) for e in errors] if isinstance(errors, list) else []
    if isinstance(rec.get("result"), str) and rec["result"].strip():
        parts.insert(0, rec["result"].strip())
    return "; ".join(parts)[:500] or "no details"


def _result_error(rec: dict[str, Any], server: str) -> str | None:
    """The error a `result` record reports, worded as what to do; None for a success."""
    subtype = rec.get("subtype")
    if subtype == "success" and rec.get("is_error") is not True:
        return None
    detail = _error_detail(rec)
    status = rec.get("api_error_status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    if subtype == "error_max_turns":
        kind = Failure.TURN_LIMIT
    else:
        kind = classify(detail, status=status)
        if rec.get("api_error") == "connection_failed" and kind not in (Failure.AUTH, Failure.RATE_LIMIT):
            kind = Failure.CONNECT
        elif kind is Failure.OTHER and rec.get("api_error"):
            kind = Failure.SERVER
    if kind is Failure.MODEL and status is not None:
        detail = f"HTTP {status}: {detail}"
    elif kind is Failure.OTHER:
        detail = f"{subtype}: {detail}"
    return explain(kind, WORDS, detail, server=server)


def read_output(stdout: str) -> Output:
    """The records of one run's stdout, in order; a later `result` (a queued turn) supersedes one before."""
    records, skipped = _records(stdout)
    out = Output(skipped=skipped)
    for rec in records:
        out.records += 1
        kind = rec.get("type")
        if kind == "assistant":
            _assistant(rec, out)
        elif kind == "user":
            _user(rec, out)
        elif kind == "result":
            out.result = rec
        # system (init, permission_denied, …), stream_event and unknown types carry nothing we need
    return out


def parse_claude_output(stdout: str, *, server: str = "") -> Run:
    """The `Run` that `claude -p --output-format stream-json --verbose` (or `--output-format json`)
    printed. Pure: no I/O; `latency_s` and `exit_status` are left for the caller.

    Lines that are not JSON objects and unknown record types are skipped. The final text, usage
    and cost come from the last `result` record (usage summed over assistant messages when there
    is none); tool calls keep their order and get the text of their `tool_result` (prefixed
    `[error] ` when the tool failed). No `result` record (truncated or crashed output, or no JSON
    at all) gives an error Run; an error `result` gives an error Run saying what to do, whose
    `response` is what the model last said (not Claude Code's error notice). `server` (where the
    model server is, if known) is only used in those messages. Never raises."""
    return to_run(read_output(stdout), server)


def to_run(out: Output, server: str) -> Run:
    calls = out.tool_calls
    if out.result is None:
        total = sum(out.usage_by_message.values(), Usage())
        if out.records == 0:
            cut = "Claude Code printed no JSON output"
        else:
            cut = "Claude Code's output ended without a final `result` record (the run was cut off or crashed)"
        if out.api_error_text:
            cut += f"; its last message was: {out.api_error_text[:300]}"
        return Run(response=out.last_text, tool_calls=calls, usage=total, error=cut)
    rec = out.result
    text = rec.get("result")
    error = _result_error(rec, server)
    # an error result's `result` is Claude Code's error notice: the answer is what the model last said
    response = text if isinstance(text, str) and error is None else out.last_text
    total = usage(rec["usage"]) if isinstance(rec.get("usage"), dict) else sum(out.usage_by_message.values(), Usage())
    cost = rec.get("total_cost_usd")
    cost_usd = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0 else 0.0
    return Run(response=response, tool_calls=calls, usage=total, cost_usd=cost_usd, error=error)
