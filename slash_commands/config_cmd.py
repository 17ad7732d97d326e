"""`skillsleep config`: the config file's path and every effective setting with where it came from."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import emit

if TYPE_CHECKING:
    from skillsleep.core.night.user_config import UserConfig
    from skillsleep.slash_commands.wiring import ScalarSetting

__all__ = ["config_"]


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print the config file and the settings as JSON.")
@guard
def config_(as_json: bool) -> None:
    """Show the config file's path and every effective setting with where it came from."""
    from skillsleep.core.night.user_config import UserConfig
    from skillsleep.slash_commands.price_settings import effective_prices
    from skillsleep.slash_commands.wiring import effective_settings, harness_settings, user_config

    settings = effective_settings(strict_file=False)
    cfg = user_config(settings.config_file) if settings.config_file.exists else UserConfig()
    if settings.config_file.exists:
        harness_settings(cfg)  # every [harness.<name>] table too: this is where a user looks for a typo
    shown = settings.model_dump(mode="json")
    shown["executor"] = {key: s.model_dump(mode="json") for key, s in _executor(cfg).items()}
    shown["prices"] = {key: s.model_dump(mode="json") for key, s in effective_prices(cfg).items()}
    emit(shown, as_json, _config_text)


def _executor(cfg: UserConfig) -> dict[str, ScalarSetting]:
    """`[executor]`, each key from the file or the default (`--executor` on `train`, `eval` and
    `run` picks the kind for one command; no environment variable sets any of them)."""
    from skillsleep.slash_commands.wiring import ScalarSetting

    section, out = cfg.executor, {}
    for key in type(section).model_fields:
        value = getattr(section, key)
        in_file = key in section.model_fields_set
        out[key] = ScalarSetting(
            value=value, source="file" if in_file else "default", layers={"file": value} if in_file else {}
        )
    return out


def _config_text(s: dict[str, Any]) -> str:
    from skillsleep.slash_commands.price_settings import prices_text
    from skillsleep.slash_commands.wiring import ConfigFile, origin_label

    where = ConfigFile.model_validate(s["config_file"])
    chosen = {
        "SKILLSLEEP_CONFIG": "set by SKILLSLEEP_CONFIG",
        "SKILLSLEEP_HOME": "in SKILLSLEEP_HOME",
        "default": "the platform default; SKILLSLEEP_CONFIG or SKILLSLEEP_HOME move it",
    }[where.chosen_by]
    state = "exists" if where.exists else "does not exist; every setting below is from env or default"
    lines = [f"config file: {where.path} ({state}; {chosen})"]
    for section, settings in s.items():
        if section in ("config_file", "prices"):
            continue
        for name, setting in settings.items():
            key = f"{section}.{name}"
            if "merge" not in setting:  # a scalar setting ([sleep]): one value, the highest level wins
                shown = json.dumps(setting["value"], ensure_ascii=False)
                lines.append(f"{key} = {shown}  ← {_origin_text(setting['source'], key, where)}")
                lines += [
                    f"  {json.dumps(value, ensure_ascii=False)}  ← {_origin_text(origin, key, where)}"
                    " (overridden, not used)"
                    for origin, value in setting["layers"].items()
                    if origin != setting["source"]
                ]
                continue
            merge = "lists from every level are combined" if setting["merge"] == "extend" else "the highest level wins"
            lines.append(f"{key} ({merge}):")
            if not setting["value"]:
                lines.append(f"  (none)  ← {setting['source']}")
            for origin, items in setting["layers"].items():
                used = setting["merge"] == "extend" or origin == setting["source"]
                note = "" if used else " (overridden, not used)"
                lines += [f"  {item}  ← {origin}: {origin_label(origin, key, where)}{note}" for item in items]
    return "\n".join([*lines, *prices_text(s.get("prices", {}), where.path)])


def _origin_text(origin: Any, key: str, where: Any) -> str:
    from skillsleep.slash_commands.wiring import origin_label

    return "default" if origin == "default" else f"{origin}: {origin_label(origin, key, where)}"
