"""`LLM`: the one door every model call goes through — budget, response cache, backend, ledger.

Each stage asks for a completion in a *role*: target (the chat harness's replies), judge (the
rubric judge), reflect, merge, rank (it also proposes the autonomous schedule's next budget),
slow_update, meta, mine (paraphrase grouping and judge writing), relevance, dream; `Role` also
allows "schedule", which no stage asks in. The request is checked against the budget, answered
from the persistent response cache when the identical request (model, messages, parameters,
sample index) was answered before, otherwise sent to the backend; either way the ledger records
it. A stage that wants structured data calls `ask_model` with its reply model
(`core/models/replies.py`): the request carries the model's JSON schema and the reply comes back
validated, or as a `ParseError` saying what was wrong.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, TypeVar

from pydantic import ValidationError

from skillsleep.core.models.backends.base import Backend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.replies import Reply, short_error
from skillsleep.core.models.store import Store
from skillsleep.core.shared.errors import BackendError, ParseError
from skillsleep.core.shared.records import Completion, CompletionRequest, LedgerEntry, Message, Role, Usage

R = TypeVar("R", bound=Reply)

RESERVE_POLL_S = 0.02
MESSAGE_TOKENS = 8  # a message's role markers in a chat template
TEMPLATE_TOKENS = 32  # a request's own markers (start, end, the reply's header)
SCHEMA_TOKENS = 128  # with a JSON schema: the sentence asking for it (deepseek, anthropic), the format's wrapper


def estimate_usage(request: CompletionRequest) -> Usage:
    """An upper bound of a call's usage, reserved against the budget before it is sent. No token is
    shorter than one byte (byte-level BPE, SentencePiece with byte fallback: every provider's
    tokenizer here), so the UTF-8 bytes of the messages and of the JSON schema sent, with the
    template's markers, bound the input; `max_tokens` bounds the reply. When this bound does not fit
    the budget, a backend that can count the prompt (`count_input`: the embedded model) is asked
    for the exact input instead (`LLM._send`)."""
    sent = sum(len(m.content.encode()) + MESSAGE_TOKENS for m in request.messages) + TEMPLATE_TOKENS
    if request.json_schema is not None:
        sent += len(json.dumps(request.json_schema).encode()) + SCHEMA_TOKENS
    return Usage(input_tokens=sent, output_tokens=request.max_tokens)


class LLM:
    """A backend bound to a ledger, a budget and a cache; `complete()` is what stages call."""

    def __init__(
        self,
        backend: Backend,
        *,
        ledger: Ledger,
        store: Store | None = None,
        run_id: str = "",
        temperature: float = 0.0,
        max_tokens: int = 1024,
        seed: int | None = 0,
    ) -> None:
        self.backend = backend
        self.ledger = ledger
        self.store = store
        self.run_id = run_id
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self._inflight: dict[str, asyncio.Future[Completion]] = {}

    @property
    def label(self) -> str:
        return f"{self.backend.name}:{self.backend.model}"

    def request(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        sample: int = 0,
        cache_system: bool = False,
    ) -> CompletionRequest:
        """Build the request this LLM would send (also used to compute cache keys)."""
        return CompletionRequest(
            model=self.backend.model,
            messages=messages,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=max_tokens or self.max_tokens,
            json_schema=json_schema,
            seed=None if self.seed is None else self.seed + sample,
            sample=sample,
            cache_system=cache_system,
        )

    async def complete(self, role: Role, request: CompletionRequest, *, timeout_s: float | None = None) -> Completion:
        """Answer a request: cache first, then the backend; budget checked before sending.

        Identical requests in flight at the same time share one backend call."""
        key = request.cache_key(self.backend.name, self.backend.endpoint)
        hit = self.store.cached(key) if self.store else None
        if hit is None and key in self._inflight:
            hit = await asyncio.shield(self._inflight[key])
        if hit is not None:
            self.record(role, hit, cache_hit=True)
            return hit.model_copy(update={"cached": True})
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            completion = await self._send(role, request, key, timeout_s)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here, so an unshared failure is not reported twice
            raise
        else:
            future.set_result(completion)
            return completion
        finally:
            self._inflight.pop(key, None)

    async def _send(self, role: Role, request: CompletionRequest, key: str, timeout_s: float | None) -> Completion:
        estimate = estimate_usage(request)
        if not self.ledger.fits(self.backend.name, self.backend.model, estimate):
            # the byte bound would end the run; a backend that can count the prompt's tokens says
            # how many it really is (the reply is still bounded by max_tokens)
            counted = await self.backend.count_input(request)
            estimate = estimate if counted is None else Usage(input_tokens=counted, output_tokens=request.max_tokens)
        while (reservation := self.ledger.reserve(self.backend.name, self.backend.model, estimate)) is None:
            await asyncio.sleep(RESERVE_POLL_S)  # calls in flight hold the rest of the budget
        try:
            completion = await self.backend.complete(request, timeout_s=timeout_s)
        except BackendError as exc:
            self.record(role, Completion(text=""), cache_hit=False, error=str(exc))
            raise
        finally:
            self.ledger.release(reservation)
        self.record(role, completion, cache_hit=False)
        if self.store is not None and not completion.truncated:
            self.store.cache(key, completion)
        return completion

    async def ask(
        self,
        role: Role,
        messages: list[Message],
        *,
        sample: int = 0,
        max_tokens: int | None = None,
        cache_system: bool = False,
    ) -> Completion:
        """Plain-text completion in a role."""
        req = self.request(messages, sample=sample, max_tokens=max_tokens, cache_system=cache_system)
        return await self.complete(role, req)

    async def ask_model(
        self,
        role: Role,
        messages: list[Message],
        reply: type[R],
        *,
        max_tokens: int | None = None,
        cache_system: bool = False,
    ) -> R:
        """A reply of the shape `reply`, whose JSON schema the request sends. A reply cut off at the
        token limit, not a JSON object, or not of that shape is a ParseError saying why."""
        req = self.request(messages, json_schema=reply.json_schema(), max_tokens=max_tokens, cache_system=cache_system)
        data = parse_json_reply(await self.complete(role, req))
        try:
            return reply.model_validate(data)
        except ValidationError as exc:
            raise ParseError(short_error(exc)) from exc

    def record(self, role: Role, c: Completion, *, cache_hit: bool, error: str | None = None) -> None:
        """Count one answered request in the ledger (and the store's call log); a cluster's driver
        records here what its workers' calls used."""
        reported = None if cache_hit else c.cost_usd  # a provider's own figure goes before the price table
        if cache_hit:
            cost = 0.0
        elif reported is not None:
            cost = reported
        else:
            cost = self.ledger.cost(self.backend.name, self.backend.model, c.usage)
        entry = LedgerEntry(
            role=role,
            provider=self.backend.name,
            model=self.backend.model,
            usage=c.usage,
            cost_usd=cost,
            latency_s=0.0 if cache_hit else c.latency_s,
            cache_hit=cache_hit,
            error=error,
            unpriced=not cache_hit
            and reported is None
            and not self.ledger.priced(self.backend.name, self.backend.model),
        )
        self.ledger.record(entry)
        if self.store is not None and self.run_id:
            self.store.record_call(self.run_id, entry)


def parse_json_reply(completion: Completion) -> dict[str, Any]:
    """Strictly parse a JSON-object reply (one fenced ```json block is tolerated)."""
    if completion.truncated:
        raise ParseError(f"the reply was cut off at the token limit ({completion.usage.output_tokens} tokens)")
    text = completion.text.strip()
    if text.startswith("```"):
        lines = text.splitlines()
        if len(lines) >= 2 and lines[-1].strip() == "```":
            text = "\n".join(lines[1:-1])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"the reply is not valid JSON ({exc.msg} at char {exc.pos}): {text[:200]!r}") from exc
    if not isinstance(data, dict):
        raise ParseError(f"the reply is JSON but not an object: {text[:200]!r}")
    return data
