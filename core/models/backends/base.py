"""The backend contract: one async `complete()` per LLM endpoint, with retries and a concurrency cap.

A concrete backend subclasses `BaseBackend` and implements `_send()`, which performs exactly one
HTTP/SDK call and raises `TransientError` for a retryable failure (429, 5xx, timeout, dropped
connection), `BackendUnavailable` / `BackendError` for a permanent one. `complete()` adds the
semaphore, the retry loop with exponential backoff and jitter, and latency measurement.
Backends read no environment variables: the command line resolves keys and URLs into
`BackendSettings` and hands them over (the local backend, given no `cache_dir` option, asks
platformdirs for the user's cache folder, which on Linux follows `$XDG_CACHE_HOME`). `on_event`, when set, hears a `Retry` event before each
retry (the command line shows it as a progress line; the engine never prints).
"""

from __future__ import annotations

import asyncio
import importlib
import random
import time
from typing import Annotated, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from skillsleep.core.models.ledger import Price
from skillsleep.core.shared.errors import BackendUnavailable, RetriesExhausted, TransientError
from skillsleep.core.shared.events import EventSink, Retry
from skillsleep.core.shared.records import Completion, CompletionRequest


def check_base_url(text: str) -> str | None:
    """Why `text` is not a model server's base URL (http or https, a host, a port from 1 to 65535,
    no spaces), or None; "" (not set) is fine. Checked where a user sets one, before any work."""
    problem = _url_problem(text) if text else ""
    return f"not a model server URL: {problem}; write it like http://127.0.0.1:8080/v1" if problem else None


def shown_url(url: str) -> str:
    """`url` as a message or a log shows it: a user or password in it is left out (`https://…@host/v1`)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="…@" + parts.netloc.rpartition("@")[2]))


def _url_problem(text: str) -> str:
    if any(c.isspace() for c in text):
        return "it contains a space"
    if "://" not in text:
        return "it has no scheme (http:// or https://)"
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        return f"the scheme {parts.scheme!r} is not http or https"
    if not parts.hostname:
        return "it has no host"
    try:
        port = parts.port
    except ValueError:
        port = 0
    return "its port is not a number from 1 to 65535" if port == 0 else ""


def _base_url(text: str) -> str:
    problem = check_base_url(text)
    if problem:  # not a ValueError: pydantic would prefix "Value error, "
        raise PydanticCustomError("base_url_syntax", problem)
    return text


BaseUrl = Annotated[str, AfterValidator(_base_url)]  # a settings field holding a model server's URL ("" = unset)


class RetryPolicy(BaseModel):
    """How often and how patiently a transient failure is retried."""

    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(default=4, ge=1)
    base_delay_s: float = Field(default=1.0, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)


class BackendSettings(BaseModel):
    """Resolved settings for one backend instance (keys come from the environment via the CLI)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    api_key: str | None = None
    base_url: str | None = None
    concurrency: int = Field(default=4, ge=1)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    thinking: bool = False
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    # how to allow more attempts or a longer wait, in the words of the command that was run
    # ("raise [target] retry.attempts …", "--retries / --call-timeout …"); ends the retries' error
    retry_advice: str = ""


class ProviderInfo(BaseModel):
    """A provider's record: what it needs (for `skillsleep backends` and error messages), its
    models and default model, the variables of its key and server, and its built-in prices."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    key_env: str | None = None  # env var holding the API key, if any
    key_required: bool = False
    base_url_env: str | None = None  # env var overriding the base URL, if any
    default_base_url: str | None = None
    models: list[str] = Field(default_factory=list)  # known model names ([] = any name accepted)
    default_model: str | None = None
    extra: str | None = None  # pip extra that installs the SDK / weights
    supports_thinking: bool = False  # whether `thinking = true` changes anything for this provider
    how_to_configure: str
    # USD per million tokens by model name ("*": any model of it), the `[prices]` defaults (as
    # `provider:model`); estimates for budgeting, not invoices. A model without one cannot be capped
    # in money until the user prices it.
    prices: dict[str, Price] = Field(default_factory=dict)
    # concurrent calls when a role's `concurrency` is 0 (None: local 1, every other provider 8)
    default_concurrency: int | None = Field(default=None, ge=1)


@runtime_checkable
class Backend(Protocol):
    """An LLM endpoint.

    Contract: `complete()` returns a `Completion` (text, usage, latency, finish reason) or raises
    a `BackendError` after its own retries. It never returns partial garbage as success: a reply
    cut off by the token limit keeps `finish_reason="length"` so callers can reject it.
    """

    model: str
    endpoint: str
    concurrency: int

    @property
    def name(self) -> str:
        """The provider's name ("deepseek", "local", …); a class attribute in `BaseBackend`."""
        ...

    async def complete(self, request: CompletionRequest, *, timeout_s: float | None = None) -> Completion: ...

    async def count_input(self, request: CompletionRequest) -> int | None:
        """The exact input tokens `request` will be charged, when the backend can count them
        cheaply (the embedded model's own tokenizer); None: only the byte bound is known."""
        ...

    async def aclose(self) -> None: ...


