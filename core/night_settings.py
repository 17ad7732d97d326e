"""What a night's `[sleep]` settings make of it: the model specs and the run config it trains with."""

from __future__ import annotations

from pathlib import Path

from skillsleep.core.backends.base import RetryPolicy
from skillsleep.core.backends.registry import parse_spec
from skillsleep.core.config import (
    BudgetSection,
    DataSection,
    JudgeSection,
    ModelSection,
    OptimizerSection,
    ReflectSection,
    RunSection,
    TrainConfig,
    TrainSection,
)
from skillsleep.core.gate import GateConfig
from skillsleep.core.user_config import SleepSection


def model_specs(s: SleepSection) -> tuple[str, str]:
    """(optimizer, chat target) as provider:model, each checked."""
    provider = s.backend.partition(":")[0]
    optimizer = f"{provider}:{s.optimizer_model}" if s.optimizer_model else s.backend
    chat_target = f"{provider}:{s.target_model}" if s.target_model and s.harness == "chat" else optimizer
    parse_spec(optimizer), parse_spec(chat_target)
    return optimizer, chat_target


def train_config(s: SleepSection, folder: Path, skill_path: Path) -> TrainConfig:
    """The run config of the night whose folder is `folder`, training the skill at `skill_path`."""
    optimizer, chat_target = model_specs(s)
    retry = RetryPolicy(attempts=s.retries + 1, timeout_s=s.call_timeout)
    return TrainConfig(
        run=RunSection(name=folder.name, out_dir=str(folder.parent)),
        data=DataSection(tasks=str(folder / "plan.json"), skill=str(skill_path)),
        target=ModelSection(
            backend=chat_target, base_url=s.base_url, max_tokens=2048, timeout_s=s.call_timeout, retry=retry
        ),
        optimizer=OptimizerSection(backend=optimizer, base_url=s.base_url, max_tokens=2048, retry=retry),
        judge=JudgeSection(retry=retry),
        train=TrainSection(
            epochs=1,
            steps_per_epoch=s.steps,
            rollouts_k=s.rollouts_k,
            candidates=s.candidates,
            min_support=s.min_support,
        ),
        gate=GateConfig(enabled=s.gate == "on", metric=s.gate_metric, min_wins=s.gate_min_wins, no_regress=True),
        budget=BudgetSection(tokens=s.budget_tokens, usd=s.budget_usd),
        reflect=ReflectSection(preferences=s.preferences),
    )
