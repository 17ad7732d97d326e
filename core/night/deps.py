"""What a night works with, built by its caller: `NightDeps` (the store, the nights and
proposals, the models and the harness, the clock and the process id) and the `NightModels`
protocol that the command's model factory satisfies."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.models.ledger import Ledger, Price
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.store import Store
from skillsleep.core.night.lock import pid_alive
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.events import EventSink, quiet
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.executor import Executor, LocalExecutor
from skillsleep.core.train.harness import Harness


class NightModels(Protocol):
    """The LLMs of one night (what `slash_commands.runtime.Models` builds)."""

    @property
    def target(self) -> LLM: ...
    @property
    def optimizer(self) -> LLM: ...
    @property
    def judge(self) -> LLM: ...

    async def aclose(self) -> None: ...


class NightDeps(BaseModel):
    """What a night works with, built by the caller. `open_models(cfg, ledger, run_id)` and
    `open_harness(models)` -> (harness, label, per-run timeout) are called once the night's folder
    is known; either may raise for bad settings, before the night is recorded."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    nights: Nights
    proposals: Proposals
    store: Store
    open_models: Callable[[TrainConfig, Ledger, str], NightModels]
    open_harness: Callable[[NightModels], tuple[Harness, str, float]]
    clock: Callable[[], datetime]
    pid: int
    redact_patterns: tuple[str, ...] = ()
    alive: Callable[[int], bool] = pid_alive  # whether a recorded process still runs
    on_event: EventSink = quiet  # hears every event of the night: its stages, the training, each rollout
    on_start: Callable[[NightRecord], NightRecord] | None = None  # amends the record before it is first written
    executor: Executor = Field(default_factory=LocalExecutor)  # where the night's rollouts run
    prices: dict[str, Price] = Field(default_factory=dict)  # config.toml's [prices], over the built-in ones
