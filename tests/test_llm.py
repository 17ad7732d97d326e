"""The call door: cache keys, cache hits, the budget and the ledger."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Budget, Ledger, Price, price_of
from skillsleep.core.models.llm import LLM, parse_json_reply
from skillsleep.core.models.store import Store
from skillsleep.core.shared.errors import BackendError, BudgetExceeded, ParseError
from skillsleep.core.shared.records import Completion, CompletionRequest, Message, Usage
from skillsleep.core.train.reflect import ReflectReply

MSG = [Message(role="user", content="hello")]


def _llm(tmp_path: Path, answers: list[str] | None = None, **ledger_kw: object) -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(BackendSettings(model="m"), answers if answers is not None else ["a", "b", "c", "d"])
    return LLM(backend, ledger=Ledger(**ledger_kw), store=Store(tmp_path / "state.db"), run_id="r"), backend  # type: ignore[arg-type]


def test_cache_key_covers_every_parameter() -> None:
    base = CompletionRequest(model="m", messages=MSG)
    keys = {
        base.cache_key("p"),
        base.cache_key("q"),
        base.cache_key("p", "http://other"),
        base.model_copy(update={"model": "n"}).cache_key("p"),
        base.model_copy(update={"temperature": 0.5}).cache_key("p"),
        base.model_copy(update={"max_tokens": 7}).cache_key("p"),
        base.model_copy(update={"sample": 1}).cache_key("p"),
        base.model_copy(update={"seed": 3}).cache_key("p"),
        base.model_copy(update={"json_schema": {"type": "object"}}).cache_key("p"),
        base.model_copy(update={"messages": [Message(role="user", content="hello!")]}).cache_key("p"),
    }
    assert len(keys) == 10
    assert base.cache_key("p") == CompletionRequest(model="m", messages=MSG).cache_key("p")


async def test_identical_request_is_answered_from_cache_across_instances(tmp_path: Path) -> None:
    llm, backend = _llm(tmp_path)
    first = await llm.ask("target", MSG)
    again = await llm.ask("target", MSG)
    assert first.text == again.text == "a" and again.cached
    assert len(backend.requests) == 1
    # a new process (new LLM, same state.db) pays nothing either
    llm2, backend2 = _llm(tmp_path)
    assert (await llm2.ask("target", MSG)).text == "a"
    assert backend2.requests == []
    assert [e.cache_hit for e in llm.ledger.entries] == [False, True]


async def test_other_sample_index_is_a_new_call(tmp_path: Path) -> None:
    llm, backend = _llm(tmp_path)
    await llm.ask("target", MSG, sample=0)
    await llm.ask("target", MSG, sample=1)
    assert len(backend.requests) == 2
    assert backend.requests[1].seed == backend.requests[0].seed + 1


async def test_budget_stops_before_the_call_that_would_cross_it(tmp_path: Path) -> None:
    llm, backend = _llm(tmp_path, budget=Budget(tokens=300))
    await llm.ask("reflect", MSG, max_tokens=100)
    with pytest.raises(BudgetExceeded, match="raise --budget-tokens"):
        await llm.ask("reflect", [Message(role="user", content="x" * 2000)], max_tokens=100)
    assert len(backend.requests) == 1


async def test_concurrent_calls_wait_for_room_instead_of_ending_the_run(tmp_path: Path) -> None:
    # Each call reserves ~120 tokens (its estimate) but spends ~2; six at once reserve ~720 > 300.
    backend = ScriptedBackend(BackendSettings(model="m"), lambda r: "ok")
    llm = LLM(backend, ledger=Ledger(budget=Budget(tokens=300)), store=None)
    replies = await asyncio.gather(
        *(llm.ask("judge", [Message(role="user", content=f"q{i}")], max_tokens=100) for i in range(6))
    )
    assert [r.text for r in replies] == ["ok"] * 6 and len(backend.requests) == 6
    assert llm.ledger.spent_tokens <= 300
    # A call that does not fit even alone still stops at once.
    with pytest.raises(BudgetExceeded, match="raise --budget-tokens"):
        await llm.ask("judge", [Message(role="user", content="x" * 2000)], max_tokens=100)


async def test_money_budget_uses_configured_prices(tmp_path: Path) -> None:
    prices = {"scripted:m": Price(input=1_000_000.0, output=0.0)}  # $1 per token
    llm, backend = _llm(tmp_path, budget=Budget(usd=5.0), prices=prices)
    with pytest.raises(BudgetExceeded, match="money budget"):
        await llm.ask("target", [Message(role="user", content="y" * 100)])
    assert backend.requests == []


async def test_cache_hits_cost_nothing_and_do_not_count_against_the_budget(tmp_path: Path) -> None:
    prices = {"scripted:*": Price(input=1.0, output=2.0)}
    llm, _ = _llm(tmp_path, prices=prices)
    await llm.ask("target", MSG)
    spent = llm.ledger.spent_usd
    await llm.ask("target", MSG)
    assert spent > 0 and llm.ledger.spent_usd == spent
    assert llm.ledger.by_role()["target"]["cache_hits"] == 1


async def test_failed_call_is_recorded_and_raised(tmp_path: Path) -> None:
    llm, _ = _llm(tmp_path, answers=[])
    with pytest.raises(BackendError):
        await llm.ask("judge", MSG)
    assert llm.ledger.entries[-1].error and llm.ledger.entries[-1].role == "judge"


async def test_truncated_reply_is_not_cached_and_is_a_parse_error(tmp_path: Path) -> None:
    llm, backend = _llm(tmp_path)
    backend._send_orig = backend._send  # type: ignore[attr-defined]

    async def cut(request: CompletionRequest) -> Completion:
        return Completion(text='{"a": 1', finish_reason="length", usage=Usage(output_tokens=5))

    backend._send = cut  # type: ignore[method-assign]
    with pytest.raises(ParseError, match="cut off"):
        await llm.ask_model("reflect", MSG, ReflectReply)
    assert llm.store is not None
    key = llm.request(MSG, json_schema=ReflectReply.json_schema()).cache_key("scripted")
    assert llm.store.cached(key) is None


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"a": 1', "```json\n{broken\n```"])
def test_malformed_replies_are_parse_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse_json_reply(Completion(text=text, finish_reason="stop"))


def test_fenced_json_is_accepted() -> None:
    assert parse_json_reply(Completion(text='```json\n{"a": 1}\n```')) == {"a": 1}


def test_price_of_counts_cached_tokens_at_their_own_price() -> None:
    prices = {"p:m": Price(input=2.0, output=4.0, cached_input=0.5)}
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cached_tokens=400_000)
    assert price_of(prices, "p", "m", usage) == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.5 * 4)
    assert price_of(prices, "p", "other", usage) == 0.0


def test_store_survives_reopen_and_rejects_a_newer_schema(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.cache("k", Completion(text="x"))
    store.close()
    store = Store(tmp_path / "s.db")
    assert store.cached("k") is not None and store.cached("k").text == "x"  # type: ignore[union-attr]
    store._db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    store.close()
    from skillsleep.core.shared.errors import ConfigError

    with pytest.raises(ConfigError, match="newer skillsleep"):
        Store(tmp_path / "s.db")


def test_garbage_state_db_is_a_clear_error(tmp_path: Path) -> None:
    from skillsleep.core.shared.errors import ConfigError

    (tmp_path / "s.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match=r"is damaged .*every harvested .*skillsleep doctor --repair"):
        Store(tmp_path / "s.db")


def test_a_state_db_that_cannot_be_used_is_not_called_damaged(tmp_path: Path) -> None:
    from skillsleep.core.shared.errors import SkillsleepError, StateDamaged

    (tmp_path / "s.db").mkdir()  # SQLite cannot open a folder: not damage, so no repair advice
    with pytest.raises(SkillsleepError, match="cannot be used .*permissions") as err:
        Store(tmp_path / "s.db")
    assert not isinstance(err.value, StateDamaged)


async def test_identical_requests_in_flight_share_one_backend_call(tmp_path: Path) -> None:
    import asyncio

    backend = ScriptedBackend(BackendSettings(model="m"), lambda r: "same")
    llm = LLM(backend, ledger=Ledger())
    results = await asyncio.gather(*(llm.ask("target", MSG) for _ in range(5)))
    assert [r.text for r in results] == ["same"] * 5
    assert len(backend.requests) == 1
    assert sum(e.cache_hit for e in llm.ledger.entries) == 4


async def test_a_shared_failure_reaches_every_waiter(tmp_path: Path) -> None:
    import asyncio

    backend = ScriptedBackend(BackendSettings(model="m"), [])
    llm = LLM(backend, ledger=Ledger())
    results = await asyncio.gather(*(llm.ask("target", MSG) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, BackendError) for r in results)
    assert len(backend.requests) == 1


class _Counting(ScriptedBackend):
    """A scripted backend that counts a prompt's tokens as one per word (`counts`: whether it can)."""

    def __init__(self, counts: bool) -> None:
        super().__init__(BackendSettings(model="m"), lambda r: "ok")
        self.counts, self.counted = counts, 0

    async def count_input(self, request: CompletionRequest) -> int | None:
        self.counted += 1
        return sum(len(m.content.split()) for m in request.messages) if self.counts else None


async def test_a_prompt_the_byte_bound_refuses_is_counted_by_a_backend_that_can_and_sent_when_it_fits() -> None:
    long = [Message(role="user", content="word " * 400)]  # 2,000 bytes, 400 words
    counting = _Counting(counts=True)
    llm = LLM(counting, ledger=Ledger(budget=Budget(tokens=1000)), store=None)
    assert (await llm.ask("reflect", MSG, max_tokens=100)).text == "ok" and counting.counted == 0  # fits: no count
    assert (await llm.ask("reflect", long, max_tokens=100)).text == "ok" and counting.counted == 1
    assert llm.ledger.spent_tokens <= 1000
    # a count that does not fit either stops the run, as the byte bound did
    with pytest.raises(BudgetExceeded, match="may need ~1100"):
        await llm.ask("reflect", [Message(role="user", content="word " * 1000)], max_tokens=100)
    # a backend that cannot count keeps the byte bound
    plain = _Counting(counts=False)
    llm = LLM(plain, ledger=Ledger(budget=Budget(tokens=1000)), store=None)
    with pytest.raises(BudgetExceeded, match="raise --budget-tokens"):
        await llm.ask("reflect", long, max_tokens=100)
    assert plain.requests == [] and plain.counted == 1
