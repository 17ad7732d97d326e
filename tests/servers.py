"""Test servers: a scripted fault server (stdlib), and helpers that start real local model servers.

`FaultServer` answers each POST with the next scripted action (or the default one) and records
the request bodies. Valid answers take the shape the path asks for: OpenAI chat completions
(`/chat/completions`), Anthropic messages (`/messages`) or Ollama chat (`/api/chat`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

USAGE_IN, USAGE_OUT, USAGE_CACHED = 11, 7, 3


@dataclass
class Action:
    """One scripted answer: kind is ok | status | garbage | truncate | hang."""

    kind: str = "ok"
    text: str = "hello"
    finish: str = "stop"  # "stop" or "length" (mapped to each API's own word)
    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait this long before answering (an "ok" answer only)


@dataclass
class Seen:
    """One request the fault server received."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openai_body(a: Action) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1,
        "model": "served-model",
        "choices": [{"index": 0, "finish_reason": a.finish, "message": {"role": "assistant", "content": a.text}}],
        "usage": {
            "prompt_tokens": USAGE_IN,
            "completion_tokens": USAGE_OUT,
            "total_tokens": USAGE_IN + USAGE_OUT,
            "prompt_tokens_details": {"cached_tokens": USAGE_CACHED},
        },
    }


def _anthropic_body(a: Action) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "served-model",
        "content": [{"type": "text", "text": a.text}],
        "stop_reason": "max_tokens" if a.finish == "length" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT, "cache_read_input_tokens": USAGE_CACHED},
    }


def _ollama_body(a: Action) -> dict[str, Any]:
    return {
        "model": "served-model",
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": a.text},
        "done": True,
        "done_reason": "length" if a.finish == "length" else "stop",
        "prompt_eval_count": USAGE_IN,
        "eval_count": USAGE_OUT,
    }


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-answer (a cancelled call) is no error worth a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FaultServer:
    """A scripted HTTP server in a thread; `push()` queues actions, `seen` records requests."""

    def __init__(self, hang_s: float = 5.0) -> None:
        self.hang_s = hang_s
        self.queue: list[Action] = []
        self.default = Action()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def reset(self) -> None:
        with self._lock:
            self.queue.clear()
            self.seen.clear()
            self.default = Action()

    def push(self, *actions: Action) -> None:
        with self._lock:
            self.queue.extend(actions)

    def posts(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST"]

    def _next(self) -> Action:
        with self._lock:
            return self.queue.pop(0) if self.queue else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                return

            def _headers(self) -> dict[str, str]:
                return {k.lower(): v for k, v in self.headers.items()}

            def do_GET(self) -> None:
                server.seen.append(Seen("GET", self.path, self._headers(), None))
                self._send(200, json.dumps({"object": "list", "data": [], "models": []}).encode())

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                server.seen.append(Seen("POST", self.path, self._headers(), body))
                self._answer(server._next())

            def _answer(self, a: Action) -> None:
                if a.kind == "status":
                    self._send(a.status, (a.body or json.dumps({"error": {"message": "scripted"}})).encode(), a.headers)
                elif a.kind == "garbage":
                    self._send(200, b"<html>this is not json{", a.headers)
                elif a.kind == "truncate":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "5000")
                    self.end_headers()
                    self.wfile.write(b'{"id": "chatcmpl-cut", "choices": [')
                    self.wfile.flush()
                    self.close_connection = True
                elif a.kind == "hang":
                    server._stop.wait(server.hang_s)
                    self.close_connection = True
                else:
                    if a.delay_s:
                        server._stop.wait(a.delay_s)
                    if "/api/chat" in self.path:
                        shape = _ollama_body(a)
                    elif self.path.rstrip("/").endswith("/messages"):
                        shape = _anthropic_body(a)
                    else:
                        shape = _openai_body(a)
                    self._send(200, json.dumps(shape).encode(), a.headers)

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

        return Handler


# --- real model servers ----------------------------------------------------------------------


def local_threads(*, alone: bool = False) -> int:
    """llama.cpp threads for each embedded model the tests run: the cores shared out among
    pytest-xdist's workers. A model's threads wait on each other at every step, so a 2-thread
    model beside another busy worker on 2 cores crawls (10× slower here); one thread each does not.
    A test marked `alone` runs while no other does (tests/conftest.py) and takes every core."""
    workers = 1 if alone else int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, min((os.cpu_count() or 2) // workers, 8))


_LLAMA_SERVER_SCRIPT = r"""
import sys, time, xllamacpp
path, port = sys.argv[1], int(sys.argv[2])
p = xllamacpp.CommonParams()
p.model.path = path
p.model_alias = {"local-test"}
p.port = port
p.hostnames = ["127.0.0.1"]
p.n_ctx = 16384  # OpenClaw's lean prompt alone is ~8.4k tokens
p.n_parallel = 1
p.cpuparams.n_threads = int(sys.argv[3])
p.cpuparams_batch.n_threads = int(sys.argv[3])
p.warmup = False
p.verbosity = -1
server = xllamacpp.Server(p)
print("listening", server.listening_address, flush=True)
sys.stdin.read()  # the parent closes stdin (or kills us) to stop the server
"""


def wait_http(url: str, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Poll `url` until it answers 200, or fail naming the URL (and the process's exit code)."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server process for {url} exited with code {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError as exc:
            last = str(exc)
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout_s} s ({last})")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server process we started: close its stdin, terminate, then kill."""
    if proc.stdin is not None:
        proc.stdin.close()
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def start_llama_server(model_path: Path, port: int) -> subprocess.Popen[bytes]:
    """Start xllamacpp's HTTP server on 127.0.0.1:port in a child process serving `model_path`."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _LLAMA_SERVER_SCRIPT, str(model_path), str(port), str(local_threads())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/health", 120, proc)
    except BaseException:
        stop_process(proc)
        raise
    return proc


OLLAMA_ALIAS = "local-test"
OLLAMA_MODEL = f"local/{OLLAMA_ALIAS}"  # the model name the proxy serves


def ollama_proxy_exe() -> Path | None:
    """The `ollama-proxy` command of this venv (ollama-proxy-plus), or None."""
    exe = Path(sys.executable).with_name("ollama-proxy")
    return exe if exe.exists() else None


def start_ollama_proxy(openai_base_url: str, port: int, alias: str = OLLAMA_ALIAS) -> subprocess.Popen[bytes]:
    """Start `ollama-proxy serve` (Ollama REST API) in front of an OpenAI-compatible server."""
    exe = Path(sys.executable).with_name("ollama-proxy")
    env = {
        **os.environ,
        "PROVIDERS_LOCAL_API_KEY": "EMPTY",
        "PROVIDERS_LOCAL_BASE_URL": openai_base_url,
        "EXTRA_MODELS": f"local/{alias}",
    }
    proc = subprocess.Popen(
        [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/api/tags", 60, proc)
    except BaseException:
        stop_process(proc)
        raise
    return proc
