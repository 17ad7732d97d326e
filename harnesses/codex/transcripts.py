"""Codex CLI rollout transcripts: `${CODEX_HOME}/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`.

One rollout file is one session. Each line is `{timestamp, [ordinal], type, payload}`; records
are keyed on `type` (never on position) and unknown ones are skipped and counted. Versions drift:

- prompts are `event_msg user_message` (≤ 0.1xx) or `event_msg item_completed{UserMessage}`
  (newest). `response_item` user messages carry injected AGENTS.md / `<environment_context>` /
  `<skill>` blocks, so they are prompts only in builds that write no `event_msg` at all, and
  then with the injected blocks stripped;
- assistant text is written twice or three times (`response_item` message, `agent_message` /
  `item_completed{AgentMessage}`, `task_complete.last_agent_message`): copies are paired up per
  user turn, so a text said twice on purpose still appears twice;
- tool outputs report failure in their text ("Exit code: 1", "Process exited with code 1"), in
  JSON metadata, or in a separate `exec_command_end` / `item_completed{CommandExecution}` /
  `patch_apply_end` / `mcp_tool_call_end` event (before or after the output);
- usage is the sum of `token_count.info.last_token_usage`, skipping events that repeat the
  previous cumulative total (Codex emits many twice). On real rollouts this equals the final
  `total_token_usage`, and unlike it the sum is additive over incremental reads. Codex follows
  the OpenAI convention: `input_tokens` includes `cached_input_tokens`, `output_tokens` includes
  `reasoning_output_tokens` (so reasoning is not added again).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from skillsleep.core.discovery import Found, Parts, walk
from skillsleep.core.jsonl import Line, Reader
from skillsleep.core.records import Usage
from skillsleep.core.session import ParseResult, Session, Turn, utc

__all__ = ["codex_session_files", "parse_codex"]

_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.I)
_EXIT = re.compile(r"^\s*(?:Exit code|Process exited with code)\s*:?\s*(-?\d+)", re.M)
_WRAPPED = re.compile(r"^<([A-Za-z_][\w -]*)>.*</\1>$", re.S)  # a message that is one tag block
_IDE_REQUEST = "## My request for Codex:"  # IDE/Desktop builds prepend file context to the prompt

_TOP_META = frozenset({"world_state", "compacted", "token_usage_record", "inter_agent_communication_metadata"})
_BARE_ITEMS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "reasoning",
    }
)
_IGNORED_ITEMS = frozenset(
    {
        "reasoning",
        "ghost_snapshot",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        "agent_message",
        "compaction",
        "compaction_summary",
    }
)
_IGNORED_EVENTS = frozenset(
    {
        "task_started",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "agent_reasoning_delta",
        "agent_message_delta",
        "agent_message_content_delta",
        "reasoning_content_delta",
        "reasoning_raw_content_delta",
        "exec_command_begin",
        "exec_command_output_delta",
        "terminal_interaction",
        "patch_apply_begin",
        "mcp_tool_call_begin",
        "mcp_startup_update",
        "mcp_startup_complete",
        "web_search_begin",
        "web_search_end",
        "thread_settings_applied",
        "context_compacted",
        "entered_review_mode",
        "exited_review_mode",
        "turn_diff",
        "plan_update",
        "get_history_entry_response",
        "background_event",
        "stream_error",
        "warning",
        "session_configured",
        "shutdown_complete",
        "sub_agent_activity",
        "image_generation_begin",
        "image_generation_end",
        "thread_goal_updated",
        "thread_name_updated",
        "guardian_assessment",
        "view_image_tool_call",
        "dynamic_tool_call_request",
        "dynamic_tool_call_response",
        "undo_started",
        "undo_completed",
        "item_started",
        "turn.started",
        "turn.completed",
        "thread.started",
        "list_custom_prompts_response",
        "mcp_list_tools_response",
        "raw_response_item",
        "exec_approval_request",
        "apply_patch_approval_request",
        "collab_agent_spawn_begin",
        "collab_agent_spawn_end",
        "collab_waiting_begin",
        "collab_waiting_end",
        "collab_close_begin",
        "collab_close_end",
        "collab_agent_interaction_begin",
        "collab_agent_interaction_end",
        "token_usage_record",
    }
)


def parse_codex(data: bytes, *, source: str, base_offset: int = 0) -> ParseResult:
    """The session in one rollout's bytes (`data` starts at `base_offset` in the file `source`).

    Never raises for bad input. A half-written last line is left unread: `bytes_read` counts the
    bytes of `data` up to the end of the last complete line, so the next read starts at
    `base_offset + bytes_read`. A continuation chunk has no `session_meta`; its id then comes from the file
    name. Returns no session when no Codex record was recognised.
    """
    reader = Reader(data, base_offset=base_offset)
    rollout = _Rollout(source)
    for line in reader.records():
        rollout.feed(line)
    skipped = Counter(reader.skipped) + rollout.skipped
    sessions = [rollout.session()] if rollout.recognised else []
    return ParseResult(sessions=sessions, skipped=skipped, bytes_read=reader.consumed - base_offset)


def codex_session_files(codex_home: Path) -> Found:
    """Rollout files under `codex_home`, each session once: a live `sessions/` copy wins over an
    `archived_sessions/` one, and of two copies in the same place the larger wins; with the
    folders that could not be read and the entries that are no transcript file."""
    archive = codex_home / "archived_sessions"
    found = walk(codex_home / "sessions", wanted=_is_rollout) + walk(archive, wanted=_is_rollout)
    best: dict[str, tuple[tuple[int, int], Path]] = {}
    for path in found.files:
        try:
            size = path.stat().st_size
        except OSError:
            continue  # gone since the walk: nothing to read
        key = _file_session_id(path)
        rank = (-path.is_relative_to(archive), size)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, path)
    return found.model_copy(update={"files": sorted(path for _, path in best.values())})


def _is_rollout(parts: Parts) -> bool:
    return parts[-1].startswith("rollout-") and parts[-1].endswith(".jsonl")


# --- one rollout ----------------------------------------------------------------------------


@dataclass
class _Rollout:
    """Accumulates one rollout's records; `session()` builds the result."""

    source: str
    skipped: Counter[str] = field(default_factory=Counter)
    recognised: bool = False
    meta: dict[str, Any] | None = None
    project: str | None = None
    models: list[str] = field(default_factory=list)
    model: str | None = None
    times: list[datetime] = field(default_factory=list)
    byte_start: int | None = None
    byte_end: int = 0
    turns: list[Turn] = field(default_factory=list)
    item_prompts: list[Turn] = field(default_factory=list)  # response_item user messages
    saw_event_msg: bool = False
    tool_names: dict[str, str] = field(default_factory=dict)
    failed_calls: set[str] = field(default_factory=set)
    copies: dict[str, Counter[str]] = field(default_factory=dict)  # form -> text -> count, per turn
    usage: Usage = field(default_factory=Usage)
    last_total: dict[str, Any] | None = None

    def feed(self, line: Line) -> None:
        rec = line.value
        kind = rec.get("type")
        payload = rec.get("payload")
        if payload is None and isinstance(kind, str) and kind in _BARE_ITEMS:  # pre-envelope: bare items
            kind, payload = "response_item", rec
        elif kind is None and "id" in rec and "timestamp" in rec and ("instructions" in rec or "git" in rec):
            kind, payload = "session_meta", rec  # pre-envelope first line
        if not isinstance(kind, str):
            self.skipped["missing_type"] += 1
            return
        handler = _HANDLERS.get(kind)
        if handler is None and kind not in _TOP_META:
            self.skipped[f"unknown_type:{kind[:40]}"] += 1
            return
        if handler is not None and not isinstance(payload, dict):
            self.skipped["bad_payload"] += 1
            return
        self.recognised = True
        ts = utc(rec.get("timestamp")) if isinstance(rec.get("timestamp"), (str, int, float)) else None
        if ts is not None:
            self.times.append(ts)
        self.byte_start = line.offset if self.byte_start is None else self.byte_start
        self.byte_end = line.end
        if handler is not None:
            handler(self, payload, ts)

    # --- record types ---

    def on_session_meta(self, p: dict[str, Any], ts: datetime | None) -> None:
        file_id = _uuid_in(Path(self.source).name)
        if self.meta is None or (file_id and p.get("id") == file_id and self.meta.get("id") != file_id):
            self.meta = p
            if isinstance(p.get("cwd"), str):
                self.project = p["cwd"]
        if (t := utc(_str(p.get("timestamp")))) is not None:
            self.times.append(t)

    def on_turn_context(self, p: dict[str, Any], ts: datetime | None) -> None:
        if self.project is None and isinstance(p.get("cwd"), str):
            self.project = p["cwd"]
        self._see_model(p.get("model"))

    def on_response_item(self, p: dict[str, Any], ts: datetime | None) -> None:
        kind = _str(p.get("type"))
        if kind == "message":
            role, text = p.get("role"), _content_text(p.get("content"))
            if role == "assistant":
                self._assistant(text, "item", ts)
            elif role == "user":
                prompt = _strip_injected(p.get("content"))
                if prompt:
                    self.item_prompts.append(Turn(kind="user", text=prompt, ts=ts))
                    self.turns.append(self.item_prompts[-1])
            return
        if kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            self._tool_call(kind, p, ts)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._tool_result(p, ts)
        elif kind not in _IGNORED_ITEMS:
            self.skipped[f"unknown_item:{kind[:40]}" if kind else "missing_item_type"] += 1

    def on_event_msg(self, p: dict[str, Any], ts: datetime | None) -> None:
        self.saw_event_msg = True
        kind = _str(p.get("type"))
        if kind == "user_message":
            if p.get("kind") in (None, "plain"):  # other kinds are injected context (old builds)
                self._prompt(_event_prompt(p.get("message")), "user_message", ts)
        elif kind == "item_completed":
            self._item_completed(p.get("item"), ts)
        elif kind == "agent_message":
            self._assistant(_str(p.get("message")), "event", ts)
        elif kind == "task_complete":
            self._assistant(_str(p.get("last_agent_message")), "final", ts)
            if isinstance(p.get("error"), dict):
                self._error(_str(p["error"].get("message")) or "task failed", ts)
        elif kind in ("error", "turn.failed", "turn_aborted"):
            self._error(_error_text(kind, p), ts)
        elif kind == "token_count":
            self._token_count(p.get("info"))
        elif kind == "exec_command_end":
            self._mark_failed(p.get("call_id"), _nonzero(p.get("exit_code")))
        elif kind == "patch_apply_end":
            self._mark_failed(p.get("call_id"), p.get("success") is False)
        elif kind == "mcp_tool_call_end":
            self._mark_failed(p.get("call_id"), _mcp_failed(p.get("result")))
        elif kind not in _IGNORED_EVENTS:
            self.skipped[f"unknown_event:{kind[:40]}" if kind else "missing_event_type"] += 1
        if kind == "task_started":
            self.copies = {}

    # --- pieces ---

    def _item_completed(self, item: Any, ts: datetime | None) -> None:
        if not isinstance(item, dict):
            return
        kind = item.get("type")
        if kind == "UserMessage":
            self._prompt(_content_text(item.get("content")), "item_completed", ts)
        elif kind == "AgentMessage":
            self._assistant(_content_text(item.get("content")), "event", ts)
        elif kind == "CommandExecution":
            self._mark_failed(item.get("id"), _nonzero(item.get("exit_code")))
        elif kind == "McpToolCall":
            self._mark_failed(item.get("id"), item.get("status") == "failed" or _mcp_failed(item.get("result")))

    def _prompt(self, text: str, form: str, ts: datetime | None) -> None:
        if not text or self._is_copy("prompt:" + form, text, ("prompt:user_message", "prompt:item_completed")):
            return
        # a new user turn: assistant copies are paired afresh
        self.copies = {k: v for k, v in self.copies.items() if k.startswith("prompt:")}
        self.turns.append(Turn(kind="user", text=text, ts=ts))

    def _assistant(self, text: str, form: str, ts: datetime | None) -> None:
        if text.strip() and not self._is_copy(form, text, ("item", "event", "final")):
            self.turns.append(Turn(kind="assistant", text=text, ts=ts, model=self.model))

    def _is_copy(self, form: str, text: str, forms: tuple[str, ...]) -> bool:
        """Counts `text` in `form`; True when another form already carried this occurrence."""
        key = " ".join(text.split())
        mine = self.copies.setdefault(form, Counter())
        mine[key] += 1
        others = max((self.copies.get(f, Counter())[key] for f in forms if f != form), default=0)
        return mine[key] <= others

    def _tool_call(self, kind: str, p: dict[str, Any], ts: datetime | None) -> None:
        call_id = _str(p.get("call_id")) or _str(p.get("id")) or None
        if kind == "function_call":
            fn = p.get("function")
            name = _str(p.get("name")) or (_str(fn.get("name")) if isinstance(fn, dict) else "")
            raw = p.get("arguments")
            args, text = _arguments(raw), raw if isinstance(raw, str) else json.dumps(raw)
        elif kind == "custom_tool_call":
            name, text = _str(p.get("name")), _str(p.get("input"))
            args = {"input": text}
        else:
            name = "local_shell" if kind == "local_shell_call" else "web_search"
            action = p.get("action")
            args = action if isinstance(action, dict) else {}
            text = json.dumps(args)
        name = name or kind
        if call_id:
            self.tool_names[call_id] = name
        self.turns.append(
            Turn(kind="tool_call", text=text, tool=name, call_id=call_id, arguments=args, ts=ts, model=self.model)
        )

    def _tool_result(self, p: dict[str, Any], ts: datetime | None) -> None:
        call_id = _str(p.get("call_id")) or None
        text, exit_code = _output(p.get("output"))
        self.turns.append(
            Turn(
                kind="tool_result",
                text=text,
                tool=self.tool_names.get(call_id or ""),
                call_id=call_id,
                is_error=_nonzero(exit_code),
                ts=ts,
            )
        )

    def _mark_failed(self, call_id: Any, failed: bool) -> None:
        if failed and isinstance(call_id, str) and call_id:
            self.failed_calls.add(call_id)

    def _error(self, text: str, ts: datetime | None) -> None:
        self.turns.append(Turn(kind="error", text=text, is_error=True, ts=ts, model=self.model))

    def _token_count(self, info: Any) -> None:
        if not isinstance(info, dict):  # `info: null` before the first model reply
            return
        self._see_model(info.get("model"))
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if isinstance(total, dict):
            if total == self.last_total:  # the same event written twice
                return
            self.last_total = total
        if isinstance(last, dict):
            self.usage = self.usage + _usage(last)
        elif isinstance(total, dict):
            self.usage = self.usage + _usage(total)  # no per-call figure: counts as one call
        elif "prompt" in info or "completion" in info:  # 0.50-era {"prompt", "completion"}
            self.usage = self.usage + Usage(
                input_tokens=_int(info.get("prompt")), output_tokens=_int(info.get("completion"))
            )

    def _see_model(self, model: Any) -> None:
        if isinstance(model, str) and model.strip():
            self.model = model.strip()
            if self.model not in self.models:
                self.models.append(self.model)

    # --- result ---

    def session(self) -> Session:
        meta = self.meta or {}
        turns = self.turns
        if self.saw_event_msg:  # event_msg builds write the prompt as an event: items are context
            dropped = {id(t) for t in self.item_prompts}
            turns = [t for t in turns if id(t) not in dropped]
        for turn in turns:
            if turn.kind == "tool_result" and turn.call_id in self.failed_calls:
                turn.is_error = True
        sidechain, parent = _subagent(meta)
        version = meta.get("cli_version")
        return Session(
            harness="codex",
            id=_str(meta.get("id")) or _uuid_in(Path(self.source).name) or Path(self.source).stem or "unknown",
            project=self.project,
            started=min(self.times, default=None),
            ended=max(self.times, default=None),
            turns=turns,
            models=self.models,
            usage=self.usage,
            source=self.source,
            byte_start=self.byte_start or 0,
            byte_end=self.byte_end,
            sidechain=sidechain,
            parent_id=parent,
            agent_version=version if isinstance(version, str) else None,
        )


