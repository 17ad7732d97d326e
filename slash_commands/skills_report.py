"""What `skillsleep skills` reports (skills_cmd.py prints it): `SkillsResult`, every skill of every
installed agent (harnesses/user_skills.py finds them) with how many harvested sessions used it in the
last days, from the state database's skill rows (`Store.skill_uses()`; read only, never created)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import Field

from skillsleep.core.shared.records import Record
from skillsleep.harnesses.user_skills import FoundSkill

__all__ = ["DAYS", "SkillRow", "SkillsResult", "UsedSkill", "list_skills"]

DAYS = 30  # the usage counted: sessions that ended in the last DAYS days


class SkillRow(FoundSkill):
    """A skill as `skills --json` lists it: where it is, whether a night may edit it, and its use."""

    uses: int = 0  # harvested sessions of the last `days` days that used it


class UsedSkill(Record):
    """A skill the harvested sessions used that no skill folder holds now (removed, or a plugin's gone)."""

    agent: str
    name: str
    uses: int


class SkillsResult(Record):
    """`skillsleep skills`: the installed agents' skills, and the use the harvest recorded."""

    days: int  # the use counted is of the sessions that ended in these last days
    since: str  # ISO UTC: the start of those days
    agents: list[str]  # the agents looked at: those installed here (their CLI on PATH, or their home)
    skills: list[SkillRow] = Field(default_factory=list)
    not_found: list[UsedSkill] = Field(default_factory=list)  # used in those days, in no folder now
    harvested: bool = True  # False: no state database yet (`skillsleep harvest` makes it): no use counted


def list_skills(days: int = DAYS, *, cwd: Path | None = None, now: datetime | None = None) -> SkillsResult:
    """The skills of every installed agent for a session in `cwd` (default: here), with their use in
    the last `days` days."""
    from skillsleep.harnesses import registry
    from skillsleep.harnesses.user_skills import find_skills

    since = (now or datetime.now(UTC)) - timedelta(days=days)
    env, here = os.environ, cwd or Path.cwd()
    agents = [a for a in registry.agents() if shutil.which(a.command, path=env.get("PATH")) or a.home(env).is_dir()]
    uses, harvested = _uses(since)
    rows: list[SkillRow] = []
    counted: set[tuple[str, str]] = set()
    for agent in agents:
        for skill in find_skills(agent, env, here):
            keys = [(agent.name, skill.name), (agent.name, Path(skill.path).parent.name)]
            keys = (
                [k for k in dict.fromkeys(keys) if k not in counted]
                if skill.kind not in ("instructions", "section")
                else []
            )
            counted.update(keys)
            rows.append(SkillRow(**skill.model_dump(), uses=sum(uses.get(k, 0) for k in keys)))
    gone = [UsedSkill(agent=a, name=n, uses=u) for (a, n), u in sorted(uses.items()) if (a, n) not in counted]
    return SkillsResult(
        days=days,
        since=since.isoformat(),
        agents=[a.name for a in agents],
        skills=rows,
        not_found=gone,
        harvested=harvested,
    )


def _uses(since: datetime) -> tuple[dict[tuple[str, str], int], bool]:
    """(agent, skill) → sessions that used it since `since`, from the state database (if there is one)."""
    from skillsleep.core.models.store import Store
    from skillsleep.slash_commands.wiring import state_db

    db = state_db()
    if not db.is_file():  # never create the state database just to look at it
        return {}, False
    store = Store(db, readonly=True)
    try:
        return store.skill_uses(since), True
    finally:
        store.close()
