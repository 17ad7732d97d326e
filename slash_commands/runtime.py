"""What a run is built from, besides its models (core/models/model_set.py `Models`, given
`wiring.model_settings`): an agent's replay harness with its `[harness.<name>]` settings, where
the rollouts run, for a night also its checked `[sleep]` settings, and the skill file of `train`
and `eval`. `train`, `eval`, a night (`run`, `run --detach`) and `schedule` build theirs here.

The pre-flight checks are here too, run before any work (no harvest, no run folder, nothing
written): every role's backend can be built (its API key is set: `check_backends`) and a money cap
has a price for every model it pays for (`check_run`, `check_night`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skillsleep.core.document.skill import Skill
from skillsleep.core.document.textfile import read_text_file
from skillsleep.core.models.backends.registry import parse_spec
from skillsleep.core.models.ledger import check_money_cap
from skillsleep.core.models.model_set import ModelSection, open_backend
from skillsleep.core.night.settings import check_prices, model_sections, model_specs
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.shared.errors import BackendUnavailable, ConfigError
from skillsleep.core.shared.events import EventSink
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.executor import Executor, LocalExecutor
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.harnesses import registry
from skillsleep.harnesses.skills import SKILL_FILE
from skillsleep.slash_commands.wiring import config_file, harness_settings, model_settings, sleep_settings, user_config

if TYPE_CHECKING:
    from skillsleep.harnesses.replay import CLIHarness

RUN = "skillsleep run"  # what a night's process records in the state lock


def read_skill(path: Path) -> Skill:
    """The skill file at `path`; a folder is an error that names the file inside it."""
    inside = path / SKILL_FILE
    instead = (
        f"the skill file itself, e.g. {inside}" if inside.is_file() else f"a markdown skill file such as {SKILL_FILE}"
    )
    return Skill.parse(read_text_file(path, "skill file", instead=instead))


def usable_agent(name: str, *, target_model: str | None, base_url: str | None) -> CLIHarness:
    """An agent CLI's replay harness: its `[harness.<name>]` settings with `target_model` and
    `base_url` on top; an agent that is not usable here, or settings it cannot replay with at all
    (`problem()`: OpenClaw's `base_url` without the `target_model` it serves), is a ConfigError
    saying why. (An `api_key_env` that is not set is each replay's error: a scheduled night reads
    its keys from night.env, not from the shell that runs `schedule`.)"""
    agent = registry.get(name)
    configured = harness_settings().get(name)
    table = configured.model_dump(exclude_unset=True) if configured is not None else {}
    if target_model:
        table["target_model"] = target_model
    if base_url:
        table["base_url"] = base_url
    harness = agent.harness(agent.settings(table))
    status = harness.status()
    if not status.usable:
        raise ConfigError(f"the {name} harness is not usable here: {status.reason}")
    if problem := harness.problem():  # else every replay would fail alike, each scored 0
        raise ConfigError(problem)
    return harness


def agent_harness(name: str, *, target_model: str | None, base_url: str | None) -> HarnessChoice:
    """An agent CLI to replay in (`usable_agent`), named with its version and model."""
    harness = usable_agent(name, target_model=target_model, base_url=base_url)
    model = harness.settings.target_model or "its configured model"
    label = f"{name} {harness.status().version} ({model})"
    return HarnessChoice(harness=harness, label=label, timeout_s=harness.settings.timeout_s)


def open_executor(kind: str | None, *, on_event: EventSink) -> Executor:
    """Where this command's rollouts run: `[executor]` of config.toml with `--executor` (its kind)
    on top; the Ray executor connects here, so an unreachable cluster fails before any work."""
    section = user_config().executor
    if kind is not None:
        section = section.model_copy(update={"kind": kind})
    if section.kind == "local":
        return LocalExecutor()
    from skillsleep.harnesses.cluster import RayExecutor

    return RayExecutor(section, on_event=on_event)


def check_night(flags: Mapping[str, object | None]) -> SleepSection:
    """The night's `[sleep]` settings layered flag > env > file > agent > default and checked before
    any work (also by `schedule`, so a typo fails there and not at 3 a.m.)."""
    layered = sleep_settings(flags)
    settings = layered.values
    registry.check_name(settings.harness)
    harness_settings()  # a typo in any [harness.<name>] table fails now, whichever harness replays
    if layered.settings["harness"].source == "agent":  # nobody named it: say why it is this agent
        _check_default_agent(settings, layered.agent.why["harness"])
    model_specs(settings)  # names a missing default model now, not mid-night
    where = config_file()  # a money cap over a model with no price, named with the file to price it in
    check_prices(settings, user_config(where).prices, prices_at=str(where.path))
    return settings


def _check_default_agent(settings: SleepSection, why: str) -> None:
    """The agent a night defaults to can replay here; else a ConfigError saying why it is the
    default and how to choose another."""
    try:
        usable_agent(settings.harness, target_model=settings.target_model, base_url=None)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc}. It is the night's harness by default: {why}; choose another with --harness / --backend "
            "(--backend local: the chat harness on the embedded model), or `skillsleep uninstall "
            f"{settings.harness}`"
        ) from None


def check_night_backends(settings: SleepSection) -> None:
    """The night's backends can be built here: a missing API key fails before the harvest (not
    checked by `schedule`: the scheduled night reads its keys from night.env)."""
    check_backends(model_sections(settings)[:2])  # the judge is the optimizer's model


def check_run(cfg: TrainConfig) -> None:
    """`train` / `eval` before any work: every role's backend can be built, and a money cap has a
    price for every model it pays for (config.toml's `[prices]`, then the run config's)."""
    sections = [cfg.target, cfg.optimizer, cfg.judge_model]
    check_backends(sections)
    check_money_cap(
        cfg.budget.to_budget(),
        cfg.prices,
        [parse_spec(section.backend) for section in sections],
        cap="--budget-usd (budget.usd)",
        prices_at=f"{config_file().path} or the run config",
        token_cap="--budget-tokens (budget.tokens)",
    )


def check_backends(sections: Iterable[ModelSection]) -> None:
    """Build each section's backend once and drop it (building connects to nothing: a backend makes
    its client on first use): a missing API key or server URL is a ConfigError naming it (exit 2)."""
    for section in sections:
        try:
            open_backend(section, model_settings(section))
        except BackendUnavailable as exc:
            raise ConfigError(f"{exc} (checked before any work; nothing was read or written)") from None
