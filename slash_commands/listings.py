"""What `skillsleep backends` lists (listings_cmd.py holds it and `harnesses`): `BackendCheck`, each
model provider with whether it is usable here and how to configure it, from `list_backends()`."""

from __future__ import annotations

import asyncio

from skillsleep.core.models.backends.base import ProviderInfo
from skillsleep.core.shared.records import Record

__all__ = ["BackendCheck", "list_backends"]


class BackendCheck(Record):
    """One provider as `backends --json` lists it."""

    name: str
    configured: bool  # usable with the settings here (its key set, its server answering)
    reason: str  # why, or why not
    how_to_configure: str
    models: list[str]  # known model names ([]: any name)
    default_model: str | None
    key_env: str | None  # the environment variable of its API key


async def list_backends() -> list[BackendCheck]:
    """Every provider with whether it is usable here and how to configure it (checked at once)."""
    from skillsleep.core.models.backends import registry
    from skillsleep.harnesses.providers import register_providers

    register_providers()
    return list(await asyncio.gather(*(_check(info) for info in registry.provider_infos())))


async def _check(info: ProviderInfo) -> BackendCheck:
    from skillsleep.core.models.backends import registry
    from skillsleep.slash_commands.wiring import backend_settings

    model = info.default_model or (info.models[0] if info.models else "")
    configured, reason = await registry.check_provider(info.name, backend_settings(info.name, model))
    return BackendCheck(
        name=info.name,
        configured=configured,
        reason=reason,
        how_to_configure=info.how_to_configure,
        models=info.models,
        default_model=info.default_model,
        key_env=info.key_env,
    )
