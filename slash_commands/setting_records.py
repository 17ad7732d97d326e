"""The records of effective settings that wiring.py layers and `skillsleep config` shows: the config
file's place, `[harvest]`'s lists, and each single-valued setting with the level it came from.

The levels of a `[sleep]` value, highest first: flag > env > file > agent > default. "agent" is
the agent a night defaults to once one is installed (harnesses/default_agent.py): it gives
`harness`, `backend` and, when the model is an agent, `budget_tokens`, and only where no explicit
level set them."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.night.user_config import Setting, SleepSection
from skillsleep.harnesses.default_agent import AgentLevel
from skillsleep.slash_commands.setting_text import Scalar

__all__ = [
    "SLEEP_ORIGINS",
    "ConfigFile",
    "EffectiveSettings",
    "HarvestSettings",
    "ScalarSetting",
    "SleepOrigin",
    "SleepSettings",
]

SleepOrigin = Literal["flag", "env", "file", "agent", "default"]
SLEEP_ORIGINS: tuple[SleepOrigin, ...] = ("flag", "env", "file", "agent", "default")  # highest first


class ConfigFile(BaseModel):
    """Where the user's config file is, whether it exists, and what chose that path."""

    model_config = ConfigDict(extra="forbid")

    path: Path
    exists: bool
    chosen_by: Literal["SKILLSLEEP_CONFIG", "SKILLSLEEP_HOME", "default"]


class HarvestSettings(BaseModel):
    """The effective `[harvest]` settings of one command, each with where it came from."""

    model_config = ConfigDict(extra="forbid")

    chat_dirs: Setting
    redact_patterns: Setting

    def chat_dir_paths(self) -> list[Path]:
        return [Path(d) for d in self.chat_dirs.value]


class ScalarSetting(BaseModel):
    """One effective single-valued setting (the counterpart of `Setting` for lists; a table such as
    `[executor] resources` is one value): its value, the level it came from ("default" when none
    set it; "agent" when the agent a night defaults to gave it) and what each level that set it gave."""

    model_config = ConfigDict(extra="forbid")

    value: Scalar | dict[str, float]
    source: SleepOrigin
    layers: dict[SleepOrigin, Scalar | dict[str, float]] = Field(default_factory=dict)


class SleepSettings(BaseModel):
    """The effective `[sleep]` settings of `skillsleep run`: the validated values, and per key
    the value with where it came from."""

    model_config = ConfigDict(extra="forbid")

    values: SleepSection
    settings: dict[str, ScalarSetting]
    agent: AgentLevel  # the agent level: what a night uses when nothing explicit is set, and why


class EffectiveSettings(BaseModel):
    """What `skillsleep config` shows: the config file and every effective setting, by section
    (a later section is one more field here, filled in by `effective_settings()`)."""

    model_config = ConfigDict(extra="forbid")

    config_file: ConfigFile
    harvest: HarvestSettings
    sleep: dict[str, ScalarSetting]
    # the agent a night defaults to and why (harnesses/default_agent.py); `config` shows it in its
    # `next_night`
    agent: AgentLevel = Field(exclude=True)
