"""The fields of one Codex rollout record, read without raising: texts, tool outputs, ids."""

from __future__ import annotations

import json
import re
from typing import Any

from skillsleep.harnesses.codex.record import CodexItem

__all__ = [
    "arguments",
    "content_text",
    "error_text",
    "event_prompt",
    "mcp_failed",
    "nonzero",
    "strip_injected",
    "subagent",
    "text_of",
    "tool_output",
    "uuid_in",
]

_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.I)
_EXIT = re.compile(r"^\s*(?:Exit code|Process exited with code)\s*:?\s*(-?\d+)", re.M)
_WRAPPED = re.compile(r"^<([A-Za-z_][\w -]*)>.*</\1>$", re.S)  # a message that is one tag block
_SKILL_BLOCK = re.compile(r"<skill>\s*<name>\s*([^<\s]+)\s*</name>")  # a skill Codex injected
_IDE_REQUEST = "## My request for Codex:"  # IDE/Desktop builds prepend file context to the prompt


def text_of(value: Any) -> str:
    """`value` when it is a string, else ""."""
    return value if isinstance(value, str) else ""


def nonzero(code: Any) -> bool:
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def uuid_in(name: str) -> str | None:
    found = _UUID.findall(name)
    return found[-1].lower() if found else None


def content_text(content: Any) -> str:
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


def injected_skills(content: Any) -> list[str]:
    """The skills a response_item user message injects: Codex writes each skill it loads (a `$name`
    the user typed that names a skill) as one `<skill>\n<name>NAME</name>\n<path>…</path>…</skill>` block."""
    blocks = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    texts = [b if isinstance(b, str) else b.get("text") if isinstance(b, dict) else None for b in blocks]
    return [m.group(1) for t in texts if isinstance(t, str) and (m := _SKILL_BLOCK.match(t.strip()))]


def strip_injected(content: Any) -> str:
    """A response_item user message without its injected blocks (AGENTS.md, environment...)."""
    blocks = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    texts = [b if isinstance(b, str) else b.get("text") if isinstance(b, dict) else None for b in blocks]
    kept = [t for t in texts if isinstance(t, str) and t.strip() and not _is_injected(t)]
    return "\n".join(kept).strip()


def event_prompt(message: Any) -> str:
    text = text_of(message)
    if _IDE_REQUEST in text:
        text = text.split(_IDE_REQUEST, 1)[1]
    return "" if _is_injected(text) else text.strip()


def arguments(raw: Any) -> dict[str, Any]:
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


def tool_output(output: Any) -> tuple[str, int | None]:
    """Text of a tool output and the exit code it reports, if any."""
    if isinstance(output, dict):
        text = text_of(output.get("text")) or text_of(output.get("output")) or text_of(output.get("content"))
        meta = output.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else output.get("exit_code")
        return text, code if isinstance(code, int) else None
    if isinstance(output, list):
        return content_text(output), None
    text = text_of(output)
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and ("output" in value or "metadata" in value):
            return tool_output(value)
    found = _EXIT.search(text[:2000])
    return text, int(found.group(1)) if found else None


def mcp_failed(result: Any) -> bool:
    if not isinstance(result, dict):
        return False
    if "Err" in result:
        return True
    ok = result.get("Ok", result)
    return isinstance(ok, dict) and ok.get("isError") is True


def error_text(kind: str, p: CodexItem) -> str:
    if kind == "turn_aborted":
        return f"turn aborted: {text_of(p.reason) or 'unknown reason'}"
    err = p.error
    message = text_of(p.message) or (text_of(err.get("message")) if isinstance(err, dict) else text_of(err))
    return message or kind


def subagent(meta: CodexItem) -> tuple[bool, str | None]:
    """(is a subagent, parent thread id) from `session_meta.source` / `parent_thread_id`."""
    source = meta.source
    sub = source.get("subagent") if isinstance(source, dict) else None
    sidechain = sub is not None or (isinstance(source, str) and source.startswith("subagent"))
    parent = text_of(meta.parent_thread_id) or None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    if isinstance(spawn, dict) and text_of(spawn.get("parent_thread_id")):
        parent = spawn["parent_thread_id"]
    return sidechain, parent
