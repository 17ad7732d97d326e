"""A scripted model server for the real agent CLIs: OpenAI Responses, Anthropic messages, OpenAI chat.

The agents (Claude Code, Codex, OpenClaw) talk to it exactly as they would to a provider, with
streaming (SSE) or plain JSON answers. What it answers is decided by markers in the request:

    STUB_HANG                     in the last user text: never answer (timeout tests)
    STUB_FAIL                     in the last user text: answer HTTP 500
    STUB_TOOL: <command>          in the last user text: call the agent's shell tool with <command>
    STUB_CALL:<tool>:<json args>  in the last user text: call <tool> with those arguments
    `calls`                       a (regex, tool, arguments) whose regex the last user text matches:
                                  call that tool (a model that decides on its own to load a skill,
                                  with nothing in the prompt asking for it)
    $<skill>                      in the last user text, when the request lists that skill with a
                                  <location> (OpenClaw) and has a `read` tool: read the SKILL.md
                                  first, as a model following the skill listing would
    SKILL_SAYS: <word>            anywhere in the request (system prompt, skill files the agent
                                  injected, messages): the final answer is <word>
    otherwise                     the final answer is `reply` (default "hello")

A request that offers Claude Code's `StructuredOutput` tool (how `claude -p --json-schema` asks
for a typed reply) gets that tool called with the final answer parsed as JSON (an answer that is
not a JSON object is sent as text). `failures` holds HTTP statuses to answer the next model
requests with (429 carries `retry-after: 0`), one each; `delay_s` delays every model answer;
`peak` is the most model requests ever in flight at once. `rules` (the scripted backend's
`{"match", "reply"}` rules, compiled) decide the final answer instead, as that backend would: the first
rule found in the request's reply schema, its last user text or its instructions (a whole night with
the agent as the model and as the replay harness).

After a tool result comes back the server answers with the final text (`SKILL_SAYS` word or
`reply`) followed by " | tool said: <last line of the result>"; with `rules`, with the first rule
found in the request or in the result (a skill's SKILL.md the agent read, as OpenClaw loads one). Every request is recorded in
`seen` (path and parsed body), so a test can prove what reached the model.

Run standalone for recording fixtures: `python tests/agent_server.py PORT`.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHELL_TOOLS = {"Bash": "command", "exec_command": "cmd", "shell": "command", "exec": "command"}
USAGE_IN, USAGE_OUT = 120, 6
STRUCTURED = "StructuredOutput"  # Claude Code's tool for `--json-schema` replies
_ERRORS = {429: "rate_limit_error", 500: "api_error", 503: "overloaded_error", 401: "authentication_error"}
_TOOL = re.compile(r"STUB_TOOL:\s*(.+)")
_CALL = re.compile(r"STUB_CALL:([\w.-]+):(\{.*\})", re.S)
_MENTION = re.compile(r"\$([a-z0-9][a-z0-9-]*)")
_SAYS = re.compile(r"SKILL_SAYS:\s*([^\s\"'\\<]+)")


@dataclass
class Seen:
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)  # lower-cased names


@dataclass
class Plan:
    """What to answer: a final text, or one tool call."""

    text: str = ""
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    hang: bool = False
    fail: bool = False


def _texts(value: Any) -> list[str]:
    """Every string under `value` that sits in a text-like field (content, text, input, output…)."""
    out: list[str] = []
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for v in value:
            out.extend(_texts(v))
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in ("content", "text", "input", "output", "system", "instructions", "messages", "result"):
                out.extend(_texts(v))
    return out


def _last_user(body: dict[str, Any]) -> tuple[str, str | None]:
    """(text of the trailing user messages, tool result text if the last turn is a tool result).

    Agents add their own user-role messages next to the prompt (Codex injects a mentioned skill
    after it), so every user message since the last assistant turn counts as the prompt."""
    if "input" in body:  # Responses
        raw = body["input"]
        items = raw if isinstance(raw, list) else [{"role": "user", "content": raw}]
        last = items[-1] if items else {}
        if last.get("type") in ("function_call_output", "custom_tool_call_output"):
            out = last.get("output")
            return "", out if isinstance(out, str) else json.dumps(out)
    else:
        items = body.get("messages") or []
        for m in reversed(items):  # tool results since the last assistant turn (OpenClaw adds a user note after them)
            if m.get("role") == "assistant":
                break
            if m.get("role") == "tool":  # OpenAI chat
                return "", "\n".join(_texts(m.get("content")))
            content = m.get("content")
            if isinstance(content, list):
                results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                if results:
                    return "", "\n".join(_texts(results[-1].get("content")))
    trailing: list[dict[str, Any]] = []
    for item in reversed(items):
        if item.get("role") == "system":  # Claude Code 2.1.3xx sends its environment as a trailing system message
            continue
        if item.get("role") != "user":
            break
        trailing.insert(0, item)
    return "\n".join("\n".join(_texts(i.get("content"))) for i in trailing), None


def _tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            names.append(t.get("name") or (t.get("function") or {}).get("name") or "")
    return names


Rules = list[tuple[re.Pattern[str], str]]


def _schema_text(body: dict[str, Any]) -> str:
    """The reply schema a request asks for, as JSON text: Claude Code's StructuredOutput tool's input
    schema, or a Responses request's `text.format` schema (Codex's `--output-schema`); else ""."""
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("name") == STRUCTURED:
            return json.dumps(t.get("input_schema"))
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    return json.dumps(fmt.get("schema")) if isinstance(fmt, dict) and fmt.get("schema") else ""


def _system_text(body: dict[str, Any]) -> str:
    """A request's instructions: Anthropic's `system`, Responses' `instructions`, system/developer messages."""
    items = [m for m in (body.get("messages") or body.get("input") or []) if isinstance(m, dict)]
    parts = _texts(body.get("system")) + _texts(body.get("instructions"))
    parts += [t for m in items if m.get("role") in ("system", "developer") for t in _texts(m.get("content"))]
    return "\n".join(parts)


