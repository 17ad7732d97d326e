"""The models of one run: `Models`, the target, optimizer and judge `LLM`s on one ledger and store,
each built from its section of a run config (`[target]`, `[optimizer]`, `[judge]`: a
`ModelSection`; the three with the seed are `ModelRoles`).

Nothing here reads the environment: a backend gets its key and server from what `settings_for`
makes of its section. The default, `section_settings`, uses the section alone (enough for the
scripted and local backends, or a server named by `base_url`); the command layer passes one that
adds each provider's key and URL variables (slash_commands/wiring.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skillsleep.core.models.backends.base import Backend, BackendSettings, BaseBackend, BaseUrl, RetryPolicy
from skillsleep.core.models.backends.registry import create_backend, get_provider, parse_spec, provider_infos
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.store import Store
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.events import Event, EventSink, Retry
from skillsleep.core.shared.records import Record


class ModelSection(BaseModel):
    """One model role: which backend, how to sample, how patiently to retry."""

    model_config = ConfigDict(extra="forbid")

    backend: str = "local:qwen2.5-coder-0.5b"  # provider:model
    base_url: BaseUrl = ""
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int = Field(default=256, ge=1)
    concurrency: int = Field(default=0, ge=0)  # 0 → the provider's default (local: 1, the agents: 2, others: 8)
    timeout_s: float = Field(default=120.0, gt=0)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    thinking: bool = False


class CallSection(ModelSection):
    """A role whose every use is one model call (the optimizer, the judge): `timeout_s` and
    `retry.timeout_s` both limit one attempt of it, so the one given sets the other (the backend,
    its HTTP client included, reads `retry.timeout_s`); both given and different is an error."""

    @model_validator(mode="after")
    def _one_call_limit(self) -> Self:
        own, retry = "timeout_s" in self.model_fields_set, "timeout_s" in self.retry.model_fields_set
        if own and retry and self.timeout_s != self.retry.timeout_s:
            raise ValueError(
                f"timeout_s = {self.timeout_s:g} and retry.timeout_s = {self.retry.timeout_s:g} both limit one "
                "attempt of this role's model call; give one of them"
            )
        if own and not retry:
            self.retry = self.retry.model_copy(update={"timeout_s": self.timeout_s})
        elif retry and not own:
            self.timeout_s = self.retry.timeout_s
        return self


class OptimizerSection(CallSection):
    """The model that reflects, merges and ranks edits."""

    max_tokens: int = Field(default=1024, ge=1)


class JudgeSection(CallSection):
    """The rubric judge; an empty backend means the optimizer's."""

    backend: str = ""
    max_tokens: int = Field(default=512, ge=1)


class ModelRoles(Record):
    """The sections of a run's three models (the judge's with its backend filled in) and the seed
    their sampling uses: what `Models` is built from (`TrainConfig.roles`)."""

    target: ModelSection
    optimizer: ModelSection
    judge: ModelSection
    seed: int = 0


SettingsFor = Callable[[ModelSection], BackendSettings]


def section_settings(
    section: ModelSection,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    options: dict[str, str | int | float | bool] | None = None,
) -> BackendSettings:
    """The settings of `section`'s backend: its server is the section's `base_url`, else `base_url`,
    else the provider's default; `thinking` only where the provider has it (else a ConfigError)."""
    provider, model = parse_spec(section.backend)
    info = get_provider(provider).info
    if section.thinking and not info.supports_thinking:
        thinking = [i.name for i in provider_infos() if i.supports_thinking]
        raise ConfigError(
            f"thinking = true has no effect on the {provider} backend (only on: {', '.join(thinking)}); "
            "remove it from the config"
        )
    return BackendSettings(
        model=model,
        api_key=api_key,
        base_url=section.base_url or base_url or info.default_base_url,
        concurrency=section.concurrency or info.default_concurrency or (1 if provider == "local" else 8),
        retry=section.retry.model_copy(),
        thinking=section.thinking,
        options=options or {},
    )


def open_backend(
    section: ModelSection, settings: BackendSettings, *, retry_advice: str = "", on_event: EventSink | None = None
) -> Backend:
    """`section`'s backend with `settings`; `retry_advice` ends the error after the last retry,
    `on_event` hears a Retry event before each retry."""
    backend = create_backend(section.backend, settings.model_copy(update={"retry_advice": retry_advice}))
    if isinstance(backend, BaseBackend):  # a third-party backend that retries by itself is not heard
        backend.on_event = on_event
    return backend


def config_retry_advice(role: str) -> str:
    """How to allow a role more attempts or a longer wait, where the settings are a run config's."""
    return f"raise [{role}] retry.attempts / retry.timeout_s in the run config (--config)"


class Models:
    """The LLMs of one run (target, optimizer, judge), sharing one ledger and store (the response
    cache; None: none), their calls recorded under `run_id`. Each retry goes to `on_event` as a
    Retry naming its role; `retry_advice(role)` names the settings that allow more."""

    def __init__(
        self,
        roles: ModelRoles,
        ledger: Ledger,
        store: Store | None = None,
        run_id: str = "",
        *,
        settings_for: SettingsFor = section_settings,
        on_event: EventSink | None = None,
        retry_advice: Callable[[str], str] = config_retry_advice,
    ) -> None:
        self.ledger = ledger
        self.backends: list[Backend] = []
        self.on_event = on_event
        self.retry_advice = retry_advice
        self.settings_for = settings_for
        self.target = self._llm("target", roles.target, store, run_id, roles.seed)
        self.optimizer = self._llm("optimizer", roles.optimizer, store, run_id, roles.seed)
        self.judge = self._llm("judge", roles.judge, store, run_id, roles.seed)

    def _llm(self, role: str, section: ModelSection, store: Store | None, run_id: str, seed: int) -> LLM:
        heard = _with_role(self.on_event, role) if self.on_event is not None else None
        backend = open_backend(
            section, self.settings_for(section), retry_advice=self.retry_advice(role), on_event=heard
        )
        self.backends.append(backend)
        return LLM(
            backend,
            ledger=self.ledger,
            store=store,
            run_id=run_id,
            temperature=section.temperature,
            max_tokens=section.max_tokens,
            seed=seed,
        )

    async def aclose(self) -> None:
        for b in self.backends:
            await b.aclose()


def _with_role(sink: EventSink, role: str) -> EventSink:
    """`sink`, with each Retry naming the role ("optimizer openai:m attempt 1 of 2 failed …")."""

    def heard(event: Event, /) -> None:
        sink(event.model_copy(update={"role": role}) if isinstance(event, Retry) else event)

    return heard
