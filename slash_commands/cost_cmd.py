"""`skillsleep cost` (`/sleep cost`): the click command and the spend as markdown tables or plain
text; what it reports is cost_report.py's `CostResult`, read from each night's own ledger.jsonl.
Reads only: no config, backend or lock; an empty data folder is not created.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from skillsleep.core.shared.display import counted, md_line, plain_line
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import output_options, resolve, show

if TYPE_CHECKING:
    from skillsleep.slash_commands.cost_report import CostResult, UnpricedUse


def _usd(cost_usd: float, at_least: bool) -> str:
    """A cost as shown: "at least $…" when calls without a price are in it (counted as $0)."""
    return f"{'at least ' if at_least else ''}${cost_usd:.4f}"


def _unpriced_lines(c: CostResult) -> list[str]:
    """The models this month's calls had no price for, with their tokens and how to give one; an
    agent's headless mode (its CLI reported no dollars) is named as subscription tokens instead."""
    agents = {name: u for name, u in c.month.unpriced.items() if name.partition(":")[0] in c.agents}
    unpriced = {name: u for name, u in c.month.unpriced.items() if name not in agents}
    lines = []
    if agents:
        lines += [
            "",
            "Agents as the model (their CLI reported no dollars: these tokens count against your subscription):",
            "",
            *(_use_line(name, u) for name, u in sorted(agents.items())),
        ]
    if not unpriced:
        return lines
    return [
        *lines,
        "",
        "Not priced (each call counted as $0, so the cost shown is the least it was):",
        "",
        *(_use_line(name, u) for name, u in sorted(unpriced.items())),
        "",
        f"Give each its price in USD per million tokens under [prices] in {c.prices_at} "
        "(0 is a price: a model on your own machine costs nothing); calls made from then on are counted:",
        "",
        "    [prices]",
        *(f"    {plain_line(json.dumps(name))} = {{input = 0.0, output = 0.0}}" for name in sorted(unpriced)),
    ]


def _use_line(name: str, u: UnpricedUse) -> str:
    return f"- {plain_line(name)}: {counted(u.calls, 'call')}, {u.input_tokens:,} tokens in, {u.output_tokens:,} out"


def cost_text(c: CostResult, plain: bool) -> str:
    """The spend as markdown tables (text from transcripts escaped), or plain for a terminal."""
    from skillsleep.slash_commands.cost_report import RECENT

    show = plain_line if plain else md_line
    m = c.month
    out = [
        f"## skillsleep cost — this month (since {m.since[:10]}): {m.tokens:,} tokens, "
        f"{_usd(m.cost_usd, m.cost_at_least)}, {counted(m.calls, 'call')} ({m.cache_hits:,} from the cache)",
        *_unpriced_lines(c),
        "",
    ]
    if c.nights:
        more = f", of {c.nights_in_all}" if len(c.nights) < c.nights_in_all else ""
        out += [
            f"By night (this month's and the last {RECENT}{more}):",
            "",
            "| night | date | skill | status | calls | tokens | cost |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {n.night} | {n.date or '—'} | {show(n.skill) or '—'} | {n.status} | {n.calls} "
            f"| {n.tokens:,} | {_usd(n.cost_usd, n.cost_at_least)} |"
            for n in c.nights
        ]
    else:
        out.append("no nights yet")
    if m.by_role:
        out += [
            "",
            "By role this month:",
            "",
            "| role | calls | cache hits | tokens in | tokens out | cost |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {role} | {u.calls} | {u.cache_hits} | {u.input_tokens:,} | {u.output_tokens:,} "
            f"| {_usd(u.cost_usd, u.unpriced_calls > 0)} |"
            for role, u in sorted(m.by_role.items())
        ]
    return "\n".join([*out, "", f"Counted: {c.counted}."])


@click.command("cost")
@output_options("Print the spend as one JSON object.")
@guard(state="read")
def cost_(as_json: bool, fmt: str | None) -> None:
    """What the nights spent: this month in all and by role, and by night (from their ledgers).

    Reads only: needs no config file, backend or lock."""
    from skillsleep.slash_commands.cost_report import cost

    out = resolve(fmt, as_json)
    show(cost(), out, cost_text, lambda c, _prefix: cost_text(c, False))