def ruled(body: dict[str, Any], user: str, rules: Rules) -> str | None:
    """The reply of the first rule (the scripted backend's format) found in the request's reply schema,
    its last user text or its instructions, as `ScriptedBackend` matches them; None when none is."""
    schema, system = _schema_text(body), _system_text(body)
    return next((r for rx, r in rules if rx.search(schema) or rx.search(user) or rx.search(system)), None)


Calls = list[tuple[re.Pattern[str], str, dict[str, Any]]]


def plan(body: dict[str, Any], reply: str, rules: Rules | None = None, calls: Calls | None = None) -> Plan:
    """Decide the answer to one request (see the module docstring)."""
    user, tool_result = _last_user(body)
    everything = "\n".join(_texts(body))
    says = _SAYS.findall(everything)
    final = says[-1] if says else reply
    if rules and tool_result is None:
        final = ruled(body, user, rules) or final
    if tool_result is not None and rules:  # the rules decide, the result in view (a SKILL.md OpenClaw read)
        return Plan(text=ruled(body, tool_result, rules) or final)
    if tool_result is not None:
        first = ([ln for ln in tool_result.splitlines() if ln.strip()] or [""])[-1].strip()[:200]
        return Plan(text=f"{final} | tool said: {first}")
    if "STUB_HANG" in user:
        return Plan(hang=True)
    if "STUB_FAIL" in user:
        return Plan(fail=True)
    for name in _MENTION.findall(user):
        listed = re.search(rf"<name>{re.escape(name)}</name>.*?<location>([^<]+)</location>", everything, re.S)
        if listed and "read" in _tool_names(body):
            return Plan(tool="read", arguments={"path": listed.group(1).strip()})
    if m := _CALL.search(user):
        return Plan(tool=m.group(1), arguments=json.loads(m.group(2)))
    for rx, tool, arguments in calls or []:
        if rx.search(user) and tool in _tool_names(body):
            return Plan(tool=tool, arguments=arguments)
    if STRUCTURED in _tool_names(body):
        try:
            data = json.loads(final)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return Plan(tool=STRUCTURED, arguments=data)
    if m := _TOOL.search(user):
        names = _tool_names(body)
        tool = next((n for n in SHELL_TOOLS if n in names), "Bash")
        return Plan(tool=tool, arguments={SHELL_TOOLS[tool]: m.group(1).strip()})
    return Plan(text=final)


# --- wire shapes ------------------------------------------------------------------------------


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out).encode()


def anthropic(body: dict[str, Any], p: Plan, n: int) -> tuple[str, bytes]:
    model = body.get("model", "stub-model")
    if p.tool:
        block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": p.tool, "input": p.arguments or {}}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": p.text}
        stop = "end_turn"
    usage = {
        "input_tokens": USAGE_IN,
        "output_tokens": USAGE_OUT,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    msg = {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return "application/json", json.dumps(msg).encode()
    start = {**msg, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    if p.tool:
        first = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(p.arguments or {})}
    else:
        first = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": p.text}
    return "text/event-stream", _sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": first}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": USAGE_OUT},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def responses(body: dict[str, Any], p: Plan, n: int) -> tuple[str, bytes]:
    model = body.get("model", "stub-model")
    if p.tool:
        item = {
            "type": "function_call",
            "id": f"fc_{n:04d}",
            "call_id": f"call_{n:04d}",
            "name": p.tool,
            "arguments": json.dumps(p.arguments or {}),
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{n:04d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": p.text, "annotations": []}],
        }
    usage = {
        "input_tokens": USAGE_IN,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": USAGE_OUT,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": USAGE_IN + USAGE_OUT,
    }
    resp = {
        "id": f"resp_{n:04d}",
        "object": "response",
        "model": model,
        "status": "completed",
        "output": [item],
        "usage": usage,
    }
    if not body.get("stream"):
        return "application/json", json.dumps(resp).encode()
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (
            "response.created",
            {"type": "response.created", "response": {**resp, "status": "in_progress", "output": [], "usage": None}},
        ),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
    ]
    if not p.tool:
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": p.text,
                },
            )
        )
    events += [
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": resp}),
    ]
    return "text/event-stream", _sse(events)


