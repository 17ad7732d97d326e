"""The user's own settings file (`config.toml`) and how its values layer with env and flags.

The file is TOML with one table per command family:

    [harvest]
    chat_dirs = ["~/chat-logs", "exports"]     # ~ expanded; relative → relative to the file
    redact_patterns = ['acme-[0-9]{8}']        # extra secret regexes; each must compile

    [harness.codex]                            # one table per replay harness (docs/agents.md, Harnesses);
    command = "/opt/codex/bin/codex"           # its keys are checked by slash_commands.wiring

    [sleep]                                    # the nightly cycle, `skillsleep run`
    harness = "codex"                          # chat or an agent (`skillsleep harnesses` lists them)
    backend = "deepseek"                       # provider or provider:model of the optimizer
    rollouts_k = 2
    since = "7d"                               # ISO date/time or a span: 30m, 24h, 7d, 2w
    auto_adopt = false

    [prices]                                   # USD per million tokens, by provider:model or provider:*
    "ollama:qwen2.5-coder:0.5b" = {input = 0.0, output = 0.0}   # (train, eval, run; a money cap needs them)

    [executor]                                 # where rollouts run (train, eval, run): local or ray
    kind = "ray"
    address = "ray://head:10001"
    resources = {codex = 1}                    # a Codex replay needs 1 of the node resource "codex"

It is validated strictly: an unknown table or key is an error that names the file and the key
and lists the known keys; a TOML syntax error names the file and the line; a bad value names the
file, the table and the key. A later section is a new `_Section` model plus one field on
`UserConfig`; nothing else changes.

This module only defines and validates. Finding the file and reading it and the environment
is done by `skillsleep.slash_commands.wiring`, which layers the levels with `layer()`:
command-line flag > environment > file > default. How a list from a higher level combines
with the lower ones is part of each setting (`Merge`): `replace` (the highest level that sets
it wins) or `extend` (every level's items, file first, duplicates dropped).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from skillsleep.core.document.textfile import load_toml, user_path
from skillsleep.core.models.backends.base import BaseUrl
from skillsleep.core.models.ledger import Price
from skillsleep.core.night.since import parse_since
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.validation import describe_validation_error
from skillsleep.core.train.config import CONTEXT_CHARS
from skillsleep.core.train.executor import ExecutorSection

__all__ = [
    "ORIGINS",
    "HarvestSection",
    "Merge",
    "Origin",
    "Setting",
    "SleepSection",
    "UserConfig",
    "check_redact_pattern",
    "check_since",
    "layer",
    "parse_user_config",
]

Origin = Literal["flag", "env", "file", "default"]
ORIGINS: tuple[Origin, ...] = ("flag", "env", "file", "default")  # highest precedence first
Merge = Literal["replace", "extend"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def check_redact_pattern(pattern: str) -> str | None:
    """Why `pattern` cannot be a redaction regex (the same rules `Redactor` applies), or None."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"redaction pattern {pattern!r} is not a valid regular expression ({exc}); fix or remove it"
    if compiled.fullmatch(""):
        return f"redaction pattern {pattern!r} matches the empty string; make it match a secret"
    return None


