"""What a night works with, built by its caller: `NightDeps` (the store, the nights and
proposals, the models and the harness, the clock and the process id) and the `NightModels`
protocol that core's `Models` satisfies (and the stand-ins of tests)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.models.ledger import Ledger, Price
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.model_set import Models
from skillsleep.core.models.store import Store
from skillsleep.core.night.lock import pid_alive
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.events import EventSink, quiet
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.executor import Executor, LocalExecutor
from skillsleep.core.train.harness import HarnessChoice


class NightModels(Protocol):
    """The LLMs of one night (core/models/model_set.py `Models`; tests give stand-ins)."""

    @property
    def target(self) -> LLM: ...
    @property
    def optimizer(self) -> LLM: ...
    @property
    def judge(self) -> LLM: ...

    async def aclose(self) -> None: ...


def _now() -> datetime:
    return datetime.now(UTC)


class NightDeps(BaseModel):
    """What a night works with, built by the caller. `open_models(cfg, ledger, run_id)` (default:
    core's `Models` from the night's sections alone, on `store`: no key or server from the
    environment) and `open_harness(models)` -> the harness it replays in (a `HarnessChoice`) are
    called once the night's folder is known; either may raise for bad settings, before the night
    is recorded. `clock` and `pid` (default: now in UTC, this process) are what the night's record says."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    nights: Nights
    proposals: Proposals
    store: Store
    open_harness: Callable[[NightModels], HarnessChoice]
    open_models: Callable[[TrainConfig, Ledger, str], NightModels] | None = None
    clock: Callable[[], datetime] = _now
    pid: int = Field(default_factory=os.getpid)
    redact_patterns: tuple[str, ...] = ()
    alive: Callable[[int], bool] = pid_alive  # whether a recorded process still runs
    on_event: EventSink = quiet  # hears every event of the night: its stages, the training, each rollout
    on_start: Callable[[NightRecord], NightRecord] | None = None  # amends the record before it is first written
    executor: Executor = Field(default_factory=LocalExecutor)  # where the night's rollouts run
    prices: dict[str, Price] = Field(default_factory=dict)  # config.toml's [prices], over the built-in ones

    def models(self, cfg: TrainConfig, ledger: Ledger, run_id: str) -> NightModels:
        """The night's models, from `open_models` or core's own."""
        if self.open_models is not None:
            return self.open_models(cfg, ledger, run_id)
        return Models(cfg.roles, ledger, self.store, run_id)
