"""What `skillsleep cost` reports (cost_cmd.py is its click command and text): `CostResult`, what the
nights spent by night, this month and by role, read by `cost()` from each night's own ledger.jsonl,
which every process that worked on the night appended to, so a night that was killed or resumed
counts in full and one whose record cannot be read counts too. Reads only: no config, backend or
lock; an empty data folder is not created. A night whose model is an agent (`claude-code`, `codex`)
counts the same way, by role and night in tokens; its dollars are those the agent's CLI reported,
and its calls without them are named as subscription tokens, not as a price to give."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from skillsleep.core.models.ledger import Ledger, RoleUsage
from skillsleep.core.night.nights import Nights, month_start
from skillsleep.core.night.record import NightRecord
from skillsleep.core.report.result import NightUsage
from skillsleep.core.shared.records import Record
from skillsleep.slash_commands.liveness import night_state

__all__ = ["COUNTED", "RECENT", "CostResult", "cost"]

RECENT = 5  # nights listed besides this month's
COUNTED = (
    "every model call of the nights (`skillsleep run`), from each night's ledger.jsonl: a night that was "
    "killed or resumed counts in full, a cache hit costs nothing; `skillsleep train` and `eval` runs are not "
    "nights and are not counted here (a train run's calls are in its run directory's ledger.jsonl)"
)


class UnpricedUse(Record):
    """The calls of one provider:model that had no price (each counted as $0), and their tokens."""

    calls: int
    input_tokens: int
    output_tokens: int


class Spent(Record):
    """Calls, tokens and cost of a ledger; `unpriced` the calls whose model had no price (by
    provider:model), so `cost_usd` is only the least they cost (`cost_at_least`)."""

    calls: int
    cache_hits: int
    tokens: int
    cost_usd: float
    cost_at_least: bool
    unpriced: dict[str, UnpricedUse]

    @classmethod
    def of(cls, ledger: Ledger) -> Spent:
        unpriced = ledger.unpriced_calls()
        return cls(
            calls=ledger.calls_made,
            cache_hits=ledger.cache_hits,
            tokens=ledger.spent_tokens,
            cost_usd=round(ledger.spent_usd, 6),
            cost_at_least=bool(unpriced),
            unpriced={name: UnpricedUse.model_validate(use) for name, use in unpriced.items()},
        )


class NightOf(Record):
    """Which night a row of `cost` is: its number, date, skill and state."""

    night: int
    date: str | None  # None: nothing says when it ran
    skill: str
    status: str  # running, finished, stopped, died, or unreadable (its record cannot be read)
    this_month: bool


class NightCost(Spent, NightOf):
    """One night's row: which night (NightOf's fields come first), then what it spent."""


class RoleCost(RoleUsage):
    """One role's calls this month, with those whose model had no price."""

    unpriced_calls: int


class MonthOf(Record):
    since: str  # ISO: the first day of the month, 00:00 UTC


class MonthCost(Spent, MonthOf):
    """This month's spend: since when (MonthOf's field comes first), in all, and by role."""

    by_role: dict[str, RoleCost]


class CostResult(Record):
    """What `skillsleep cost` prints (`--json`), and its text and markdown are rendered from."""

    data_dir: str
    counted: str  # what is counted, in words
    month: MonthCost
    nights: list[NightCost]  # this month's and the last RECENT
    nights_in_all: int
    prices_at: str  # the config file where [prices] go
    # the providers that are an agent's headless mode (claude-code, codex): their calls count in tokens
    # against the user's subscription, in dollars only where the agent's CLI reports them
    agents: list[str]


def _night_row(nights: Nights, folder: Path, records: dict[int, NightRecord], month: datetime) -> NightCost:
    night = int(folder.name)
    ledger, r = nights.ledger(night), records.get(night)
    started = r.started if r else min((e.ts for e in ledger.entries), default=None)
    spent = Spent.of(ledger)
    return NightCost(
        night=night,
        date=started.date().isoformat() if started else None,
        skill=(r.skill_name or r.skill_path) if r else "",
        status=night_state(r) if r else "unreadable",
        this_month=any(e.ts >= month for e in ledger.entries) or bool(started and started >= month),
        **spent.model_dump(),
    )


def cost(data: Path | None = None, *, now: datetime | None = None) -> CostResult:
    """Spend this month (in all and by role) and by night: this month's nights and the last ones."""
    from skillsleep.slash_commands.night_agent import agent_models
    from skillsleep.slash_commands.wiring import config_file, data_dir

    nights = Nights(Path(data) if data is not None else data_dir())
    month = month_start(now)
    records = {r.night: r for r in nights.list()}
    rows = [_night_row(nights, folder, records, month) for folder in nights.folders()]
    spent = nights.ledger_since(month)
    by_role = {
        role: RoleCost(
            **usage.model_dump(),
            unpriced_calls=sum(1 for e in spent.entries if e.role == role and e.unpriced and not e.cache_hit),
        )
        for role, usage in NightUsage.from_ledger(spent.by_role()).by_role.items()
    }
    return CostResult(
        data_dir=str(nights.root),
        counted=COUNTED,
        month=MonthCost(since=month.isoformat(), **Spent.of(spent).model_dump(), by_role=by_role),
        nights=[row for i, row in enumerate(rows) if row.this_month or i >= len(rows) - RECENT],
        nights_in_all=len(rows),
        prices_at=str(config_file().path),
        agents=sorted(agent_models().values()),
    )
