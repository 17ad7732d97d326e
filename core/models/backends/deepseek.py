"""DeepSeek's hosted API: the OpenAI-compatible backend plus DeepSeek's key, models and quirks.

Thinking is off unless asked for (`{"thinking": {"type": "disabled"}}` in the body); structured
replies use `response_format={"type": "json_object"}` with the schema stated in the system
message; cached prompt tokens come from `prompt_cache_hit_tokens`.
"""

from __future__ import annotations

import json
from typing import Any

from skillsleep.core.models.backends.base import ProviderInfo
from skillsleep.core.models.backends.openai_compat import OpenAIBackend
from skillsleep.core.models.ledger import Price
from skillsleep.core.shared.records import CompletionRequest

MODELS = ["deepseek-v4-flash", "deepseek-v4-pro"]


def schema_instruction(schema: dict[str, Any]) -> str:
    """The sentence that asks for a JSON object matching `schema` (for APIs without schema mode)."""
    return "Reply with one JSON object only, no prose and no code fence, matching this JSON schema:\n" + json.dumps(
        schema, sort_keys=True
    )


def with_schema_in_system(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """Messages with the schema instruction appended to the system message (added if none)."""
    instruction = schema_instruction(schema)
    out = [dict(m) for m in messages]
    for m in out:
        if m["role"] == "system":
            m["content"] = f"{m['content']}\n\n{instruction}"
            return out
    return [{"role": "system", "content": instruction}, *out]


class DeepSeekBackend(OpenAIBackend):
    """DeepSeek chat models through their OpenAI-compatible API."""

    name = "deepseek"
    info = ProviderInfo(
        name="deepseek",
        description="DeepSeek's hosted models (OpenAI-compatible API)",
        key_env="DEEPSEEK_API_KEY",
        key_required=True,
        base_url_env="DEEPSEEK_BASE_URL",
        default_base_url="https://api.deepseek.com",
        models=MODELS,
        default_model="deepseek-v4-flash",
        how_to_configure="set DEEPSEEK_API_KEY (get a key from the DeepSeek platform)",
        supports_thinking=True,
        # api-docs.deepseek.com/quick_start/pricing as listed in mid-2026 (v4-pro at its then-discounted
        # rate; DeepSeek changes prices and bills off-peak hours at half)
        prices={
            "deepseek-v4-flash": Price(input=0.14, output=0.28, cached_input=0.0028),
            "deepseek-v4-pro": Price(input=0.435, output=0.87, cached_input=0.003625),
        },
    )

    def _messages(self, request: CompletionRequest) -> list[dict[str, str]]:
        messages = super()._messages(request)
        if request.json_schema is not None:
            messages = with_schema_in_system(messages, request.json_schema)
        return messages

    def _extra_params(self, request: CompletionRequest) -> dict[str, Any]:
        thinking = self.settings.thinking or request.thinking
        params: dict[str, Any] = {"extra_body": {"thinking": {"type": "enabled" if thinking else "disabled"}}}
        if request.json_schema is not None:
            params["response_format"] = {"type": "json_object"}
        return params

    def _cached_tokens(self, usage: Any) -> int:
        hit = getattr(usage, "prompt_cache_hit_tokens", None)
        if hit is None and getattr(usage, "model_extra", None):
            hit = usage.model_extra.get("prompt_cache_hit_tokens")
        return int(hit) if hit is not None else super()._cached_tokens(usage)
