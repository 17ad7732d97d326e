"""Every backend against a real small model (Qwen2.5-Coder-0.5B): servers on 127.0.0.1 or in-process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import OLLAMA_MODEL, local_threads

from skillsleep.core.models.backends.anthropic import AnthropicBackend
from skillsleep.core.models.backends.base import BackendSettings, RetryPolicy
from skillsleep.core.models.backends.local import LocalBackend
from skillsleep.core.models.backends.ollama import OllamaBackend
from skillsleep.core.models.backends.openai_compat import OpenAIBackend
from skillsleep.core.models.llm import parse_json_reply
from skillsleep.core.shared.records import CompletionRequest, Message

pytestmark = pytest.mark.slow

RETRY = RetryPolicy(attempts=2, base_delay_s=0, timeout_s=120)
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def plain(max_tokens: int = 12) -> CompletionRequest:
    return CompletionRequest(
        model="m",
        messages=[
            Message(role="system", content="Answer in one short sentence."),
            Message(role="user", content="What is the capital of France?"),
        ],
        max_tokens=max_tokens,
        seed=1,
    )


def structured() -> CompletionRequest:
    return CompletionRequest(
        model="m",
        messages=[Message(role="user", content='Which city is the capital of France? Reply as JSON {"city": ...}.')],
        max_tokens=40,
        json_schema=SCHEMA,
        seed=1,
    )


async def test_openai_backend_against_llama_server(llama_server: str) -> None:
    b = OpenAIBackend(BackendSettings(model="local-test", base_url=f"{llama_server}/v1", retry=RETRY))
    try:
        c = await b.complete(plain())
        assert c.text.strip() and c.usage.input_tokens > 0 and c.usage.output_tokens > 0
        assert c.finish_reason in {"stop", "length"}
        data = parse_json_reply(await b.complete(structured()))
        assert isinstance(data["city"], str)
    finally:
        await b.aclose()


async def test_openai_backend_reports_a_cut_off_reply(llama_server: str) -> None:
    b = OpenAIBackend(BackendSettings(model="local-test", base_url=f"{llama_server}/v1", retry=RETRY))
    try:
        c = await b.complete(plain(max_tokens=2))
    finally:
        await b.aclose()
    assert c.truncated and c.usage.output_tokens == 2


async def test_anthropic_backend_against_llama_server(llama_server: str) -> None:
    b = AnthropicBackend(BackendSettings(model="local-test", base_url=llama_server, retry=RETRY))
    try:
        request = plain().model_copy(update={"cache_system": True})
        c = await b.complete(request)
        assert c.text.strip() and c.usage.output_tokens > 0
        assert (await b.complete(plain(max_tokens=2))).truncated
    finally:
        await b.aclose()


async def test_ollama_backend_through_the_proxy(ollama_server: str) -> None:
    b = OllamaBackend(BackendSettings(model=OLLAMA_MODEL, base_url=ollama_server, retry=RETRY))
    try:
        c = await b.complete(plain())
        assert c.text.strip()
        data = parse_json_reply(await b.complete(structured()))
        assert isinstance(data["city"], str)
    finally:
        await b.aclose()


@pytest.fixture(scope="module")
def local_backend(local_model_path: Path) -> Iterator[LocalBackend]:
    """One in-process model for the module (loading takes a second or two)."""
    b = LocalBackend(
        BackendSettings(model=str(local_model_path), retry=RETRY, options={"threads": local_threads(), "n_ctx": 2048})
    )
    yield b
    asyncio.run(b.aclose())


async def test_local_backend_plain_and_json(local_backend: LocalBackend) -> None:
    c = await local_backend.complete(plain())
    assert c.text.strip() and c.usage.input_tokens > 0
    data = parse_json_reply(await local_backend.complete(structured()))
    assert isinstance(data["city"], str)
    assert json.dumps(data)


async def test_local_backend_is_repeatable_at_temperature_zero(local_backend: LocalBackend) -> None:
    first = await local_backend.complete(plain(max_tokens=16))
    second = await local_backend.complete(plain(max_tokens=16))
    assert first.text == second.text


async def test_local_backend_by_packaged_name(local_model_path: Path) -> None:
    """The packaged name resolves to the same verified file in the given cache folder."""
    cache_dir = local_model_path.parent.parent
    b = LocalBackend(
        BackendSettings(
            model="qwen2.5-coder-0.5b", retry=RETRY, options={"cache_dir": str(cache_dir), "threads": local_threads()}
        )
    )
    try:
        c = await b.complete(plain(max_tokens=4))
    finally:
        await b.aclose()
    assert c.text
