"""`skillsleep backends` and `skillsleep harnesses`: what can be used here, and how to configure the rest
(the providers' checks are listings.py's `BackendCheck`, the harnesses' the registry's `HarnessStatus`)."""

from __future__ import annotations

import asyncio
import json

import click

from skillsleep.slash_commands.guard import guard

__all__ = ["backends", "harnesses"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a list of provider objects as JSON.")
@guard(state=False)
def backends(as_json: bool) -> None:
    """List every model provider, whether it is configured here, and how to configure it."""
    from skillsleep.slash_commands.listings import list_backends

    rows = asyncio.run(list_backends())
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    for r in rows:
        mark = "ok " if r.configured else "-- "
        click.echo(f"{mark}{r.name:<11} {r.reason}")
        if not r.configured and r.how_to_configure not in r.reason:
            click.echo(f"    {r.how_to_configure}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a list of harness objects as JSON.")
@guard(state=False)
def harnesses(as_json: bool) -> None:
    """List every harness (agent to replay tasks in): installed, version, usable, and why not.

    A CLI harness is configured in the config file, e.g. `[harness.codex] command = "/opt/codex"`."""
    from skillsleep.harnesses import registry
    from skillsleep.slash_commands.wiring import harness_settings

    rows = registry.statuses(harness_settings())
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    for r in rows:
        mark = "ok " if r.usable else "-- "
        version = r.version or ("not installed" if not r.installed else "version unknown")
        click.echo(f"{mark}{r.name:<12} {version:<16} {r.reason}")
