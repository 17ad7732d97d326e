"""Any OpenAI-compatible `/v1` chat-completions server (OpenAI, vLLM, llama.cpp, LM Studio …).

Also the base of the DeepSeek backend, and home of the HTTP failure mapping every network
backend shares: 429 / 5xx / timeouts / dropped connections / non-JSON bodies are a
`TransientError` (retried by `BaseBackend`), 401 / 403 / 404 / 400 a permanent `BackendError`
that names the fix. The `openai` SDK is imported lazily, on first use.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from skillsleep.core.models.backends.base import (
    BackendSettings,
    BaseBackend,
    ClientBackend,
    ProviderInfo,
    import_sdk,
    shown_url,
)
from skillsleep.core.shared.errors import BackendError, BackendUnavailable, TransientError
from skillsleep.core.shared.records import Completion, CompletionRequest, Usage

if TYPE_CHECKING:
    import openai

_RETRYABLE_STATUS = {408, 409, 425, 429}


@contextmanager
def sdk_errors(sdk: Any, url: str, backend: BaseBackend, *, key_hint: str, reply: str) -> Iterator[None]:
    """A call through an SDK of the openai / anthropic kind (the same error classes), its errors
    as `backend`'s: an HTTP status as `status_error()`, a timeout, a dropped connection or a body
    that is not a `reply` as a TransientError (retried)."""
    try:
        yield
    except sdk.APIStatusError as exc:
        raise status_error(
            url,
            exc.status_code,
            exc.response.text,
            headers=exc.response.headers,
            key_hint=key_hint,
            model=backend.model,
        ) from exc
    except sdk.APITimeoutError as exc:
        raise TransientError(f"no answer from {url} within {backend.settings.retry.timeout_s:g} s") from exc
    except sdk.APIConnectionError as exc:
        raise connection_error(url, exc.__cause__ or exc) from exc
    except (json.JSONDecodeError, sdk.APIResponseValidationError) as exc:
        raise TransientError(f"{url} sent a body that is not a valid {reply}: {exc}") from exc


def import_openai() -> Any:
    """The `openai` SDK, or an error that says how to install it."""
    return import_sdk("openai", "the openai SDK")


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (seconds or an HTTP date), or None."""
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
        return None if parsed is None else max(0.0, parsed.timestamp() - time.time())


def status_error(
    url: str, status: int, body: str, *, headers: Mapping[str, str] | None, key_hint: str, model: str
) -> BackendError:
    """The error for an HTTP error status: retryable ones are `TransientError`, the rest name the fix."""
    snippet = " ".join(str(body).split())[:300]
    if status in _RETRYABLE_STATUS or status >= 500:
        return TransientError(f"{url} answered HTTP {status}: {snippet}", retry_after=retry_after_s(headers))
    if status in (401, 403):
        return BackendUnavailable(f"{url} rejected the credentials (HTTP {status}): {snippet}. {key_hint}")
    if status == 404:
        return BackendUnavailable(
            f"{url} answered HTTP 404 for model {model!r}: {snippet}. Check the model name and the base URL "
            "(an OpenAI-compatible server's base URL usually ends in /v1)."
        )
    return BackendError(f"{url} refused the request (HTTP {status}): {snippet}")


def connection_error(url: str, exc: BaseException) -> TransientError:
    """A transport failure (refused, reset, dropped body) as a retryable error naming the URL."""
    return TransientError(f"could not get an answer from {url} ({type(exc).__name__}: {exc}); is the server running?")


def sdk_timeout(settings: BackendSettings) -> float:
    """The SDK's own timeout: a little under the retry loop's, so its error (naming the URL) wins."""
    return settings.retry.timeout_s * 0.9


class OpenAIBackend(ClientBackend["openai.AsyncOpenAI"]):
    """Chat completions on any OpenAI-compatible server given by its base URL."""

    name = "openai"
    info = ProviderInfo(
        name="openai",
        description="any OpenAI-compatible /v1 server (OpenAI, vLLM, llama.cpp, LM Studio, ...)",
        key_env="OPENAI_API_KEY",
        key_required=False,
        base_url_env="OPENAI_BASE_URL",
        how_to_configure=(
            "set base_url = 'http://HOST:PORT/v1' in the config's [target]/[optimizer] section "
            "(--base-url for eval) or OPENAI_BASE_URL; set OPENAI_API_KEY if the server needs a key"
        ),
    )

    probe_path = "/models"

    def __init__(self, settings: BackendSettings) -> None:
        super().__init__(settings)
        base_url = settings.base_url or self.info.default_base_url
        if not base_url:
            raise BackendUnavailable(
                f'the {self.name} backend needs a server URL: set base_url = "http://HOST:PORT/v1" in the config section (--base-url for eval)'
                + (f" or set {self.info.base_url_env}" if self.info.base_url_env else "")
            )
        if self.info.key_required and not settings.api_key:
            raise BackendUnavailable(f"no API key for {self.name}: set {self.info.key_env}")
        self.endpoint = base_url.rstrip("/")

    def _key_hint(self) -> str:
        return f"Set {self.info.key_env} to a valid key." if self.info.key_env else "Check the API key."

    def _new_client(self) -> openai.AsyncOpenAI:
        sdk = import_openai()
        client: openai.AsyncOpenAI = sdk.AsyncOpenAI(
            base_url=self.endpoint,
            api_key=self.settings.api_key or "EMPTY",  # local servers accept any key
            max_retries=0,  # BaseBackend's loop is the only retry loop
            timeout=sdk_timeout(self.settings),
        )
        return client

    def _messages(self, request: CompletionRequest) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in request.messages]

    def _extra_params(self, request: CompletionRequest) -> dict[str, Any]:
        """Request fields beyond messages / temperature / max_tokens / seed (overridden by subclasses)."""
        if request.json_schema is None:
            return {}
        if self.settings.options.get("json_mode") == "json_object":
            return {"response_format": {"type": "json_object"}}
        schema = {"name": "reply", "schema": request.json_schema, "strict": False}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}

    async def _send(self, request: CompletionRequest) -> Completion:
        sdk = import_openai()
        client = self._get_client()
        params: dict[str, Any] = {
            "model": self.model,
            "messages": self._messages(request),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            **self._extra_params(request),
        }
        if request.seed is not None:
            params["seed"] = request.seed
        url = shown_url(f"{self.endpoint}/chat/completions")  # for messages: the SDK has the base URL
        with sdk_errors(sdk, url, self, key_hint=self._key_hint(), reply="chat completion"):
            response = await client.chat.completions.create(**params)
        return self._completion(response, url)

    def _cached_tokens(self, usage: Any) -> int:
        details = getattr(usage, "prompt_tokens_details", None)
        return int(getattr(details, "cached_tokens", 0) or 0)

    def _completion(self, response: Any, url: str) -> Completion:
        if isinstance(response, str) or not getattr(response, "choices", None):
            raise TransientError(f"{url} sent a reply without choices: {str(response)[:200]!r}")
        choice = response.choices[0]
        usage = response.usage
        return Completion(
            text=choice.message.content or "",
            usage=Usage(
                input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                cached_tokens=self._cached_tokens(usage) if usage is not None else 0,
            ),
            finish_reason=choice.finish_reason,
            raw_id=response.id,
            model=response.model or self.model,
        )
