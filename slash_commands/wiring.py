"""Turn configuration plus the environment into engine objects (the only place env is read).

Paths: `SKILLSLEEP_HOME` overrides every state path (state.db, model cache); otherwise the
platform's user data / cache directories are used.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from skillsleep.core.backends.base import Backend, BackendSettings, RetryPolicy
from skillsleep.core.backends.registry import create_backend, parse_spec, provider_infos
from skillsleep.core.config import ModelSection
from skillsleep.core.errors import ConfigError, UnknownNameError


def data_dir() -> Path:
    home = os.environ.get("SKILLSLEEP_HOME")
    return Path(home) if home else Path(platformdirs.user_data_dir("skillsleep"))


def cache_dir() -> Path:
    home = os.environ.get("SKILLSLEEP_HOME")
    return Path(home) / "cache" if home else Path(platformdirs.user_cache_dir("skillsleep"))


def state_db() -> Path:
    return data_dir() / "state.db"


def backend_settings(provider: str, model: str, section: ModelSection | None = None) -> BackendSettings:
    """Settings for a provider: key and base URL from the environment unless the config sets them."""
    infos = {i.name: i for i in provider_infos()}
    if provider not in infos:
        raise UnknownNameError("provider", provider, list(infos))
    info = infos[provider]
    if section is not None and section.thinking and not info.supports_thinking:
        with_thinking = [i.name for i in infos.values() if i.supports_thinking]
        raise ConfigError(
            f"thinking = true has no effect on the {provider} backend (only on: {', '.join(with_thinking)}); "
            "remove it from the config"
        )
    key = os.environ.get(info.key_env) if info.key_env else None
    base_url = (section.base_url if section else "") or (
        os.environ.get(info.base_url_env) if info.base_url_env else None
    ) or info.default_base_url
    options: dict[str, str | int | float | bool] = {"cache_dir": str(cache_dir())}
    if section is None:
        return BackendSettings(model=model, api_key=key, base_url=base_url, options=options)
    return BackendSettings(
        model=model,
        api_key=key,
        base_url=base_url,
        concurrency=section.concurrency or (1 if provider == "local" else 8),
        retry=RetryPolicy.model_validate(section.retry.model_dump()),
        thinking=section.thinking,
        options=options,
    )


def make_backend(section: ModelSection) -> Backend:
    """A backend for a `[target]` / `[optimizer]` / `[judge]` section."""
    provider, model = parse_spec(section.backend)
    return create_backend(section.backend, backend_settings(provider, model, section))
