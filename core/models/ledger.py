"""The call ledger, prices and the budget: every model call is counted, priced and capped.

What a run or a night spent is always read back from its ledger.jsonl (`read_ledger`), which
every process that worked on it appended to, so a resumed or killed one is counted in full.

Prices live in configuration (USD per million tokens, keyed `provider:model` or `provider:*`),
never in code paths that decide anything. The budget is a hard cap checked before each call
against what was spent plus what calls in flight have reserved, so concurrency cannot overshoot.
A money cap over a model without a price would be no cap at all (its calls would cost $0): it is
refused before any work (`check_money_cap`), and `Ledger.reserve` refuses such a call too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.shared.errors import BudgetExceeded, ConfigError
from skillsleep.core.shared.jsonl import read_records
from skillsleep.core.shared.records import LedgerEntry, Record, Usage


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    output: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    cached_input: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # defaults to the input price
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # defaults to the input price

    @property
    def highest_input(self) -> float:
        """The most one prompt token can cost (what a call's reservation prices its prompt at)."""
        return max(self.input, self.cached_input or 0.0, self.cache_write or 0.0)


class Budget(BaseModel):
    """Hard caps for one run or night; None means no cap."""

    model_config = ConfigDict(extra="forbid")

    tokens: int | None = Field(default=None, ge=0)
    usd: float | None = Field(default=None, ge=0)


def find_price(prices: Mapping[str, Price], provider: str, model: str) -> Price | None:
    """The price of `provider:model`, else of `provider:*`; None when neither is configured."""
    return prices.get(f"{provider}:{model}") or prices.get(f"{provider}:*")


def unpriced(prices: Mapping[str, Price], models: Iterable[tuple[str, str]]) -> list[str]:
    """The `provider:model` names among `models` (provider, model) that have no price, each once."""
    return list(dict.fromkeys(f"{p}:{m}" for p, m in models if find_price(prices, p, m) is None))


def unpriced_error(names: list[str], *, cap: str, prices_at: str, token_cap: str) -> str:
    """Why a money cap cannot be kept over models without a price, and the two ways out (no blank
    line: the cron script's one-line summary keeps all of it)."""
    one = len(names) == 1
    lines = "\n".join(f'    "{name}" = {{input = 0.0, output = 0.0}}' for name in names)
    return (
        f"{cap} is a money cap, but {', '.join(names)} {'has' if one else 'have'} no price, so "
        f"{'its' if one else 'their'} calls could not be counted against it. Give {'its' if one else 'each'} "
        f"price in USD per million tokens in and out under [prices] in {prices_at} (0 is a price: a model "
        f"on your own machine costs nothing):\n    [prices]\n{lines}\nor cap tokens instead with "
        f"{token_cap}, which needs no prices."
    )


def check_money_cap(
    budget: Budget,
    prices: Mapping[str, Price],
    models: Iterable[tuple[str, str]],
    *,
    cap: str,
    prices_at: str,
    token_cap: str,
) -> None:
    """ConfigError (before any work) when `budget` caps money and one of `models` has no price."""
    names = unpriced(prices, models) if budget.usd is not None else []
    if names:
        raise ConfigError(unpriced_error(names, cap=cap, prices_at=prices_at, token_cap=token_cap))


def price_of(prices: Mapping[str, Price], provider: str, model: str, usage: Usage) -> float:
    """Cost of one call in USD (0 when no price is configured for it)."""
    price = find_price(prices, provider, model)
    if price is None:
        return 0.0
    cached = min(usage.cached_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - cached)
    cached_price = price.input if price.cached_input is None else price.cached_input
    write_price = price.input if price.cache_write is None else price.cache_write
    fresh = usage.input_tokens - cached - written
    return (
        fresh * price.input + cached * cached_price + written * write_price + usage.output_tokens * price.output
    ) / 1_000_000


def price_bound(prices: Mapping[str, Price], provider: str, model: str, estimate: Usage) -> float:
    """The most a call of `estimate` tokens can cost: every prompt token at the highest rate."""
    price = find_price(prices, provider, model)
    if price is None:
        return 0.0
    return (estimate.input_tokens * price.highest_input + estimate.output_tokens * price.output) / 1_000_000


class RoleUsage(Record):
    """Model calls of one role (cache hits are not calls and cost nothing)."""

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    errors: int = 0


class Ledger:
    """Totals of every call of a run, by role; enforces the budget before each call."""

    def __init__(
        self,
        *,
        budget: Budget | None = None,
        prices: dict[str, Price] | None = None,
        sinks: list[Callable[[LedgerEntry], None]] | None = None,
        spent_tokens: int = 0,
        spent_usd: float = 0.0,
    ) -> None:
        self.budget = budget or Budget()
        self.prices = prices or {}
        self.sinks = sinks or []
        self.entries: list[LedgerEntry] = []
        self.spent_tokens = spent_tokens  # carried over from before a resume
        self.spent_usd = spent_usd
        self._reserved_tokens = 0
        self._reserved_usd = 0.0
        self._in_flight = 0  # reservations held; at 0 the sums restart at exactly 0 (no float drift)

    def fits(self, provider: str, model: str, estimate: Usage) -> bool:
        """Whether a call of `estimate` fits what is left of the budget on its own (calls in
        flight aside); a model with no price fits a money cap here (`reserve` refuses it)."""
        tokens_left = self.budget.tokens is None or self.spent_tokens + estimate.total <= self.budget.tokens
        usd = price_bound(self.prices, provider, model, estimate) if find_price(self.prices, provider, model) else 0.0
        return tokens_left and (self.budget.usd is None or self.spent_usd + usd <= self.budget.usd)

    def reserve(self, provider: str, model: str, estimate: Usage) -> tuple[int, float] | None:
        """Claim room for a call about to be made (its pessimistic estimate).

        BudgetExceeded when the call does not fit the budget even alone; None when it fits, but
        not beside the calls in flight (wait for one to finish and ask again: their actual usage
        is usually far below their estimate, so concurrency never ends a run early)."""
        tokens = estimate.total
        usd = price_bound(self.prices, provider, model, estimate)
        cap_t, cap_u = self.budget.tokens, self.budget.usd
        if cap_u is not None and find_price(self.prices, provider, model) is None:  # never a silent $0
            raise ConfigError(
                unpriced_error(
                    [f"{provider}:{model}"],
                    cap="--budget-usd",
                    prices_at="config.toml (or the run config)",
                    token_cap="--budget-tokens",
                )
            )
        if cap_t is not None and self.spent_tokens + tokens > cap_t:
            raise BudgetExceeded(
                f"token budget reached: {self.spent_tokens} of {cap_t} tokens spent and the next call "
                f"may need ~{tokens}; raise --budget-tokens to go on."
            )
        if cap_u is not None and self.spent_usd + usd > cap_u:
            raise BudgetExceeded(
                f"money budget reached: ${self.spent_usd:.4f} of ${cap_u:.4f} spent and the next call "
                f"may cost ~${usd:.4f}; raise --budget-usd to go on."
            )
        if (cap_t is not None and self.spent_tokens + self._reserved_tokens + tokens > cap_t) or (
            cap_u is not None and self.spent_usd + self._reserved_usd + usd > cap_u
        ):
            return None
        self._reserved_tokens += tokens
        self._reserved_usd += usd
        self._in_flight += 1
        return tokens, usd

    def release(self, reservation: tuple[int, float]) -> None:
        self._in_flight -= 1
        self._reserved_tokens -= reservation[0]
        self._reserved_usd -= reservation[1]
        if self._in_flight <= 0:
            self._in_flight, self._reserved_tokens, self._reserved_usd = 0, 0, 0.0

    def record(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)
        if not entry.cache_hit:
            self.spent_tokens += entry.usage.total
            self.spent_usd += entry.cost_usd
        for sink in self.sinks:
            sink(entry)

    @classmethod
    def of(cls, entries: Iterable[LedgerEntry]) -> Ledger:
        """The totals of recorded entries (no budget): a night's or a run's whole ledger."""
        ledger = cls()
        for entry in entries:
            ledger.record(entry)
        return ledger

    def cost(self, provider: str, model: str, usage: Usage) -> float:
        return price_of(self.prices, provider, model, usage)

    def priced(self, provider: str, model: str) -> bool:
        """Whether calls to `provider:model` have a price (0 is one: local and scripted models)."""
        return find_price(self.prices, provider, model) is not None

    def unpriced_calls(self) -> dict[str, dict[str, int]]:
        """Per `provider:model` whose calls had no price (each counted as $0, not known to be free):
        calls and tokens in and out."""
        out: dict[str, dict[str, int]] = {}
        for e in self.entries:
            if e.unpriced and not e.cache_hit:
                row = out.setdefault(f"{e.provider}:{e.model}", {"calls": 0, "input_tokens": 0, "output_tokens": 0})
                row["calls"] += 1
                row["input_tokens"] += e.usage.input_tokens
                row["output_tokens"] += e.usage.output_tokens
        return out

    @property
    def calls_made(self) -> int:
        """Calls that reached a backend (cache hits excluded)."""
        return sum(1 for e in self.entries if not e.cache_hit)

    @property
    def cache_hits(self) -> int:
        return sum(1 for e in self.entries if e.cache_hit)

    def by_role(self) -> dict[str, dict[str, float]]:
        """Per role: calls, cache hits, tokens in / out / cached, cost."""
        out: dict[str, dict[str, float]] = defaultdict(
            lambda: {
                "calls": 0,
                "cache_hits": 0,
                "input_tokens": 0,
                "output_tokens": 0,
                "cached_tokens": 0,
                "cost_usd": 0.0,
                "errors": 0,
            }
        )
        for e in self.entries:
            row = out[e.role]
            row["cache_hits" if e.cache_hit else "calls"] += 1
            row["errors"] += 1 if e.error else 0
            if not e.cache_hit:
                row["input_tokens"] += e.usage.input_tokens
                row["output_tokens"] += e.usage.output_tokens
                row["cached_tokens"] += e.usage.cached_tokens
                row["cost_usd"] += e.cost_usd
        return dict(out)

    def usage_by_role(self) -> dict[str, RoleUsage]:
        """`by_role()` as records."""
        return {role: RoleUsage.model_validate(row) for role, row in self.by_role().items()}


def spent_before(path: Path, prices: Mapping[str, Price]) -> tuple[int, float]:
    """(tokens, USD) the earlier invocations of a run or night spent, from its ledger.jsonl (a
    killed one's calls after its last saved state included): what a resumed one's ledger starts at,
    so its budget covers them all. A call that had no price then is priced with `prices` now."""
    tokens, usd = 0, 0.0
    for e in read_ledger(path).entries:
        if not e.cache_hit:
            tokens += e.usage.total
            usd += price_of(prices, e.provider, e.model, e.usage) if e.unpriced else e.cost_usd
    return tokens, usd


def read_ledger(path: Path) -> Ledger:
    """Every call recorded in a ledger.jsonl (every invocation of a run or night, resumes and
    killed processes included); a line torn by a kill is skipped."""
    return Ledger.of(read_records(path, LedgerEntry)[0])