def chat(body: dict[str, Any], p: Plan, n: int) -> tuple[str, bytes]:
    model = body.get("model", "stub-model")
    usage = {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT, "total_tokens": USAGE_IN + USAGE_OUT}
    if p.tool:
        call = {
            "id": f"call_{n:04d}",
            "type": "function",
            "function": {"name": p.tool, "arguments": json.dumps(p.arguments or {})},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": p.text}
        finish = "stop"
    base = {"id": f"chatcmpl-{n:04d}", "created": 1, "model": model}
    if not body.get("stream"):
        full = {
            **base,
            "object": "chat.completion",
            "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        return "application/json", json.dumps(full).encode()
    chunk = {**base, "object": "chat.completion.chunk"}
    delta: dict[str, Any] = {"role": "assistant"}
    if p.tool:
        delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
    else:
        delta["content"] = p.text
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        (None, {**chunk, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return "text/event-stream", _sse(events)


class AgentServer:
    """The scripted server in a thread. `reply` is the default final answer."""

    def __init__(self, reply: str = "hello", port: int = 0, log_path: str | None = None) -> None:
        self.reply = reply
        self.rules: Rules = []  # (regex, reply) rules, as the scripted backend's: they decide the final answer
        self.calls: Calls = []  # (regex, tool, arguments): a prompt the regex matches gets that tool called
        self.log_path = log_path  # append every request as one JSON line (recording aid)
        self.seen: list[Seen] = []
        self.failures: list[int] = []  # statuses to answer the next model requests with, one each
        self.delay_s = 0.0  # how long each model answer takes
        self.in_flight = 0
        self.peak = 0  # the most model requests in flight at once
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> AgentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def requests_text(self) -> str:
        """Every text the agents sent, joined (to assert what reached the model)."""
        return "\n".join("\n".join(_texts(s.body)) for s in self.seen if isinstance(s.body, dict))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_HEAD(self) -> None:
                self._send(200, "application/json", b"")

            def do_GET(self) -> None:
                models = {
                    "object": "list",
                    "data": [
                        {
                            "id": "stub-model",
                            "object": "model",
                            "type": "model",
                            "display_name": "stub-model",
                            "created_at": "2026-01-01T00:00:00Z",
                        }
                    ],
                    "models": [{"name": "stub-model", "model": "stub-model"}],
                    "has_more": False,
                }
                self._send(200, "application/json", json.dumps(models).encode())

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, "application/json", b'{"error": {"message": "body is not JSON"}}')
                    return
                with server._lock:
                    server.seen.append(Seen(self.path, body, {k.lower(): v for k, v in self.headers.items()}))
                    if server.log_path:
                        with open(server.log_path, "a", encoding="utf-8") as log:
                            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
                    n = len(server.seen)
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/count_tokens"):
                    self._send(200, "application/json", json.dumps({"input_tokens": USAGE_IN}).encode())
                    return
                with server._lock:
                    status = server.failures.pop(0) if server.failures else 0
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                try:
                    self._answer(body, path, n, status)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, body: Any, path: str, n: int, status: int) -> None:
                if server.delay_s:
                    server._stop.wait(server.delay_s)
                if status:
                    kind = _ERRORS.get(status, "api_error")
                    error = {"type": "error", "error": {"type": kind, "code": kind, "message": f"scripted {status}"}}
                    headers = {"retry-after": "0"} if status == 429 else {}
                    self._send(status, "application/json", json.dumps(error).encode(), headers)
                    return
                p = plan(body, server.reply, server.rules, server.calls)
                if p.hang:
                    server._stop.wait(3600)
                    self.close_connection = True
                    return
                if p.fail:
                    self._send(
                        500, "application/json", b'{"error": {"type": "api_error", "message": "scripted failure"}}'
                    )
                    return
                if path.endswith("/messages"):
                    ctype, payload = anthropic(body, p, n)
                elif path.endswith("/responses"):
                    ctype, payload = responses(body, p, n)
                elif path.endswith("/chat/completions"):
                    ctype, payload = chat(body, p, n)
                else:
                    self._send(404, "application/json", b'{"error": {"message": "unknown path"}}')
                    return
                self._send(200, ctype, payload)

            def _send(self, status: int, ctype: str, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

        return Handler


if __name__ == "__main__":  # pragma: no cover - manual recording aid
    port_arg = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    with AgentServer(port=port_arg, log_path=sys.argv[2] if len(sys.argv) > 2 else None) as srv:
        print(srv.url, flush=True)
        threading.Event().wait()
