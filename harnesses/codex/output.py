"""What `codex exec --json` prints, read into a `Run` (docs/agents.md, "Codex")."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from typing import Any

from skillsleep.core.shared.records import Run, ToolCall, Usage
from skillsleep.harnesses import wire
from skillsleep.harnesses.codex.cli import WORDS
from skillsleep.harnesses.codex.wire import usage
from skillsleep.harnesses.failures import classify, explain

__all__ = ["Events", "parse_codex_output", "read_events", "to_run"]


@dataclass
class Events:
    """What one `codex exec --json` run printed: its items (merged by id, in the order they
    started), the turn's usage and how the turn ended."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finished: bool = False
    failed: bool = False
    error: str = ""  # the failed turn's message
    last_error_event: str = ""  # `error` events come for retries too: only the last one counts
    events: int = 0
    skipped: int = 0

    @property
    def complete(self) -> bool:
        return self.finished or self.failed


def read_events(stdout: str) -> Events:
    """The events of stdout; lines that are not JSON objects are counted, unknown events skipped."""
    records, skipped = wire.json_objects(stdout.splitlines())
    out = Events(events=len(records), skipped=skipped)
    for event in records:
        kind = event.get("type")
        if kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                key = str(item.get("id") or f"#{len(out.order)}")
                if key not in out.items:
                    out.order.append(key)
                out.items[key] = {**out.items.get(key, {}), **item, "_completed": kind == "item.completed"}
        elif kind == "turn.completed":
            out.finished = True
            out.usage = out.usage + usage(event.get("usage"))
        elif kind == "turn.failed":
            out.failed = True
            err = event.get("error")
            out.error = str(err.get("message") if isinstance(err, dict) else err or "no message")
        elif kind == "error":
            out.last_error_event = str(event.get("message") or "")
    return out


def _shell_body(command: str) -> str:
    """`/bin/bash -lc 'echo hi'` → `echo hi` (what the model asked to run); anything else as is."""
    try:
        parts = shlex.split(command)
    except ValueError:
        return command
    if len(parts) == 3 and os.path.basename(parts[0]) in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
        return parts[2]
    return command


def _command_call(item: dict[str, Any], done: bool) -> ToolCall:
    result = None
    if done:
        result = str(item.get("aggregated_output") or "")
        code = item.get("exit_code")
        if isinstance(code, int) and code != 0:
            result += f"\n[exit code {code}]"
        elif item.get("status") not in ("completed",):
            result += f"\n[{item.get('status')}]"
    return ToolCall(name="exec_command", arguments={"cmd": _shell_body(str(item.get("command") or ""))}, result=result)


def _mcp_call(item: dict[str, Any]) -> ToolCall:
    args = item.get("arguments")
    outcome: str | None = None
    if isinstance(item.get("error"), dict):
        outcome = f"error: {item['error'].get('message', '')}"
    elif item.get("result") is not None:
        outcome = json.dumps(item["result"], ensure_ascii=False)
    return ToolCall(
        name=f"mcp__{item.get('server', '')}__{item.get('tool', '')}",
        arguments=args if isinstance(args, dict) else {"arguments": args},
        result=outcome,
    )


def _tool_call(item: dict[str, Any]) -> ToolCall | None:
    """A tool item of `codex exec --json` as a ToolCall (None for messages, reasoning, errors…).

    Names follow Codex's own tool names (`exec_command`, `apply_patch`, `web_search`,
    `update_plan`, `mcp__<server>__<tool>`), as the transcripts do."""
    kind = item.get("type")
    done = item.get("status") not in (None, "in_progress")
    if kind == "command_execution":
        return _command_call(item, done)
    if kind == "file_change":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        return ToolCall(
            name="apply_patch", arguments={"changes": changes}, result=str(item.get("status")) if done else None
        )
    if kind == "mcp_tool_call":
        return _mcp_call(item)
    if kind == "web_search":
        return ToolCall(name="web_search", arguments={"query": str(item.get("query") or "")})
    if kind == "todo_list":
        return ToolCall(name="update_plan", arguments={"items": item.get("items") or []})
    if kind == "collab_tool_call":
        return ToolCall(
            name=str(item.get("tool") or "collab_tool_call"),
            arguments={k: v for k, v in item.items() if k not in ("id", "type", "tool", "status")},
        )
    return None


def _explained(message: str, server: str) -> str:
    return explain(classify(message), WORDS, message, server=server)


def to_run(out: Events, server: str = "") -> Run:
    """The episode: the last completed agent message, the tool items, the turn's usage, and an
    error when the turn failed or the output ends before the turn did (`server`: for messages)."""
    response = ""
    tool_calls: list[ToolCall] = []
    for key in out.order:
        item = out.items[key]
        if item.get("type") == "agent_message" and item["_completed"]:
            response = str(item.get("text") or "")
        elif (call := _tool_call(item)) is not None:
            tool_calls.append(call)
    run = Run(response=response, tool_calls=tool_calls, usage=out.usage, cost_usd=0.0)
    if out.failed:
        run.error = _explained(out.error, server)
    elif not out.finished:
        what = (
            f"last error: {_explained(out.last_error_event, server)}"
            if out.last_error_event
            else f"{out.events} events, {out.skipped} unreadable lines"
        )
        run.error = (
            f"Codex output ended before the turn finished ({what}); rerun the task with `codex exec` "
            f"in its folder to see why"
        )
    return run


def parse_codex_output(stdout: str, *, server: str = "") -> Run:
    """The `Run` in `codex exec --json` stdout: the last agent message, every tool item (in the
    order they started, with their results), the usage of the turn, and an error when the turn
    failed or the output ends before the turn did. Lines that are not JSON objects and unknown
    events are skipped; this never raises. `latency_s` and `exit_status` are the caller's."""
    return to_run(read_events(stdout), server)