class HarvestSection(_Section):
    """`[harvest]`: what `skillsleep harvest` and `skillsleep watch` read and redact."""

    chat_dirs: list[str] = Field(default_factory=list)  # folders of direct-chat logs (*.jsonl)
    redact_patterns: list[str] = Field(default_factory=list)  # extra secret regexes

    @field_validator("redact_patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        problems = [p for p in map(check_redact_pattern, patterns) if p]
        if problems:
            raise ValueError("; ".join(problems))
        return patterns


_ANY_NOW = datetime(2000, 1, 1, tzinfo=UTC)  # check_since reads no clock: any instant does


def check_since(text: str) -> str | None:
    """Why `text` is not a `since` value, or None (the grammar: `core/night/since.py`). Only the syntax
    is checked here (no clock is read); the caller turns it into an instant."""
    try:
        parse_since(text, now=_ANY_NOW)
    except ConfigError:
        return (
            f"{text!r} is neither an ISO date/time (2026-11-28, 2026-11-28T22:00+01:00) "
            "nor a span back from now (30m, 24h, 7d, 2w)"
        )
    except OverflowError:  # the syntax is right; an instant past the calendar fails when it is used
        return None
    return None


class SleepSection(_Section):
    """`[sleep]`: the settings of the nightly cycle, `skillsleep run` (flag > env > file > default,
    layered by `skillsleep.slash_commands.wiring.sleep_settings`). Strict: TOML gives typed values,
    so `rollouts_k = "2"` or `gate = false` is an error, never a silent conversion."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # which harness replays the tasks: `chat` or an agent's name (the caller passes the known names
    # as validation context `harnesses`: core knows no agent)
    harness: str = "chat"
    # "" → a managed learned skill; else a SKILL.md path, `PATH#Heading` (an AGENTS.md section)
    # or the name of a skill of the harness
    skill: str = ""
    backend: str = "local"  # a provider (`skillsleep backends` lists them) or provider:model
    base_url: BaseUrl = ""  # model server of that backend; "" → the provider's env var / default
    retries: int = Field(default=3, ge=0)  # a failed model call (429, 5xx, timeout) is tried again this often
    call_timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)  # seconds one model call may take
    optimizer_model: str = ""  # "" → the backend's default model
    target_model: str = ""  # "" → the optimizer's (chat harness) / the agent's own (CLI harness)
    gate: Literal["on", "off"] = "on"  # accept edits only when held-out real tasks improve
    gate_metric: Literal["hard", "soft", "mixed"] = "mixed"
    gate_min_wins: int = Field(default=2, ge=1)  # held-out tasks a candidate must score higher on (none lower)
    rollouts_k: int = Field(default=1, ge=1)  # samples per task and skill
    candidates: int = Field(default=1, ge=1, le=8)  # candidate skills each step gates ([train] candidates)
    min_support: int = Field(default=2, ge=1)  # distinct trajectories an edit must rest on ([train] min_support)
    preferences: str = ""  # the user's rules, given to the optimizer as a prior
    budget_tokens: int = Field(default=0, ge=0)  # 0 → no cap
    budget_usd: float = Field(default=0.0, ge=0, allow_inf_nan=False)  # 0 → no cap
    max_tasks: int = Field(default=20, ge=1)  # mined tasks per night
    since: str = "30d"  # harvest window: ISO date/time or a span (30m, 24h, 7d, 2w)
    auto_adopt: bool = False  # write the live skill after an accepted gate (backup first)
    steps: int = Field(default=2, ge=1)  # training steps per night
    dreams: int = Field(default=1, ge=0)  # dreamed paraphrases per training task
    min_recurrence: int = Field(default=2, ge=1)  # sessions a task must recur in to be mined
    context_chars: int = Field(
        default=CONTEXT_CHARS, ge=0
    )  # a skill folder's other files shown to the optimizer; 0 → none
    edit_frontmatter: bool = False  # edits may change the skill's frontmatter (name, description, …)
    # which skills a night trains when `skill` is empty (docs/sleep.md, Which skills a night trains):
    # "used" → each writable skill the sessions used, and the managed skill for the rest;
    # "managed" → the managed skill alone; a list of names → only those of the used skills
    skills: Literal["used", "managed"] | list[str] = "used"

    @field_validator("harness")
    @classmethod
    def _known_harness(cls, name: str, info: ValidationInfo) -> str:
        known = list((info.context or {}).get("harnesses") or ())
        if known and name not in known:  # the error pydantic gives a Literal, so it reads the same
            expected = ", ".join(map(repr, known[:-1])) + f" or {known[-1]!r}" if len(known) > 1 else repr(known[0])
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return name

    @field_validator("skills", mode="before")
    @classmethod
    def _skill_names(cls, skills: object) -> object:
        """One error for any bad value (not one a branch of the union): "used", "managed" or names."""
        if skills in ("used", "managed"):
            return skills
        if not isinstance(skills, list) or not all(isinstance(n, str) for n in skills):
            raise PydanticCustomError("skills_value", "expected 'used', 'managed' or a list of skill names")
        if not skills or not all(n.strip() for n in skills):
            raise PydanticCustomError(
                "skills_value", "name one skill or more, none empty (`skillsleep skills` lists them)"
            )
        return [n.strip() for n in skills]

    @field_validator("since")
    @classmethod
    def _since_syntax(cls, text: str) -> str:
        problem = check_since(text)
        if problem:  # not a ValueError: its message would name the table, not `[sleep] since`
            raise PydanticCustomError("since_syntax", problem)
        return text


class UserConfig(_Section):
    """Everything `config.toml` may hold. An absent file is `UserConfig()` (all defaults)."""

    harvest: HarvestSection = Field(default_factory=HarvestSection)
    # `[harness.<name>]`: settings of one replay harness (command, target_model, base_url, …),
    # validated against that harness's own settings model by the caller (core knows no harness).
    harness: dict[str, dict[str, Any]] = Field(default_factory=dict)
    sleep: SleepSection = Field(default_factory=SleepSection)  # `[sleep]`: the nightly cycle
    executor: ExecutorSection = Field(default_factory=ExecutorSection)  # `[executor]`: where rollouts run
    # `[prices]`: USD per million tokens by `provider:model` (or `provider:*`), over the built-in
    # ones (each provider's own, `ProviderInfo.prices`); a run config's own `[prices]` goes over these
    prices: dict[str, Price] = Field(default_factory=dict)

    @field_validator("prices")
    @classmethod
    def _price_keys(cls, prices: dict[str, Price]) -> dict[str, Price]:
        bad = [key for key in prices if not key.partition(":")[0] or not key.partition(":")[2]]
        if bad:  # a key without its provider would never match a call
            raise PydanticCustomError(
                "price_key",
                "{keys}: write provider:model or provider:*, e.g. deepseek:deepseek-v4-flash",
                {"keys": ", ".join(map(repr, bad))},
            )
        return prices


def parse_user_config(text: str, path: Path, *, harnesses: Sequence[str] = ()) -> UserConfig:
    """Validate the text of the config file at `path`; ConfigError naming `path` on any problem.
    `[sleep] harness` must be one of `harnesses` (when given: the caller knows the harnesses).

    `chat_dirs` come back absolute and resolved: `~` expanded, relative ones joined to `path`'s folder."""
    raw = load_toml(text, str(path), fix="fix the file or move it away")
    problems = _unknown_keys(UserConfig, raw, ())
    if problems:
        raise ConfigError(f"{path}: " + f"\n{path}: ".join(problems))
    try:
        cfg = UserConfig.model_validate(raw, context={"harnesses": harnesses})
    except ValidationError as exc:
        lines = describe_validation_error(exc, default_source=str(path))
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
    base = path.parent
    cfg.harvest.chat_dirs = [str(_absolute(d, base, f"{path}: [harvest] chat_dirs")) for d in cfg.harvest.chat_dirs]
    return cfg


def _absolute(text: str, base: Path, what: str) -> Path:
    p = user_path(text, what)
    return (p if p.is_absolute() else base / p).resolve()


def _unknown_keys(model: type[BaseModel], data: Mapping[str, Any], prefix: tuple[str, ...]) -> list[str]:
    """One message per key the schema does not know, always listing the known keys."""
    problems: list[str] = []
    fields = model.model_fields
    for key, value in data.items():
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            where = f"[{'.'.join(prefix)}] unknown key" if prefix else "unknown table or key"
            problems.append(f"{where} {key!r} ({hint}known: {', '.join(fields)})")
            continue
        sub = fields[key].annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and isinstance(value, dict):
            problems += _unknown_keys(sub, value, (*prefix, key))
    return problems


class Setting(BaseModel):
    """One effective list setting: its value, the level it came from and every level's input.

    `source` is the highest level that set it ("default" when none did). `layers` holds what
    each level that set it gave — for `replace` the lower ones are shown but not used."""

    model_config = ConfigDict(extra="forbid")

    value: list[str]
    source: Origin
    merge: Merge
    layers: dict[Origin, list[str]] = Field(default_factory=dict)


def layer(merge: Merge, layers: Mapping[Origin, list[str] | None], default: list[str] | None = None) -> Setting:
    """Combine the levels of one list setting. A level that is None or empty did not set it.

    `replace`: the highest level that set it wins. `extend`: file, env, then flag items, each
    once, in that order (a higher level adds to the lower ones and never removes from them)."""
    given: dict[Origin, list[str]] = {o: list(v) for o in ORIGINS if o != "default" and (v := layers.get(o))}
    source: Origin = next((o for o in ORIGINS if o in given), "default")
    if source == "default":
        value = list(default or [])
    elif merge == "replace":
        value = given[source]
    else:
        value = list(dict.fromkeys(item for o in reversed(ORIGINS) for item in given.get(o, [])))
    return Setting(value=value, source=source, merge=merge, layers=given)
