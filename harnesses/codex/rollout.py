"""One Codex rollout's records, fed in order and built into a session (docs/agents.md, "Codex")."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from skillsleep.core.shared.jsonl import Typed
from skillsleep.core.shared.records import Usage
from skillsleep.core.shared.session import Session, Turn, utc
from skillsleep.harnesses.codex.cli import NAME
from skillsleep.harnesses.codex.items import (
    arguments,
    content_text,
    error_text,
    event_prompt,
    injected_skills,
    mcp_failed,
    nonzero,
    strip_injected,
    subagent,
    text_of,
    tool_output,
    uuid_in,
)
from skillsleep.harnesses.codex.record import CodexItem, CodexRecord
from skillsleep.harnesses.codex.wire import usage
from skillsleep.harnesses.skill_use import skills_read
from skillsleep.harnesses.wire import count

__all__ = ["Rollout"]

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


@dataclass
class Rollout:
    """Accumulates one rollout's records; `session()` builds the result."""

    source: str
    skipped: Counter[str] = field(default_factory=Counter)
    recognised: bool = False
    meta: CodexItem | None = None
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
    skills: list[str] = field(default_factory=list)  # from injected <skill> blocks, in order

    def feed(self, line: Typed[CodexRecord]) -> None:
        rec = line.value
        kind, payload = rec.type, rec.payload
        if payload is None and isinstance(kind, str) and kind in _BARE_ITEMS:  # pre-envelope: bare items
            kind, payload = "response_item", rec
        elif kind is None and _is_meta_line(rec):
            kind, payload = "session_meta", rec  # pre-envelope first line
        if not isinstance(kind, str):
            self.skipped["missing_type"] += 1
            return
        handler = _HANDLERS.get(kind)
        if handler is None and kind not in _TOP_META:
            self.skipped[f"unknown_type:{kind[:40]}"] += 1
            return
        if handler is not None and not isinstance(payload, CodexItem):
            self.skipped["bad_payload"] += 1
            return
        self.recognised = True
        ts = utc(rec.timestamp) if isinstance(rec.timestamp, (str, int, float)) else None
        if ts is not None:
            self.times.append(ts)
        self.byte_start = line.offset if self.byte_start is None else self.byte_start
        self.byte_end = line.end
        if handler is not None and isinstance(payload, CodexItem):  # checked above; for the type checker
            handler(self, payload, ts)

    # --- record types ---

    def on_session_meta(self, p: CodexItem, ts: datetime | None) -> None:
        file_id = uuid_in(Path(self.source).name)
        if self.meta is None or (file_id and p.id == file_id and self.meta.id != file_id):
            self.meta = p
            if isinstance(p.cwd, str):
                self.project = p.cwd
        if (t := utc(text_of(p.timestamp))) is not None:
            self.times.append(t)

    def on_turn_context(self, p: CodexItem, ts: datetime | None) -> None:
        if self.project is None and isinstance(p.cwd, str):
            self.project = p.cwd
        self._see_model(p.model)

    def on_response_item(self, p: CodexItem, ts: datetime | None) -> None:
        kind = text_of(p.type)
        if kind == "message":
            role, text = p.role, content_text(p.content)
            if role == "assistant":
                self._assistant(text, "item", ts)
            elif role == "user":
                prompt = strip_injected(p.content)
                self.skills += injected_skills(p.content)
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

    def on_event_msg(self, p: CodexItem, ts: datetime | None) -> None:
        self.saw_event_msg = True
        kind = text_of(p.type)
        if kind == "user_message":
            if p.kind in (None, "plain"):  # other kinds are injected context (old builds)
                self._prompt(event_prompt(p.message), "user_message", ts)
        elif kind == "item_completed":
            self._item_completed(p.item, ts)
        elif kind == "agent_message":
            self._assistant(text_of(p.message), "event", ts)
        elif kind == "task_complete":
            self._assistant(text_of(p.last_agent_message), "final", ts)
            if isinstance(p.error, dict):
                self._error(text_of(p.error.get("message")) or "task failed", ts)
        elif kind in ("error", "turn.failed", "turn_aborted"):
            self._error(error_text(kind, p), ts)
        elif kind == "token_count":
            self._token_count(p.info)
        elif kind == "exec_command_end":
            self._mark_failed(p.call_id, nonzero(p.exit_code))
        elif kind == "patch_apply_end":
            self._mark_failed(p.call_id, p.success is False)
        elif kind == "mcp_tool_call_end":
            self._mark_failed(p.call_id, mcp_failed(p.result))
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
            self._prompt(content_text(item.get("content")), "item_completed", ts)
        elif kind == "AgentMessage":
            self._assistant(content_text(item.get("content")), "event", ts)
        elif kind == "CommandExecution":
            self._mark_failed(item.get("id"), nonzero(item.get("exit_code")))
        elif kind == "McpToolCall":
            self._mark_failed(item.get("id"), item.get("status") == "failed" or mcp_failed(item.get("result")))

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

    def _tool_call(self, kind: str, p: CodexItem, ts: datetime | None) -> None:
        call_id = text_of(p.call_id) or text_of(p.id) or None
        if kind == "function_call":
            fn = p.function
            name = text_of(p.name) or (text_of(fn.get("name")) if isinstance(fn, dict) else "")
            raw = p.arguments
            args, text = arguments(raw), raw if isinstance(raw, str) else json.dumps(raw)
        elif kind == "custom_tool_call":
            name, text = text_of(p.name), text_of(p.input)
            args = {"input": text}
        else:
            name = "local_shell" if kind == "local_shell_call" else "web_search"
            action = p.action
            args = action if isinstance(action, dict) else {}
            text = json.dumps(args)
        name = name or kind
        if call_id:
            self.tool_names[call_id] = name
        self.turns.append(
            Turn(kind="tool_call", text=text, tool=name, call_id=call_id, arguments=args, ts=ts, model=self.model)
        )

    def _tool_result(self, p: CodexItem, ts: datetime | None) -> None:
        call_id = text_of(p.call_id) or None
        text, exit_code = tool_output(p.output)
        self.turns.append(
            Turn(
                kind="tool_result",
                text=text,
                tool=self.tool_names.get(call_id or ""),
                call_id=call_id,
                is_error=nonzero(exit_code),
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
            self.usage = self.usage + usage(last)
        elif isinstance(total, dict):
            self.usage = self.usage + usage(total)  # no per-call figure: counts as one call
        elif "prompt" in info or "completion" in info:  # 0.50-era {"prompt", "completion"}
            self.usage = self.usage + Usage(
                input_tokens=count(info.get("prompt")), output_tokens=count(info.get("completion"))
            )

    def _see_model(self, model: Any) -> None:
        if isinstance(model, str) and model.strip():
            self.model = model.strip()
            if self.model not in self.models:
                self.models.append(self.model)

    # --- result ---

    def session(self) -> Session:
        meta = self.meta or CodexItem()
        turns = self.turns
        if self.saw_event_msg:  # event_msg builds write the prompt as an event: items are context
            dropped = {id(t) for t in self.item_prompts}
            turns = [t for t in turns if id(t) not in dropped]
        for turn in turns:
            if turn.kind == "tool_result" and turn.call_id in self.failed_calls:
                turn.is_error = True
        sidechain, parent = subagent(meta)
        version = meta.cli_version
        session = Session(
            harness=NAME,
            id=text_of(meta.id) or uuid_in(Path(self.source).name) or Path(self.source).stem or "unknown",
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
        for name in self.skills:
            session.use_skill(name)
        skills_read(session)
        return session


def _is_meta_line(rec: CodexRecord) -> bool:
    """A pre-envelope first line: the session meta's own fields at the top, untyped."""
    unset = msgspec.UNSET
    return (
        rec.id is not unset and rec.timestamp is not unset and (rec.instructions is not unset or rec.git is not unset)
    )


_HANDLERS = {
    "session_meta": Rollout.on_session_meta,
    "turn_context": Rollout.on_turn_context,
    "response_item": Rollout.on_response_item,
    "event_msg": Rollout.on_event_msg,
}
