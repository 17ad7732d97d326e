"""What an agent's installer returns: the `Plan` of files to write and commands to run for
`skillsleep install`, and the `InstallContext` it may look at. `install.py` carries a plan out;
these records sit apart so an agent's record (`agent.py`) can name them without importing it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from skillsleep.core.shared.records import Record


class PlannedFile(Record):
    """A file an agent's install writes."""

    path: Path  # absolute
    text: str
    executable: bool = False


class PlannedCommand(Record):
    """An agent command an install runs (`argv`), and the one that undoes it ([] → nothing to undo)."""

    what: str  # in words, for the report: "register the plugin with OpenClaw"
    argv: list[str]
    undo: list[str] = Field(default_factory=list)


class Plan(Record):
    """What installing skillsleep into one agent means."""

    agent: str
    files: list[PlannedFile] = Field(default_factory=list)
    commands: list[PlannedCommand] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # what the user does next ("type /sleep status …")


class InstallContext(Record):
    """What an installer may look at: the user's home and environment, the `skillsleep` command
    the agent should run, and skillsleep's data folder."""

    home: Path
    env: dict[str, str]
    skillsleep: Path  # absolute path of this installation's `skillsleep` command
    data_dir: Path


Installer = Callable[[InstallContext], Plan]