class BaseBackend:
    """Retry loop, concurrency cap and latency measurement around one `_send()`."""

    name: ClassVar[str] = "base"
    info: ClassVar[ProviderInfo]
    probe_path: ClassVar[str] = ""  # a cheap GET under the base URL that shows the server is up
    accepts_paths: ClassVar[bool] = False  # an absolute path (a weights file) is a valid model name

    @classmethod
    def create(cls, settings: BackendSettings) -> Backend:
        """The backend for `settings` (the registry builds every backend through this)."""
        return cls(settings)

    @classmethod
    def check(cls, settings: BackendSettings) -> tuple[bool, str] | None:
        """Whether this provider is usable here with `settings`, and a reason saying how to
        configure it; None: the registry's check (its key is set, its server answers)."""
        return None

    def __init__(self, settings: BackendSettings) -> None:
        self.settings = settings
        self.model = settings.model
        self.endpoint = settings.base_url or ""
        self.concurrency = settings.concurrency
        self._sem: asyncio.Semaphore | None = None
        self._sleep = asyncio.sleep  # replaced in tests to make backoff instant
        self.on_event: EventSink | None = None  # hears a Retry before each retry

    async def _send(self, request: CompletionRequest) -> Completion:
        raise NotImplementedError

    async def complete(self, request: CompletionRequest, *, timeout_s: float | None = None) -> Completion:
        """Send with retries; `timeout_s` (default: the retry policy's) limits each attempt once it
        holds a concurrency slot, so time spent queued behind other calls never counts."""
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        policy = self.settings.retry
        limit = timeout_s or policy.timeout_s
        last: TransientError | None = None
        for attempt in range(1, policy.attempts + 1):
            async with self._sem:
                start = time.perf_counter()
                try:
                    completion = await asyncio.wait_for(self._send(request), limit)
                except TransientError as exc:
                    last = exc
                except TimeoutError:
                    where = f" from {shown_url(self.endpoint)}" if self.endpoint else ""
                    last = TransientError(f"no answer{where} within {limit:g} s")
                else:
                    completion.latency_s = time.perf_counter() - start
                    return completion
            if attempt < policy.attempts:
                delay = self._delay(attempt, last)
                if self.on_event is not None:
                    self.on_event(
                        Retry(
                            backend=f"{self.name}:{self.model}",
                            attempt=attempt,
                            attempts=policy.attempts,
                            error=str(last),
                            delay_s=delay,
                        )
                    )
                await self._sleep(delay)
        advice = f", or {self.settings.retry_advice}" if self.settings.retry_advice else ""
        raise RetriesExhausted(
            f"{self.name}:{self.model} failed {policy.attempts} times; last error: {last}. "
            f"Check the server or the provider's status{advice}."
        )

    async def count_input(self, request: CompletionRequest) -> int | None:
        """None: a remote provider's tokenizer is not at hand; the budget reserves the byte bound."""
        return None

    def _delay(self, attempt: int, last: TransientError | None) -> float:
        policy = self.settings.retry
        if last is not None and last.retry_after is not None:
            return min(last.retry_after, policy.max_delay_s)
        delay = min(policy.base_delay_s * 2.0 ** (attempt - 1), policy.max_delay_s)
        return delay * (0.5 + random.random() / 2)

    async def aclose(self) -> None:
        """Release clients or loaded models; safe to call twice."""


def import_sdk(module: str, what: str) -> Any:
    """The vendor SDK `module` (`what` names it in the error), imported on first use so that
    `skillsleep --help` loads none; a missing one says how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - the SDKs are core dependencies
        raise BackendUnavailable(f"{what} is missing: pip install 'skillsleep'") from exc


class _Closable(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Closable)


class ClientBackend(BaseBackend, Generic[ClientT]):
    """A backend over one SDK client, made on first use by `_new_client()` and closed by `aclose()`."""

    _client: ClientT | None = None

    def _new_client(self) -> ClientT:
        raise NotImplementedError

    def _get_client(self) -> ClientT:
        if self._client is None:
            self._client = self._new_client()
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client; safe to call twice."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
