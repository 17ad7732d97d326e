"""Backends by name: `provider:model` specs, the provider table, its prices, and "is it configured?" checks.

Built-in providers (one line each in `builtin.BUILT_IN`) are registered through the same
`register()` that third-party packages reach through the `skillsleep.backends` entry-point group
(an entry point names either a backend class or a `register_backends(register)` hook). Everything
about a provider is its backend class's record (`info`: a `ProviderInfo`), its prices included:
`default_prices()` are every provider's, the defaults of `[prices]`. An unknown provider or model
is an `UnknownNameError` listing the known ones; nothing ever falls back to the scripted backend,
which is chosen only as `scripted:<script.json>`. Importing this module imports no vendor SDK.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from skillsleep.core.models.backends.base import Backend, BackendSettings, BaseBackend, ProviderInfo
from skillsleep.core.models.backends.builtin import BUILT_IN
from skillsleep.core.models.ledger import Price
from skillsleep.core.models.plugins import PluginKind, register_plugins
from skillsleep.core.shared.errors import ConfigError, UnknownNameError

ENTRY_POINT_GROUP = "skillsleep.backends"


@dataclass(frozen=True)
class Provider:
    """A registered provider: its record and its backend class (which builds it: `cls.create`)."""

    info: ProviderInfo
    cls: type[BaseBackend]


PROVIDERS: dict[str, Provider] = {}
# Set to False (tests do) to skip third-party backends registered through entry points.
LOAD_ENTRY_POINTS = True
_entry_points_loaded = False
PLUGINS = PluginKind("backend", "a backend class", lambda obj: isinstance(obj, type) and issubclass(obj, BaseBackend))


def register(cls: type[BaseBackend], *, replace: bool = False) -> None:
    """Make a backend class available by its `info.name`."""
    info = cls.info
    if info.name in PROVIDERS and not replace and PROVIDERS[info.name].cls is not cls:
        raise ConfigError(f"a backend named {info.name!r} is already registered; pick another name")
    PROVIDERS[info.name] = Provider(info=info, cls=cls)


def _built_in(name: str, ref: str) -> type[BaseBackend]:
    """The backend class of a line of `builtin.BUILT_IN`, checked to be the provider it names."""
    module, _, attribute = ref.partition(":")
    cls = getattr(importlib.import_module(module), attribute)
    if not (isinstance(cls, type) and issubclass(cls, BaseBackend) and cls.info.name == name):
        raise ConfigError(f"builtin.BUILT_IN: {ref} is not the backend class of the {name!r} provider")
    return cls


def _load_entry_points() -> None:
    global _entry_points_loaded
    if LOAD_ENTRY_POINTS and not _entry_points_loaded:
        _entry_points_loaded = True
        register_plugins(entry_points(group=ENTRY_POINT_GROUP), PLUGINS, register)


def _providers() -> dict[str, Provider]:
    _load_entry_points()
    return PROVIDERS


def get_provider(name: str) -> Provider:
    """The provider registered as `name`, or UnknownNameError listing the known ones."""
    providers = _providers()
    if name not in providers:
        raise UnknownNameError("backend", name, list(providers))
    return providers[name]


def provider_infos() -> list[ProviderInfo]:
    """What every registered provider needs, in registration order."""
    return [p.info for p in _providers().values()]


def default_prices() -> dict[str, Price]:
    """Every provider's built-in prices as `[prices]` keys (`provider:model`, `provider:*`), in
    registration order: what config.toml's `[prices]` goes over."""
    return {f"{info.name}:{model}": price for info in provider_infos() for model, price in info.prices.items()}


def parse_spec(spec: str) -> tuple[str, str]:
    """`"provider:model"` → (provider, model); without a model the provider's default is used."""
    provider_name, _, model = spec.strip().partition(":")
    if not provider_name:
        raise ConfigError(f"bad backend spec {spec!r}: write provider:model, e.g. deepseek:deepseek-v4-flash")
    provider = get_provider(provider_name)
    if model:
        return provider_name, model
    if provider.info.default_model:
        return provider_name, provider.info.default_model
    example = "scripted:<script.json>" if provider_name == "scripted" else f"{provider_name}:<model>"
    raise ConfigError(f"the {provider_name} backend has no default model: name one, as in {example}")


def _check_model(provider: Provider, model: str) -> None:
    models = provider.info.models
    if not models or model in models:
        return
    if provider.cls.accepts_paths and Path(model).expanduser().is_absolute():
        return
    raise UnknownNameError(f"{provider.info.name} model", model, models)


def create_backend(spec: str, settings: BackendSettings | None = None, **fields: Any) -> Backend:
    """Build the backend for `spec` ("provider[:model]"); `fields` are `BackendSettings` fields."""
    provider_name, model = parse_spec(spec)
    provider = get_provider(provider_name)
    _check_model(provider, model)
    if settings is None:
        settings = BackendSettings(model=model, **fields)
    else:
        settings = settings.model_copy(update={"model": model, **fields})
    return provider.cls.create(settings)


async def check_provider(
    name: str, settings: BackendSettings | None = None, *, timeout_s: float = 2.0
) -> tuple[bool, str]:
    """Whether provider `name` looks usable with these settings, and a reason saying how to configure it."""
    provider = get_provider(name)
    info = provider.info
    settings = settings or BackendSettings(model=info.default_model or "")
    own = provider.cls.check(settings)
    if own is not None:
        return own
    custom_server = settings.base_url is not None and settings.base_url != info.default_base_url
    if info.key_required and not settings.api_key and not custom_server:
        return False, f"no API key: set {info.key_env}"
    base_url = settings.base_url or info.default_base_url
    if not base_url:
        return False, info.how_to_configure
    return await _probe(base_url.rstrip("/") + provider.cls.probe_path, info, timeout_s)


async def _probe(url: str, info: ProviderInfo, timeout_s: float) -> tuple[bool, str]:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        return False, f"cannot reach {url} ({type(exc).__name__}); is the server running? {info.how_to_configure}"
    if response.status_code >= 500:
        return False, f"{url} answered HTTP {response.status_code}; the server is up but failing"
    return True, f"{url} is reachable (HTTP {response.status_code})"


for _name, _ref in BUILT_IN.items():
    register(_built_in(_name, _ref))
