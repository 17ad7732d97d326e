"""Anthropic's Messages API (and servers that speak it, e.g. llama.cpp's `/v1/messages`).

System messages become the `system` parameter; with `request.cache_system` it is sent as one
text block marked `cache_control: ephemeral`, so the stable optimizer instructions are cached.
Structured replies: the schema is stated in the system prompt, nothing is prefilled, callers
parse strictly. The `anthropic` SDK is imported lazily, on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillsleep.core.models.backends.base import BackendSettings, ClientBackend, ProviderInfo, import_sdk, shown_url
from skillsleep.core.models.backends.deepseek import schema_instruction
from skillsleep.core.models.backends.openai_compat import sdk_errors, sdk_timeout
from skillsleep.core.models.ledger import Price
from skillsleep.core.shared.errors import BackendUnavailable, TransientError
from skillsleep.core.shared.records import Completion, CompletionRequest, Usage

if TYPE_CHECKING:
    import anthropic

_STOP_REASONS = {"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop"}


def _usage(usage: Any) -> Usage:
    """Anthropic's usage: `input_tokens` counts only the prompt outside the cache, so the whole
    prompt is it plus the cache's writes (billed above the input price) and reads."""
    written = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    return Usage(
        input_tokens=int(usage.input_tokens or 0) + written + read,
        output_tokens=int(usage.output_tokens or 0),
        cached_tokens=read,
        cache_write_tokens=written,
    )


class AnthropicBackend(ClientBackend["anthropic.AsyncAnthropic"]):
    """Claude models through the Messages API."""

    name = "anthropic"
    info = ProviderInfo(
        name="anthropic",
        description=(
            "Anthropic's Claude models (Messages API; e.g. claude-sonnet-5, claude-opus-5, claude-haiku-4-5) "
            "or any server speaking /v1/messages"
        ),
        key_env="ANTHROPIC_API_KEY",
        key_required=True,
        base_url_env="ANTHROPIC_BASE_URL",
        default_base_url="https://api.anthropic.com",
        models=[],  # any model name is passed through
        default_model="claude-sonnet-5",
        how_to_configure="set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a compatible server)",
        # list prices from its model pages: a 5-minute cache write at 1.25 x input, a cache read at 0.1 x
        prices={
            "claude-haiku-4-5": Price(input=1.0, output=5.0, cached_input=0.10, cache_write=1.25),
            "claude-sonnet-4-5": Price(input=3.0, output=15.0, cached_input=0.30, cache_write=3.75),
            "claude-opus-4-5": Price(input=5.0, output=25.0, cached_input=0.50, cache_write=6.25),
            "claude-sonnet-5": Price(input=2.0, output=10.0, cached_input=0.20, cache_write=2.50),
            "claude-opus-5": Price(input=5.0, output=25.0, cached_input=0.50, cache_write=6.25),
        },
    )

    probe_path = "/v1/models"

    def __init__(self, settings: BackendSettings) -> None:
        super().__init__(settings)
        self.endpoint = (settings.base_url or self.info.default_base_url or "").rstrip("/")
        custom_server = settings.base_url is not None and settings.base_url != self.info.default_base_url
        if not settings.api_key and not custom_server:
            raise BackendUnavailable("no API key for anthropic: set ANTHROPIC_API_KEY")

    def _new_client(self) -> anthropic.AsyncAnthropic:
        sdk = import_sdk("anthropic", "the anthropic SDK")
        client: anthropic.AsyncAnthropic = sdk.AsyncAnthropic(
            api_key=self.settings.api_key or "EMPTY",  # a local server accepts any key
            base_url=self.endpoint,
            max_retries=0,  # BaseBackend's loop is the only retry loop
            timeout=sdk_timeout(self.settings),
        )
        return client

    def _params(self, request: CompletionRequest) -> dict[str, Any]:
        system_parts = [m.content for m in request.messages if m.role == "system"]
        if request.json_schema is not None:
            system_parts.append(schema_instruction(request.json_schema))
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"],
            # The SDK's create() takes no `temperature` keyword (anthropic 2.x); the API does.
            "extra_body": {"temperature": request.temperature},
        }
        if system_parts:
            system = "\n\n".join(system_parts)
            if request.cache_system:
                params["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
            else:
                params["system"] = system
        return params

    async def _send(self, request: CompletionRequest) -> Completion:
        sdk = import_sdk("anthropic", "the anthropic SDK")
        url = shown_url(f"{self.endpoint}/v1/messages")  # for messages: the SDK has the base URL
        with sdk_errors(sdk, url, self, key_hint="Set ANTHROPIC_API_KEY to a valid key.", reply="message"):
            message = await self._get_client().messages.create(**self._params(request))
        if isinstance(message, str) or not hasattr(message, "content"):
            raise TransientError(f"{url} sent a reply that is not a message: {str(message)[:200]!r}")
        text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        usage = message.usage
        return Completion(
            text=text,
            usage=_usage(usage),
            finish_reason=_STOP_REASONS.get(message.stop_reason or "", message.stop_reason),
            raw_id=message.id,
            model=message.model or self.model,
        )
