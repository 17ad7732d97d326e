"""The record of nights and what a skill's training remembers from one night to the next.

    <data>/nights/<NNNN>/night.json   NightRecord (core/night/record.py): what one `skillsleep run`
                                      did (written when it starts, rewritten atomically when it
                                      ends or stops)
    <data>/nights/<NNNN>/…            the night's run directory (trainer state, rollouts, steps,
                                      ledger.jsonl, tasks.jsonl), as for `skillsleep train`; a
                                      running night writes plan.json, state.json (after each step)
                                      and ledger.jsonl (each call) as it goes: `progress()` reads them
    <data>/sleep/<key>.json           SkillMemory of one live skill file: the rejected-edit buffer,
                                      the optimizer's meta skill, which split each task belongs to,
                                      the tasks' identities (id and requests, so a task keeps
                                      its id on later nights) and the nights that trained it
                                      (a night is an epoch)

`status` reads these; nothing here writes a user's skill.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field, ValidationError

from skillsleep.core.mine.identity import Known, TaskIdentity, remembered
from skillsleep.core.mine.mining import MinedTask
from skillsleep.core.mine.splits import PROTECTION
from skillsleep.core.models.ledger import Ledger, read_ledger
from skillsleep.core.models.rundir import write_private
from skillsleep.core.night.record import NightRecord
from skillsleep.core.report.result import HistoryPoint
from skillsleep.core.shared.errors import StateDamaged
from skillsleep.core.shared.jsonl import why_unreadable
from skillsleep.core.shared.records import Record, Split
from skillsleep.core.shared.rejected import RejectedEdit

MAX_REJECTED = 60  # rejected edits a skill's memory keeps (newest); the reflection sees them all


class NightProgress(Record):
    """How far a running night got: its stage in words, and the training steps done."""

    stage: str
    steps_done: int = 0
    steps: int | None = None


class SkillMemory(Record):
    """What training one live skill carries across nights."""

    skill_path: str
    rejected: list[RejectedEdit] = Field(default_factory=list)
    meta_skill: str = ""
    splits: dict[str, Split] = Field(default_factory=dict)  # task id → the split it was given
    tasks: list[TaskIdentity] = Field(default_factory=list)  # the split tasks' ids and requests
    nights: list[int] = Field(default_factory=list)

    def known(self) -> Known:
        """The tasks earlier nights split, for mining to keep their ids (`core/mine/identity.py`)."""
        named = {t.id for t in self.tasks}
        return Known(tasks=self.tasks, legacy=sorted(t for t in self.splits if t not in named))

    def learn(self, splits: dict[str, Split], tasks: builtins.list[MinedTask], night: int) -> None:
        """Remember a night's splits and its tasks' identities. An earlier task whose requests a
        task of tonight holds takes that task's split when it is more protected (test > val >
        train), so its requests stay held out whichever id they come back under."""
        self.splits.update(splits)
        for mined in tasks:
            split = splits.get(mined.task.id)
            for earlier in mined.earlier:
                old = self.splits.get(earlier)
                if split is not None and (old is None or PROTECTION[split] > PROTECTION[old]):
                    self.splits[earlier] = split
        identities = [TaskIdentity(id=m.task.id, keys=m.keys()) for m in tasks if m.task.id in splits]
        self.tasks = remembered(self.tasks, identities, night)


class Nights:
    """Night records and skill memories under one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir)
        self.nights_dir = self.root / "nights"
        self.memory_dir = self.root / "sleep"
        self.unreadable: list[tuple[Path, str]] = []  # (night.json, why) of records the last list() skipped

    def folder(self, night: int) -> Path:
        return self.nights_dir / f"{night:04d}"

    def list(self) -> list[NightRecord]:
        """Every night with a readable record, oldest first; unreadable ones are in `unreadable`."""
        self.unreadable = []
        out: list[NightRecord] = []
        for folder in self.folders():
            path = folder / "night.json"
            if not path.is_file():
                continue
            try:
                out.append(NightRecord.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError) as exc:
                self.unreadable.append((path, why_unreadable(exc)))
        return sorted(out, key=lambda r: r.night)

    @property
    def problems(self) -> builtins.list[str]:
        """The records the last list() skipped, each with what to do, for `status`."""
        return [
            f"{path}: unreadable night record ({why}); `skillsleep doctor --repair` moves it aside"
            for path, why in self.unreadable
        ]

    def next_number(self) -> int:
        """One more than the highest night folder (readable or not), so numbers are never reused."""
        return max((int(p.name) for p in self.folders()), default=0) + 1

    def folders(self) -> builtins.list[Path]:
        """Every night's folder, whether its record can be read or not."""
        return sorted(p for p in self.nights_dir.iterdir() if p.name.isdigit()) if self.nights_dir.is_dir() else []

    def get(self, night: int) -> NightRecord:
        """The record of night `night` (a StateDamaged error when it cannot be read)."""
        path = self.folder(night) / "night.json"
        try:
            return NightRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            raise StateDamaged(
                f"{path}: unreadable night record ({why_unreadable(exc)}); `skillsleep doctor --repair` moves it aside"
            ) from None

    def save(self, record: NightRecord) -> None:
        write_private(self.folder(record.night) / "night.json", record.model_dump_json(indent=2) + "\n")

    def ledger(self, night: int) -> Ledger:
        """Every model call of a night, from its own ledger.jsonl (all its processes)."""
        return read_ledger(self.folder(night) / "ledger.jsonl")

    def spend_since(self, since: datetime) -> tuple[int, float]:
        """(tokens, USD) of every call the nights made at or after `since`."""
        spent = self.ledger_since(since)
        return spent.spent_tokens, spent.spent_usd

    def ledger_since(self, since: datetime) -> Ledger:
        """Every call the nights made at or after `since`, from their ledgers (a night whose
        process died, or whose record cannot be read, counts too)."""
        return Ledger.of(e for f in self.folders() for e in read_ledger(f / "ledger.jsonl").entries if e.ts >= since)

    def progress(self, record: NightRecord) -> NightProgress:
        """The stage a running night reached, from the files it writes as it goes: plan.json once
        its tasks are mined, state.json once the live skill is scored and after every step."""
        folder, steps = self.folder(record.night), record.steps
        if not (folder / "plan.json").is_file():
            return NightProgress(stage="mining tasks from the harvested sessions", steps=steps)
        try:
            state = json.loads((folder / "state.json").read_bytes())
        except FileNotFoundError:
            return NightProgress(stage="scoring the live skill on the held-out tasks", steps=steps)
        except (OSError, ValueError):  # being replaced this instant (written atomically), or damaged
            state = None
        if not isinstance(state, dict) or not isinstance(state.get("step"), int):
            return NightProgress(stage="training", steps=steps)
        done = state["step"]
        if state.get("done") or state.get("epoch", 0) >= record.night:
            return NightProgress(stage="the final scores and the report", steps_done=steps or done, steps=steps)
        if steps is not None and done >= steps:
            return NightProgress(stage="end of the night: slow update and notes", steps_done=done, steps=steps)
        return NightProgress(stage=f"step {done + 1} of {steps or '?'}", steps_done=done, steps=steps)

    def history(self, skill_path: str) -> builtins.list[HistoryPoint]:
        """Chart points of the finished nights that trained `skill_path` (dry runs included)."""
        return [r.point() for r in self.list() if r.skill_path == skill_path and r.status != "running"]

    # --- per-skill memory ----------------------------------------------------------------------

    def memory_path(self, skill_path: str) -> Path:
        key = hashlib.sha256(skill_path.encode()).hexdigest()[:16]
        return self.memory_dir / f"{key}.json"

    def memory(self, skill_path: str) -> SkillMemory:
        """The skill's memory; a fresh one when none exists. An unreadable file is an error that
        says how to start over (it is never silently replaced)."""
        path = self.memory_path(skill_path)
        if not path.is_file():
            return SkillMemory(skill_path=skill_path)
        return _read_memory(path, skill_path)

    def unreadable_memories(self) -> builtins.list[tuple[Path, str]]:
        """(path, why) of every skill memory that cannot be read."""
        out = []
        for path in sorted(self.memory_dir.glob("*.json")) if self.memory_dir.is_dir() else []:
            try:
                SkillMemory.model_validate_json(path.read_bytes())
            except (OSError, ValidationError) as exc:
                out.append((path, why_unreadable(exc)))
        return out

    def memory_problems(self) -> builtins.list[str]:
        """Every skill memory that cannot be read, each with what to do, for `status`."""
        return [memory_problem(path, why) for path, why in self.unreadable_memories()]

    def save_memory(self, memory: SkillMemory) -> None:
        memory.rejected = memory.rejected[-MAX_REJECTED:]
        write_private(self.memory_path(memory.skill_path), memory.model_dump_json(indent=2) + "\n")


def _read_memory(path: Path, skill_path: str) -> SkillMemory:
    try:
        return SkillMemory.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise StateDamaged(memory_problem(path, why_unreadable(exc), skill_path)) from None


def memory_problem(path: Path, why: str, skill_path: str = "a skill") -> str:
    return (
        f"{path} (what earlier nights learned about {skill_path}: its task splits, rejected edits and the "
        f"optimizer's notes) cannot be read ({why}); `skillsleep doctor --repair` rebuilds it from the nights "
        "that trained the skill (or move it away to start that memory afresh)"
    )


def month_start(now: datetime | None = None) -> datetime:
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
