"""No money cap is ever exceeded or silently unenforced, for every built-in provider (a property).

Drawn: a built-in provider, a model (its default, one it knows, or a name of the user's), whether
the user gave that model a price, a money cap, and calls of drawn sizes (ASCII or not, with or
without a JSON schema, reply limits) sent all at once through a backend of drawn concurrency.
Either the cap is refused before any work with the error naming the model and both ways out (a
price under [prices], or --budget-tokens), and only when the model has no price; or the calls go
through the one door (`LLM`) to a real backend against a server on 127.0.0.1 that bills each call
at the most a tokenizer could (tests/billing_server.py), and then what the provider would charge
never passes the cap, and the ledger counts every call at that price (none is a silent $0).
The embedded `local` model is checked before work only (its calls are the slow tests'): it costs
nothing by definition. `scripted` runs its real backend, free or at a price the user gives it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import pytest
from billing_server import BillingServer
from hypothesis import event, given
from hypothesis import strategies as st
from test_fuzz_readers import budget

from skillsleep.core.models.backends.base import BackendSettings, BaseBackend, RetryPolicy
from skillsleep.core.models.backends.registry import create_backend, default_prices, get_provider
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Budget, Ledger, Price, check_money_cap, find_price
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.errors import BudgetExceeded, ConfigError
from skillsleep.core.shared.records import Message

PROVIDERS = ["deepseek", "openai", "anthropic", "ollama", "local", "scripted"]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "description": "the reply"}}}


@pytest.fixture(scope="module")
def server() -> Iterator[BillingServer]:
    billing = BillingServer().start()
    yield billing
    billing.stop()


def model_of(provider: str, choice: str, custom: str) -> str:
    """The model drawn: the provider's default, one it knows, or the user's own name."""
    info = get_provider(provider).info
    if info.models and (choice == "known" or not info.default_model or choice == "custom"):
        return info.models[len(custom) % len(info.models)]  # a provider that knows its models takes no other
    if choice == "default" and info.default_model:
        return info.default_model
    return f"my-{custom}"


def backend_of(provider: str, model: str, url: str, concurrency: int) -> BaseBackend:
    fields: dict[str, Any] = {"model": model, "api_key": "sk-test", "concurrency": concurrency}
    fields["retry"] = RetryPolicy(attempts=1)
    if provider == "scripted":
        return ScriptedBackend(BackendSettings(**fields, options={"latency_s": 0.001}), lambda _: "ok")
    base_url = f"{url}/v1" if provider == "openai" else url
    backend = create_backend(f"{provider}:{model}", BackendSettings(**fields, base_url=base_url))
    assert isinstance(backend, BaseBackend)
    return backend


def invoice(price: Price, billed: list[tuple[int, int, int, int]]) -> float:
    """What the provider charges for `billed` calls (prompt, output, cache reads, cache writes)."""
    cached = price.input if price.cached_input is None else price.cached_input
    write = price.input if price.cache_write is None else price.cache_write
    return math.fsum(
        ((p - r - w) * price.input + r * cached + w * write + out * price.output) / 1e6 for p, out, r, w in billed
    )


async def send_all(llm: LLM, calls: list[tuple[str, int, bool]]) -> list[Any]:
    requests = [
        llm.request(
            [Message(role="system", content="Answer."), Message(role="user", content=f"{i}: {text}")],
            max_tokens=limit,
            json_schema=SCHEMA if schema else None,
        )
        for i, (text, limit, schema) in enumerate(calls)
    ]
    try:
        return await asyncio.gather(*(llm.complete("target", r) for r in requests), return_exceptions=True)
    finally:
        await llm.backend.aclose()


prices_st = st.builds(
    Price,
    input=st.floats(0, 30),
    output=st.floats(0, 80),
    cached_input=st.none() | st.floats(0, 30),
    cache_write=st.none() | st.floats(0, 40),
)
calls_st = st.lists(
    st.tuples(st.text(st.sampled_from("ab c\n{}é中🙂"), max_size=1500), st.integers(1, 1500), st.booleans()),
    min_size=1,
    max_size=10,
)


@budget(40)
@given(
    provider=st.sampled_from(PROVIDERS),
    choice=st.sampled_from(["default", "known", "custom"]),
    custom=st.text(st.sampled_from("abz0-."), min_size=1, max_size=8),
    user_price=st.none() | prices_st,
    cap=st.floats(1e-6, 0.05),
    calls=calls_st,
    concurrency=st.integers(1, 6),
)
def test_no_money_cap_is_exceeded_or_silently_unenforced(
    server: BillingServer,
    provider: str,
    choice: str,
    custom: str,
    user_price: Price | None,
    cap: float,
    calls: list[tuple[str, int, bool]],
    concurrency: int,
) -> None:
    model = model_of(provider, choice, custom)
    prices = {**default_prices(), **({f"{provider}:{model}": user_price} if user_price else {})}
    price = find_price(prices, provider, model)
    try:
        check_money_cap(
            Budget(usd=cap),
            prices,
            [(provider, model)],
            cap="--budget-usd",
            prices_at="config.toml",
            token_cap="--budget-tokens",
        )
    except ConfigError as exc:
        assert price is None, f"{provider}:{model} has a price and was refused"
        message = str(exc)
        assert f"{provider}:{model}" in message and "[prices]" in message and "--budget-tokens" in message
        assert "0 is a price" in message
        event(f"{provider}: refused before work")
        return
    assert price is not None, f"{provider}:{model} has no price, and the money cap was let through"
    if provider == "local":
        assert price.highest_input == 0 or user_price is not None  # free unless the user prices it
        event("local: priced before work")
        return
    before = len(server.billed)
    ledger = Ledger(budget=Budget(usd=cap), prices=prices)
    llm = LLM(backend_of(provider, model, server.url, concurrency), ledger=ledger, seed=None)
    results = asyncio.run(send_all(llm, calls))
    assert all(not isinstance(r, BaseException) or isinstance(r, BudgetExceeded) for r in results), results
    stopped = any(isinstance(r, BudgetExceeded) for r in results)
    event(f"{provider}: {'the cap stopped calls' if stopped else 'every call fit'}")
    if provider == "scripted":  # its own usage, counted by the ledger: never past the cap
        assert ledger.spent_usd <= cap
        return
    billed = server.billed[before:]
    charged = invoice(price, billed)
    assert charged <= cap * (1 + 1e-9), (charged, cap)  # float rounding only
    assert ledger.spent_usd == pytest.approx(charged, rel=1e-9, abs=1e-15)  # every call counted at its price
    assert len(billed) == ledger.calls_made == sum(1 for r in results if not isinstance(r, BaseException))
