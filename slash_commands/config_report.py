"""What `skillsleep config` shows (config_cmd.py is its click command and text): `ConfigResult`, the
config file's path and every effective setting with where it came from, from `config_result()`."""

from __future__ import annotations

from skillsleep.core.night.user_config import UserConfig
from skillsleep.slash_commands.next_night import NextNight, of_settings
from skillsleep.slash_commands.price_settings import PriceSetting, effective_prices
from skillsleep.slash_commands.wiring import (
    EffectiveSettings,
    ScalarSetting,
    effective_settings,
    harness_settings,
    user_config,
)

__all__ = ["ConfigResult", "config_result"]


class ConfigResult(EffectiveSettings):
    """What `config --json` prints: the effective settings of every command (EffectiveSettings),
    then `[executor]` and `[prices]`, each key with where it came from, and which harness, model and
    token cap a night started now would use and why (`next_night`)."""

    executor: dict[str, ScalarSetting]
    prices: dict[str, PriceSetting]  # provider:model (or provider:*) → USD per million tokens
    next_night: NextNight


def config_result() -> ConfigResult:
    """The settings as the file, the environment and the defaults give them; a config file with a
    mistake in it is shown, not refused (this is where a user looks for a typo)."""
    settings = effective_settings(strict_file=False)
    cfg = user_config(settings.config_file) if settings.config_file.exists else UserConfig()
    if settings.config_file.exists:
        harness_settings(cfg)  # every [harness.<name>] table too: this is where a user looks for a typo
    return ConfigResult(
        **dict(settings),
        executor=_executor(cfg),
        prices=effective_prices(cfg),
        next_night=of_settings(settings.sleep, settings.agent),
    )


def _executor(cfg: UserConfig) -> dict[str, ScalarSetting]:
    """`[executor]`, each key from the file or the default (`--executor` on `train`, `eval` and
    `run` picks the kind for one command; no environment variable sets any of them)."""
    section, out = cfg.executor, {}
    for key in type(section).model_fields:
        value = getattr(section, key)
        in_file = key in section.model_fields_set
        out[key] = ScalarSetting(
            value=value, source="file" if in_file else "default", layers={"file": value} if in_file else {}
        )
    return out