_HANDLERS = {
    "session_meta": _Rollout.on_session_meta,
    "turn_context": _Rollout.on_turn_context,
    "response_item": _Rollout.on_response_item,
    "event_msg": _Rollout.on_event_msg,
}


# --- small readers ----------------------------------------------------------------------------


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _nonzero(code: Any) -> bool:
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def _uuid_in(name: str) -> str | None:
    found = _UUID.findall(name)
    return found[-1].lower() if found else None


def _content_text(content: Any) -> str:
    """Text of a message's content: a string, or the text of its text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "\n".join(parts)


def _is_injected(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith("# AGENTS.md instructions") or bool(_WRAPPED.match(stripped))


def _strip_injected(content: Any) -> str:
    """A response_item user message without its injected blocks (AGENTS.md, environment...)."""
    blocks = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    texts = [b if isinstance(b, str) else b.get("text") if isinstance(b, dict) else None for b in blocks]
    kept = [t for t in texts if isinstance(t, str) and t.strip() and not _is_injected(t)]
    return "\n".join(kept).strip()


def _event_prompt(message: Any) -> str:
    text = _str(message)
    if _IDE_REQUEST in text:
        text = text.split(_IDE_REQUEST, 1)[1]
    return "" if _is_injected(text) else text.strip()


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"raw": raw}
        return value if isinstance(value, dict) else {"raw": raw}
    return {"raw": json.dumps(raw)}


def _output(output: Any) -> tuple[str, int | None]:
    """Text of a tool output and the exit code it reports, if any."""
    if isinstance(output, dict):
        text = _str(output.get("text")) or _str(output.get("output")) or _str(output.get("content"))
        meta = output.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else output.get("exit_code")
        return text, code if isinstance(code, int) else None
    if isinstance(output, list):
        return _content_text(output), None
    text = _str(output)
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and ("output" in value or "metadata" in value):
            return _output(value)
    found = _EXIT.search(text[:2000])
    return text, int(found.group(1)) if found else None


def _mcp_failed(result: Any) -> bool:
    if not isinstance(result, dict):
        return False
    if "Err" in result:
        return True
    ok = result.get("Ok", result)
    return isinstance(ok, dict) and ok.get("isError") is True


def _error_text(kind: str, p: dict[str, Any]) -> str:
    if kind == "turn_aborted":
        return f"turn aborted: {_str(p.get('reason')) or 'unknown reason'}"
    err = p.get("error")
    message = _str(p.get("message")) or (_str(err.get("message")) if isinstance(err, dict) else _str(err))
    return message or kind


def _usage(block: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=_int(block.get("input_tokens")),
        cached_tokens=_int(block.get("cached_input_tokens")),
        output_tokens=_int(block.get("output_tokens")),
    )


def _subagent(meta: dict[str, Any]) -> tuple[bool, str | None]:
    """(is a subagent, parent thread id) from `session_meta.source` / `parent_thread_id`."""
    source = meta.get("source")
    sub = source.get("subagent") if isinstance(source, dict) else None
    sidechain = sub is not None or (isinstance(source, str) and source.startswith("subagent"))
    parent = _str(meta.get("parent_thread_id")) or None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    if isinstance(spawn, dict) and _str(spawn.get("parent_thread_id")):
        parent = spawn["parent_thread_id"]
    return sidechain, parent


def _file_session_id(path: Path) -> str:
    """The session id of a rollout file: the uuid in its name, else its session_meta id."""
    found = _uuid_in(path.name)
    if found:
        return found
    try:
        with path.open("rb") as fh:
            first = fh.readline(4 * 1024 * 1024)
        value = json.loads(first)
    except (OSError, ValueError):
        return str(path)  # unreadable or not JSON: the path itself is the key (never merged)
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(payload, dict) and isinstance(payload.get("id"), str):
        return payload["id"]
    return str(path)
