"""`skillsleep config`: the config file's path and every effective setting with where it came from —
the click command and its text; what it shows is config_report.py's `ConfigResult`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.output import emit

if TYPE_CHECKING:
    from skillsleep.core.night.user_config import Setting
    from skillsleep.harnesses.default_agent import AgentLevel
    from skillsleep.slash_commands.config_report import ConfigResult
    from skillsleep.slash_commands.setting_records import ConfigFile, ScalarSetting, SleepOrigin

__all__ = ["config_"]


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print the config file and the settings as JSON.")
@guard
def config_(as_json: bool) -> None:
    """Show the config file's path and every effective setting with where it came from."""
    from skillsleep.slash_commands.config_report import config_result

    emit(config_result(), as_json, _config_text)


def _config_text(s: ConfigResult) -> str:
    from skillsleep.slash_commands.next_night import next_night_line
    from skillsleep.slash_commands.price_settings import prices_text

    where = s.config_file
    chosen = {
        "SKILLSLEEP_CONFIG": "set by SKILLSLEEP_CONFIG",
        "SKILLSLEEP_HOME": "in SKILLSLEEP_HOME",
        "default": "the platform default; SKILLSLEEP_CONFIG or SKILLSLEEP_HOME move it",
    }[where.chosen_by]
    state = "exists" if where.exists else "does not exist; every setting below is from env or default"
    lines = [f"config file: {where.path} ({state}; {chosen})", next_night_line(s.next_night)]
    sections: dict[str, dict[str, Setting | ScalarSetting]] = {
        "harvest": {name: getattr(s.harvest, name) for name in type(s.harvest).model_fields},
        "sleep": {**s.sleep},
        "executor": {**s.executor},
    }
    for section, settings in sections.items():
        for name, setting in settings.items():
            lines += _setting_lines(f"{section}.{name}", setting, where, s.agent)
    return "\n".join([*lines, *prices_text(s.prices, where.path)])


def _setting_lines(key: str, setting: Setting | ScalarSetting, where: ConfigFile, agent: AgentLevel) -> list[str]:
    """One setting: its value and where it came from, then what the other levels gave (`agent`: why
    the agent level gave what it did)."""
    from skillsleep.core.night.user_config import Setting
    from skillsleep.slash_commands.wiring import origin_label

    if not isinstance(setting, Setting):  # a scalar setting ([sleep]): one value, the highest level wins
        shown = json.dumps(setting.value, ensure_ascii=False)
        return [f"{key} = {shown}  ← {_origin_text(setting.source, key, where, agent)}"] + [
            f"  {json.dumps(value, ensure_ascii=False)}  ← {_origin_text(origin, key, where, agent)} (overridden, not used)"
            for origin, value in setting.layers.items()
            if origin != setting.source
        ]
    merge = "lists from every level are combined" if setting.merge == "extend" else "the highest level wins"
    lines = [f"{key} ({merge}):"]
    if not setting.value:
        lines.append(f"  (none)  ← {setting.source}")
    for origin, items in setting.layers.items():
        used = setting.merge == "extend" or origin == setting.source
        note = "" if used else " (overridden, not used)"
        lines += [f"  {item}  ← {origin}: {origin_label(origin, key, where)}{note}" for item in items]
    return lines


def _origin_text(origin: SleepOrigin, key: str, where: ConfigFile, agent: AgentLevel) -> str:
    from skillsleep.slash_commands.wiring import origin_label

    return "default" if origin == "default" else f"{origin}: {origin_label(origin, key, where, agent)}"
