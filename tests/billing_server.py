"""A model server on 127.0.0.1 that bills every call at the most a real tokenizer could.

`BillingServer` answers OpenAI chat completions (`/chat/completions`: deepseek, openai), Anthropic
messages (`/messages`) and Ollama chat (`/api/chat`) with a reply that runs to the requested token
limit, and reports as input tokens every UTF-8 byte of the text the model reads (messages, system
prompt, JSON schema) plus the chat template's markers (llm.MESSAGE_TOKENS a message,
llm.TEMPLATE_TOKENS a request): no tokenizer makes a token of less than a byte. A share of the
prompt is reported as read from the cache (`cached_share`), and to Anthropic's also a share as
written to it (`write_share`: Anthropic bills writes above the input price and leaves both out of
its `input_tokens`). Every call billed is kept in `billed` (prompt, output, cache reads, cache
writes), so a test can add up what the provider would charge.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from servers import free_port

from skillsleep.core.models.llm import MESSAGE_TOKENS, TEMPLATE_TOKENS


def _text_bytes(body: dict[str, Any]) -> int:
    """The UTF-8 bytes of every text the model reads in `body`, with the template's markers."""
    messages = body.get("messages") or []
    total = sum(len(str(m.get("content", "")).encode()) + MESSAGE_TOKENS for m in messages)
    system = body.get("system")
    if isinstance(system, list):
        system = "".join(block.get("text", "") for block in system)
    if system:
        total += len(str(system).encode()) + MESSAGE_TOKENS
    schema = body.get("format") or (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    if schema:
        total += len(json.dumps(schema).encode())
    return total + TEMPLATE_TOKENS


class BillingServer:
    """A threaded HTTP server billing the worst case; `start()`, then `url`, then `stop()`."""

    def __init__(self, cached_share: float = 0.25, write_share: float = 0.5) -> None:
        self.cached_share = cached_share
        self.write_share = write_share
        self.billed: list[tuple[int, int, int, int]] = []
        self._lock = threading.Lock()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> BillingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _bill(self, body: dict[str, Any], path: str) -> tuple[int, int, int, int]:
        limit = body.get("max_tokens") or (body.get("options") or {}).get("num_predict") or 1
        tokens_in = _text_bytes(body)
        cached = 0 if "/api/chat" in path else int(tokens_in * self.cached_share)
        written = int((tokens_in - cached) * self.write_share) if path.rstrip("/").endswith("/messages") else 0
        bill = (tokens_in, int(limit), cached, written)
        with self._lock:
            self.billed.append(bill)
        return bill

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                tokens_in, tokens_out, cached, written = server._bill(body, self.path)
                text = "x" * 8
                if "/api/chat" in self.path:
                    shape: dict[str, Any] = {
                        "model": "m",
                        "message": {"role": "assistant", "content": text},
                        "done": True,
                        "done_reason": "stop",
                        "prompt_eval_count": tokens_in,
                        "eval_count": tokens_out,
                    }
                elif self.path.rstrip("/").endswith("/messages"):
                    shape = {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": "m",
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {
                            "input_tokens": tokens_in - cached - written,
                            "output_tokens": tokens_out,
                            "cache_read_input_tokens": cached,
                            "cache_creation_input_tokens": written,
                        },
                    }
                else:
                    shape = {
                        "id": "c1",
                        "object": "chat.completion",
                        "created": 1,
                        "model": "m",
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                        ],
                        "usage": {
                            "prompt_tokens": tokens_in,
                            "completion_tokens": tokens_out,
                            "total_tokens": tokens_in + tokens_out,
                            "prompt_tokens_details": {"cached_tokens": cached},
                            "prompt_cache_hit_tokens": cached,
                        },
                    }
                payload = json.dumps(shape).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
