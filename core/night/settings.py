"""What a night's `[sleep]` settings make of it: the model specs, the run config it trains with, and
the pre-flight check that its money cap can be kept (every model it pays for has a price)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skillsleep.core.models.backends.base import RetryPolicy
from skillsleep.core.models.backends.registry import default_prices, parse_spec
from skillsleep.core.models.ledger import Price, check_money_cap
from skillsleep.core.models.model_set import JudgeSection, ModelSection, OptimizerSection
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.train.config import (
    BudgetSection,
    DataSection,
    EditsSection,
    ReflectSection,
    RunSection,
    TrainConfig,
    TrainSection,
)
from skillsleep.core.train.gate import GateConfig


def model_specs(s: SleepSection) -> tuple[str, str]:
    """(optimizer, chat target) as provider:model, each checked."""
    provider = s.backend.partition(":")[0]
    optimizer = f"{provider}:{s.optimizer_model}" if s.optimizer_model else s.backend
    chat_target = f"{provider}:{s.target_model}" if s.target_model and s.harness == "chat" else optimizer
    parse_spec(optimizer), parse_spec(chat_target)
    return optimizer, chat_target


def check_prices(s: SleepSection, prices: Mapping[str, Price], *, prices_at: str = "config.toml") -> None:
    """A ConfigError, before any work, when the night caps money (`budget_usd`) and a model it pays
    for has no price among its provider's own and `prices` (the `[prices]` of config.toml, `prices_at`)."""
    check_money_cap(
        BudgetSection(usd=s.budget_usd).to_budget(),
        {**default_prices(), **prices},
        [parse_spec(spec) for spec in model_specs(s)],
        cap="budget_usd (--budget-usd, SKILLSLEEP_BUDGET_USD, [sleep] budget_usd)",
        prices_at=prices_at,
        token_cap="--budget-tokens ([sleep] budget_tokens)",
    )


def model_sections(s: SleepSection) -> tuple[ModelSection, OptimizerSection, JudgeSection]:
    """The night's [target], [optimizer] and [judge] (the optimizer's model)."""
    optimizer, chat_target = model_specs(s)
    retry = RetryPolicy(attempts=s.retries + 1, timeout_s=s.call_timeout)
    return (
        ModelSection(backend=chat_target, base_url=s.base_url, max_tokens=2048, timeout_s=s.call_timeout, retry=retry),
        OptimizerSection(backend=optimizer, base_url=s.base_url, max_tokens=2048, retry=retry),
        JudgeSection(retry=retry),
    )


def train_config(
    s: SleepSection, folder: Path, skill_path: Path, prices: Mapping[str, Price] | None = None
) -> TrainConfig:
    """The run config of the night whose folder is `folder`, training the skill at `skill_path`;
    `prices` (config.toml's `[prices]`) go over the providers' own."""
    target, optimizer, judge = model_sections(s)
    return TrainConfig(
        run=RunSection(name=folder.name, out_dir=str(folder.parent)),
        data=DataSection(tasks=str(folder / "plan.json"), skill=str(skill_path)),
        target=target,
        optimizer=optimizer,
        judge=judge,
        train=TrainSection(
            epochs=1,
            steps_per_epoch=s.steps,
            rollouts_k=s.rollouts_k,
            candidates=s.candidates,
            min_support=s.min_support,
            context_chars=s.context_chars,
        ),
        edits=EditsSection(edit_frontmatter=s.edit_frontmatter),
        gate=GateConfig(enabled=s.gate == "on", metric=s.gate_metric, min_wins=s.gate_min_wins, no_regress=True),
        budget=BudgetSection(tokens=s.budget_tokens, usd=s.budget_usd),
        reflect=ReflectSection(preferences=s.preferences),
        prices={**default_prices(), **(prices or {})},
    )
