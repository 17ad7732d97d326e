"""`skillsleep backends` and `skillsleep harnesses`: what can be used here, and how to configure the rest."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from skillsleep.slash_commands.guard import guard

__all__ = ["backends", "harnesses", "list_backends"]


async def list_backends() -> list[dict[str, Any]]:
    """Every provider with whether it is usable here and how to configure it."""
    from skillsleep.core.models.backends.registry import check_provider, provider_infos
    from skillsleep.slash_commands.wiring import backend_settings

    infos = provider_infos()

    async def row(info: Any) -> dict[str, Any]:
        model = info.default_model or (info.models[0] if info.models else "")
        settings = backend_settings(info.name, model)
        configured, reason = await check_provider(info.name, settings)
        return {
            "name": info.name,
            "configured": configured,
            "reason": reason,
            "how_to_configure": info.how_to_configure,
            "models": info.models,
            "default_model": info.default_model,
            "key_env": info.key_env,
        }

    return list(await asyncio.gather(*(row(i) for i in infos)))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a list of provider objects as JSON.")
@guard(state=False)
def backends(as_json: bool) -> None:
    """List every model provider, whether it is configured here, and how to configure it."""
    rows = asyncio.run(list_backends())
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        mark = "ok " if r["configured"] else "-- "
        click.echo(f"{mark}{r['name']:<10} {r['reason']}")
        if not r["configured"] and r["how_to_configure"] not in r["reason"]:
            click.echo(f"    {r['how_to_configure']}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a list of harness objects as JSON.")
@guard(state=False)
def harnesses(as_json: bool) -> None:
    """List every harness (agent to replay tasks in): installed, version, usable, and why not.

    A CLI harness is configured in the config file, e.g. `[harness.codex] command = "/opt/codex"`."""
    from skillsleep.harnesses import registry
    from skillsleep.slash_commands.wiring import harness_settings

    rows = [s.model_dump(mode="json") for s in registry.statuses(harness_settings())]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        mark = "ok " if r["usable"] else "-- "
        version = r["version"] or ("not installed" if not r["installed"] else "version unknown")
        click.echo(f"{mark}{r['name']:<12} {version:<16} {r['reason']}")
