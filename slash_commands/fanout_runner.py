"""Which skills `skillsleep run` trains (docs/sleep.md#which-skills-a-night-trains): the writable
skills of the night's agent (harnesses/user_skills.py) that the stored sessions since `[sleep] since`
used, grouped by core/night/fanout.py, and the summary `run` prints of a night that trained several
(`FanoutSummary`). night_runner.py asks `night_skills()` before the harvest and `fanout_groups()`
after it, and runs core's `run_fanout` when it gives groups; None means the night trains one
skill, as before.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import SerializerFunctionWrapHandler, model_serializer

from skillsleep.core.harvest.harvester import HarvestReport
from skillsleep.core.models.store import Store
from skillsleep.core.night.fanout import FanoutSkill, Group, group_sessions
from skillsleep.core.night.fanout_record import FanoutResult
from skillsleep.core.night.fanout_report import FANOUT_FILES
from skillsleep.core.night.live_skill import LiveSkill
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.since import parse_since
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.result import NightResult
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record
from skillsleep.harnesses import registry
from skillsleep.harnesses.home import with_home
from skillsleep.harnesses.skills import MANAGED_NAME, resolve_skill
from skillsleep.harnesses.user_skills import FoundSkill, find_skills
from skillsleep.slash_commands.night_summary import RunSummary

__all__ = ["FanoutSummary", "fanout_groups", "writable_skills"]

_SKILL_KINDS = ("user", "project", "plugin", "system")  # what a session names (not an instruction file)


def writable_skills(
    harness: str, *, home: Path, cwd: Path, data_dir: Path, env: Mapping[str, str]
) -> tuple[list[FanoutSkill], list[FoundSkill]]:
    """(the writable skills of `harness`'s agent, each with the names a session may give it; its
    read-only ones). Direct chat has no skill folders: none."""
    if harness == registry.CHAT:
        return [], []
    found = [f for f in find_skills(registry.get(harness), with_home(env, home), cwd) if f.kind in _SKILL_KINDS]
    writable = [
        FanoutSkill(
            skill=resolve_skill(f.path, harness=harness, home=home, cwd=cwd, data_dir=data_dir, env=env),
            names=frozenset({f.name, Path(f.path).parent.name}),
        )
        for f in found
        if f.writable
    ]
    return writable, [f for f in found if not f.writable]


def _check_chosen(chosen: list[str], writable: list[FanoutSkill], read_only: list[FoundSkill], harness: str) -> None:
    """Every name of `--skills` / `[sleep] skills` is a writable skill of the agent (or the managed
    one); else a ConfigError naming `skillsleep skills`."""
    known = {n for s in writable for n in s.names} | {MANAGED_NAME}
    locked = {f.name for f in read_only} | {Path(f.path).parent.name for f in read_only}
    for name in chosen:
        if name in known:
            continue
        if name in locked:
            raise ConfigError(
                f"--skills / [sleep] skills: {name!r} is read-only (a plugin or system skill): a night never "
                "edits it; `skillsleep skills` lists the writable ones"
            )
        if harness == registry.CHAT:
            raise ConfigError(
                f"--skills / [sleep] skills: {name!r}: the chat harness has no skill folders, so a night on it "
                f"trains only the managed skill ({MANAGED_NAME}); pass --harness AGENT to train that agent's "
                "skills (`skillsleep skills` lists them)"
            )
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"--skills / [sleep] skills: {name!r} is not a writable skill of the night's agent.{hint} "
            "`skillsleep skills` lists them (or pass --skills used / managed)"
        )


def night_skills(
    s: SleepSection, *, home: Path, cwd: Path, data_dir: Path, env: Mapping[str, str]
) -> list[FanoutSkill] | None:
    """The writable skills a night of `s` may fan out to (checked before the harvest: a name of
    `--skills` that is unknown or read-only fails at once), or None when it trains one skill:
    `--skill` given, or `skills = "managed"`."""
    if s.skill or s.skills == "managed":
        return None
    writable, read_only = writable_skills(s.harness, home=home, cwd=cwd, data_dir=data_dir, env=env)
    if isinstance(s.skills, list):
        _check_chosen(s.skills, writable, read_only, s.harness)
    return writable


def fanout_groups(
    s: SleepSection, store: Store, skills: list[FanoutSkill], managed: LiveSkill, now: datetime
) -> list[Group] | None:
    """The groups of the stored sessions since `[sleep] since`, or None when only the managed skill
    would train and no names were chosen: then the night is the one-skill night it always was."""
    keys = store.stream_sessions(since=parse_since(s.since, now=now)).keys
    used = store.skills_of(keys)
    chosen = s.skills if isinstance(s.skills, list) else None
    groups = group_sessions({k: used.get(k, []) for k in keys}, skills, managed, chosen)
    return None if chosen is None and len(groups) == 1 else groups


class FanoutSummary(Record):
    """What `skillsleep run --json` prints of a night that trained several skills: the fan-out's
    record (every skill's row) and each trained skill's night summary, as a one-skill night prints it."""

    fanout: FanoutResult
    nights: list[RunSummary]
    report: dict[str, str]  # the combined report's files → path

    @classmethod
    def of(
        cls,
        fanout: FanoutResult,
        results: list[NightResult],
        nights: Nights,
        groups: list[Group],
        harvested: HarvestReport,
        folder: Path,
    ) -> FanoutSummary:
        """The summary of `fanout`, whose trained skills' nights gave `results`."""
        skill_of = {g.skill.key(): g.skill for g in groups}
        night_of = {r.night: skill_of[r.skill_path] for r in fanout.rows if r.night is not None}
        return cls(
            fanout=fanout,
            nights=[RunSummary.of(r, nights, night_of[r.night], harvested) for r in results],
            report={name: str(folder / name) for name in FANOUT_FILES},
        )

    def stopped(self) -> bool:
        return any(n.result.outcome == "stopped-early" for n in self.nights)

    @model_serializer(mode="wrap")
    def _printed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        part = handler(self)
        return {"fanout": part["fanout"], "report": part["report"], "nights": part["nights"]}
