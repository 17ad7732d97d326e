"""The live skill a night trains: the core's view of the file (or the section of one) that a
proposal replaces. The harness layer implements it (`harnesses.skills.SkillTarget`), the way it
implements `Harness`."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class LiveSkill(Protocol):
    """A live skill file, or one section of it.

    Contract: only reads. `read()` is the text that is trained (a managed skill that does not
    exist yet reads as its seed); `live_text()` is the whole file byte-exact ("" when it does not
    exist); `compose()` puts trained text back into the whole file for staging; `key()` names the
    skill's memory across nights. A file that cannot be read is a ConfigError that says what to do.
    """

    @property
    def path(self) -> Path: ...
    @property
    def section(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def managed(self) -> bool: ...

    def key(self) -> str: ...
    def label(self) -> str: ...
    def read(self) -> str: ...
    def live_text(self) -> str: ...
    def compose(self, trained: str, base: str | None = None) -> str: ...
