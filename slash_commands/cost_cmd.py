"""`skillsleep cost` (`/sleep cost`): what the nights spent, by night, this month and by role.

Read from each night's own ledger.jsonl, which every process that worked on the night appended
to, so a night that was killed or resumed counts in full and one whose record cannot be read
counts too. Reads only: no config, backend or lock; an empty data folder is not created.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from skillsleep.core.shared.display import counted, md_line, plain_line
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import output_options, resolve, show

if TYPE_CHECKING:
    from skillsleep.core.models.ledger import Ledger

Data = dict[str, Any]

RECENT = 5  # nights listed besides this month's
COUNTED = (
    "every model call of the nights (`skillsleep run`), from each night's ledger.jsonl: a night that was "
    "killed or resumed counts in full, a cache hit costs nothing; `skillsleep train` and `eval` runs are not "
    "nights and are not counted here (a train run's calls are in its run directory's ledger.jsonl)"
)


def _totals(ledger: Ledger) -> Data:
    """Calls, tokens and cost; `unpriced` the calls whose model had no price (by provider:model),
    so `cost_usd` is only the least they cost (`cost_at_least`)."""
    unpriced = ledger.unpriced_calls()
    return {
        "calls": ledger.calls_made,
        "cache_hits": ledger.cache_hits,
        "tokens": ledger.spent_tokens,
        "cost_usd": round(ledger.spent_usd, 6),
        "cost_at_least": bool(unpriced),
        "unpriced": unpriced,
    }


def _usd(row: Data) -> str:
    """A cost as shown: "at least $…" when calls without a price are in it (counted as $0)."""
    return f"{'at least ' if row['cost_at_least'] else ''}${row['cost_usd']:.4f}"


def cost(data: Path | None = None, *, now: datetime | None = None) -> Data:
    """Spend this month (in all and by role) and by night: this month's nights and the last ones."""
    from skillsleep.core.night.nights import Nights, month_start
    from skillsleep.slash_commands.liveness import night_state
    from skillsleep.slash_commands.wiring import config_file, data_dir

    nights = Nights(Path(data) if data is not None else data_dir())
    month = month_start(now)
    records = {r.night: r for r in nights.list()}
    rows = []
    for folder in nights.folders():
        night = int(folder.name)
        ledger, r = nights.ledger(night), records.get(night)
        started = r.started if r else min((e.ts for e in ledger.entries), default=None)
        rows.append(
            {
                "night": night,
                "date": started.date().isoformat() if started else None,
                "skill": (r.skill_name or r.skill_path) if r else "",
                "status": night_state(r) if r else "unreadable",
                "this_month": any(e.ts >= month for e in ledger.entries) or bool(started and started >= month),
                **_totals(ledger),
            }
        )
    spent = nights.ledger_since(month)
    by_role = spent.by_role()
    for role, row in by_role.items():  # calls without a price: the role's cost is only the least it was
        row["unpriced_calls"] = sum(1 for e in spent.entries if e.role == role and e.unpriced and not e.cache_hit)
    return {
        "data_dir": str(nights.root),
        "counted": COUNTED,
        "month": {"since": month.isoformat(), **_totals(spent), "by_role": by_role},
        "nights": [row for i, row in enumerate(rows) if row["this_month"] or i >= len(rows) - RECENT],
        "nights_in_all": len(rows),
        "prices_at": str(config_file().path),
    }


def _unpriced_lines(c: Data) -> list[str]:
    """The models this month's calls had no price for, with their tokens and how to give one."""
    unpriced = c["month"]["unpriced"]
    if not unpriced:
        return []
    lines = [
        "",
        "Not priced (each call counted as $0, so the cost shown is the least it was):",
        "",
        *(
            f"- {plain_line(name)}: {counted(u['calls'], 'call')}, {u['input_tokens']:,} tokens in, "
            f"{u['output_tokens']:,} out"
            for name, u in sorted(unpriced.items())
        ),
        "",
        f"Give each its price in USD per million tokens under [prices] in {c['prices_at']} "
        "(0 is a price: a model on your own machine costs nothing); calls made from then on are counted:",
        "",
        "    [prices]",
        *(f"    {plain_line(json.dumps(name))} = {{input = 0.0, output = 0.0}}" for name in sorted(unpriced)),
    ]
    return lines


def cost_text(c: Data, plain: bool) -> str:
    """The spend as markdown tables (text from transcripts escaped), or plain for a terminal."""
    show = plain_line if plain else md_line
    m = c["month"]
    out = [
        f"## skillsleep cost — this month (since {m['since'][:10]}): {m['tokens']:,} tokens, "
        f"{_usd(m)}, {counted(m['calls'], 'call')} ({m['cache_hits']:,} from the cache)",
        *_unpriced_lines(c),
        "",
    ]
    if c["nights"]:
        more = f", of {c['nights_in_all']}" if len(c["nights"]) < c["nights_in_all"] else ""
        out += [
            f"By night (this month's and the last {RECENT}{more}):",
            "",
            "| night | date | skill | status | calls | tokens | cost |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {n['night']} | {n['date'] or '—'} | {show(n['skill']) or '—'} | {n['status']} | {n['calls']} "
            f"| {n['tokens']:,} | {_usd(n)} |"
            for n in c["nights"]
        ]
    else:
        out.append("no nights yet")
    if m["by_role"]:
        out += [
            "",
            "By role this month:",
            "",
            "| role | calls | cache hits | tokens in | tokens out | cost |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {role} | {u['calls']} | {u['cache_hits']} | {u['input_tokens']:,} | {u['output_tokens']:,} "
            f"| {_usd({**u, 'cost_at_least': u['unpriced_calls'] > 0})} |"
            for role, u in sorted(m["by_role"].items())
        ]
    return "\n".join([*out, "", f"Counted: {c['counted']}."])


@click.command("cost")
@output_options("Print the spend as one JSON object.")
@guard(state="read")
def cost_(as_json: bool, fmt: str | None) -> None:
    """What the nights spent: this month in all and by role, and by night (from their ledgers).

    Reads only: needs no config file, backend or lock."""
    out = resolve(fmt, as_json)
    show(cost(), out, cost_text, lambda c, _prefix: cost_text(c, False))
