"""Nights over a user's own skill file, for the tests of its protected regions: `core.night.cycle.run_night`
on the scripted backend (chosen by name) and the chat harness, then the proposal adopted (and
sometimes rolled back) as `skillsleep adopt` / `rollback` would.

Night k's optimizer proposes the line `rule(k)` and the guidance `guidance(k)`; night k's target
answers well only when its skill holds `token(k)`, so every night has a step the gate accepts and
an epoch boundary whose slow update writes (or rewrites) the slow-update region. The models keep
no response cache: the same skill text must be answered by the night's own target script.

    Nights(root)       a data folder whose store holds the recurring chat sessions (copied from
                       one built per test run), and `night(k, target)` / `adopt` / `rollback`
    file_target(path)  a live file (or `path#Heading`) as `--skill` names it, on the chat harness
"""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from sleep_kit import optimizer_rules, write_chat_logs

from skillsleep.core.models.backends.registry import create_backend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.model_set import ModelSection
from skillsleep.core.models.store import Store
from skillsleep.core.night.cycle import run_night
from skillsleep.core.night.deps import NightDeps, NightModels
from skillsleep.core.night.nights import Nights as NightRecords
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.result import NightResult
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.chat_logs import parse_chat_log
from skillsleep.harnesses.skills import SkillTarget

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def token(k: int) -> str:
    return f"TOKEN{k}"


def rule(k: int) -> str:
    return f"Use {token(k)}: end every reply with a final line `ANSWER: <answer>`."


def guidance(k: int) -> str:
    return f"Keep {token(k)} in mind, night {k}."


def file_target(path: Path, section: str | None = None) -> SkillTarget:
    return SkillTarget(path=path, section=section, name=section or path.stem, harness="chat")


@cache
def _sessions_db(folder: Path) -> Path:
    """One store with the recurring, corrected chat sessions, built once per test run."""
    db = folder / "state.db"
    log = write_chat_logs(folder / "chats")
    store = Store(db)
    for session in parse_chat_log(log.read_bytes(), source=str(log)).sessions:
        store.put_session(session)
    store.close()
    return db


class _Models:
    def __init__(self, cfg: TrainConfig) -> None:
        ledger = Ledger()
        self.target, self.optimizer, self.judge = (
            self._llm(s, cfg, ledger) for s in (cfg.target, cfg.optimizer, cfg.judge_model)
        )

    @staticmethod
    def _llm(section: ModelSection, cfg: TrainConfig, ledger: Ledger) -> LLM:
        return LLM(create_backend(section.backend), ledger=ledger, max_tokens=section.max_tokens, seed=cfg.run.seed)

    async def aclose(self) -> None:
        for llm in (self.target, self.optimizer, self.judge):
            await llm.backend.aclose()


class Nights:
    """Nights, adopts and rollbacks in one data folder under `root`."""

    def __init__(self, root: Path, template: Path) -> None:
        self.root, self.data = root, root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_sessions_db(template), self.data / "state.db")
        self.proposals = Proposals(self.data)

    def _scripts(self, k: int, guidance_lines: list[str] | None) -> SleepSection:
        finding = {"kind": "skill_defect", "diagnosis": "no answer line", "op": "add", "target": "", "content": rule(k)}
        rules = optimizer_rules(findings=[finding])
        lines = guidance_lines if guidance_lines is not None else [guidance(k)]
        for r in rules:
            if r["match"] == '"guidance"':
                r["reply"] = json.dumps({"guidance": lines})
        opt, target = self.root / f"opt{k}.json", self.root / f"target{k}.json"
        opt.write_text(json.dumps(rules))
        target.write_text(
            json.dumps([{"match": token(k), "reply": "Done.\nANSWER: ok"}, {"match": "[\\s\\S]", "reply": "Done."}])
        )
        values: dict[str, Any] = {
            "backend": "scripted",
            "optimizer_model": str(opt),
            "target_model": str(target),
            "since": "3650d",
        }
        return SleepSection.model_validate(values)

    def night(self, k: int, target: SkillTarget, guidance_lines: list[str] | None = None) -> NightResult:
        """Night `k` of `target` (a ConfigError, e.g. a refused skill, is raised as it is)."""
        store = Store(self.data / "state.db")

        def open_harness(models: NightModels) -> HarnessChoice:
            harness = ChatHarness(models.target, log_dir=self.root / "chat-replays")
            return HarnessChoice(harness=harness, label="chat (scripted)", timeout_s=30.0)

        deps = NightDeps(
            nights=NightRecords(self.data),
            proposals=self.proposals,
            store=store,
            open_models=lambda cfg, ledger, run_id: _Models(cfg),
            open_harness=open_harness,
            clock=lambda: NOW,
            pid=4242,
            alive=lambda pid: False,
        )
        try:
            return asyncio.run(run_night(self._scripts(k, guidance_lines), target, deps))
        finally:
            store.close()

    def adopt(self, proposal: str) -> None:
        self.proposals.adopt(proposal, force=True)

    def rollback(self) -> None:
        self.proposals.rollback()
