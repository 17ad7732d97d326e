"""Training configuration: one TOML file (optionally extending others) → one `TrainConfig`.

Every section is a pydantic model with `extra="forbid"`, so a mistyped key is an error that
names the file, the section and the closest known key. Only `data.tasks` and `data.skill` are
required. `extends = "base.toml"` (relative to the file) merges a parent deeply: the child wins
key by key, tables merge recursively, chains are followed and cycles refused. Relative data
paths (`data.tasks`, `data.skill`, `run.out_dir`) are made absolute against the directory of
the file that set them. Overrides (`train.epochs=3`) are applied last; values parse as TOML
scalars, falling back to a plain string. Validation is strict, as TOML gives typed values:
`epochs = true`, `epochs = "2"` or `enabled = "yes"` is an error naming the key, never a
silent conversion (an integer is still a number where a float is expected).
"""

from __future__ import annotations

import copy
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from skillsleep.core.document.textfile import load_toml, read_text_file, user_path
from skillsleep.core.models.backends.registry import default_prices
from skillsleep.core.models.ledger import Budget, Price
from skillsleep.core.models.model_set import JudgeSection, ModelRoles, ModelSection, OptimizerSection
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.validation import describe_validation_error, location, source_of, unknown_keys
from skillsleep.core.train.gate import GateConfig
from skillsleep.core.train.schedule import LRSchedule

__all__ = [
    "TrainConfig",
    "describe_validation_error",
    "load_config",
    "resolve_path",
]

CONTEXT_CHARS = 12000  # `[train] context_chars`: a skill folder's other files, in all, shown to the optimizer
_PATH_KEYS = (("data", "tasks"), ("data", "skill"), ("run", "out_dir"))


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSection(_Section):
    """Run identity and where run directories go."""

    name: str = ""  # empty → the config file's directory name
    out_dir: str = "runs"
    seed: int = 0


class SplitFractions(_Section):
    """Shares of tasks without an explicit split: each between 0 and 1, together 1."""

    train: float = Field(default=0.5, ge=0, le=1)
    val: float = Field(default=0.3, ge=0, le=1)
    test: float = Field(default=0.2, ge=0, le=1)

    @model_validator(mode="after")
    def _add_up_to_one(self) -> SplitFractions:
        total = self.train + self.val + self.test
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            shares = " + ".join(
                f"{'' if name in self.model_fields_set else 'default '}{name} {getattr(self, name):g}"
                for name in ("train", "val", "test")
            )
            raise ValueError(f"fractions add up to {total:g} ({shares}); set them so they add up to 1")
        return self


class DataSection(_Section):
    """The task file and the skill being trained."""

    tasks: str
    skill: str
    split: SplitFractions = Field(default_factory=SplitFractions)


class TrainSection(_Section):
    """Loop sizes."""

    epochs: int = Field(default=2, ge=1)
    steps_per_epoch: int = Field(default=0, ge=0)  # 0 → ceil(len(train) / batch_size)
    batch_size: int = Field(default=8, ge=1)
    minibatch_size: int = Field(default=4, ge=1)
    rollouts_k: int = Field(default=1, ge=1)
    merge_group_size: int = Field(default=8, ge=1)
    candidates: int = Field(default=1, ge=1, le=8)  # candidate skills a step gates (core/train/candidates.py)
    fallback: bool = False  # with 1 candidate, a step whose own edits change nothing gates another form
    min_support: int = Field(default=1, ge=1)  # distinct trajectories an edit must rest on to be ranked
    context_chars: int = Field(
        default=CONTEXT_CHARS, ge=0
    )  # a skill folder's other files shown to the optimizer; 0 → none

    def steps(self, n_train: int) -> int:
        """Steps per epoch for a train split of `n_train` tasks."""
        return self.steps_per_epoch or max(1, math.ceil(n_train / self.batch_size))


class EditsSection(_Section):
    """Bounds on one edit and on the whole skill."""

    max_content_chars: int = Field(default=500, ge=1)
    max_content_lines: int = Field(default=4, ge=1)
    max_skill_chars: int = Field(default=0, ge=0)  # 0 → no cap
    edit_frontmatter: bool = False  # edits may replace or delete frontmatter lines (name, description, …)


class SlowUpdateSection(_Section):
    """Epoch-boundary comparison of the previous and current skill."""

    enabled: bool = True
    sample_size: int = Field(default=20, ge=1)
    max_lines: int = Field(default=8, ge=1)


class MetaSection(_Section):
    """Optimizer-side memory carried across epochs."""

    enabled: bool = True
    max_lines: int = Field(default=12, ge=1)


class BudgetSection(_Section):
    """Hard caps; 0 means no cap."""

    tokens: int = Field(default=0, ge=0)
    usd: float = Field(default=0.0, ge=0)

    def to_budget(self) -> Budget:
        return Budget(tokens=self.tokens or None, usd=self.usd or None)


class ReflectSection(_Section):
    """What the user wants the optimizer to favour, in their words."""

    preferences: str = ""


class CacheSection(_Section):
    """The response cache."""

    enabled: bool = True


class TrainConfig(_Section):
    """Everything one training run is configured by."""

    run: RunSection = Field(default_factory=RunSection)
    data: DataSection
    target: ModelSection = Field(default_factory=ModelSection)
    optimizer: OptimizerSection = Field(default_factory=OptimizerSection)
    judge: JudgeSection = Field(default_factory=JudgeSection)
    train: TrainSection = Field(default_factory=TrainSection)
    lr: LRSchedule = Field(default_factory=LRSchedule)
    gate: GateConfig = Field(default_factory=GateConfig)
    edits: EditsSection = Field(default_factory=EditsSection)
    slow_update: SlowUpdateSection = Field(default_factory=SlowUpdateSection)
    meta: MetaSection = Field(default_factory=MetaSection)
    budget: BudgetSection = Field(default_factory=BudgetSection)
    prices: dict[str, Price] = Field(default_factory=default_prices)  # the providers' own, then [prices]
    reflect: ReflectSection = Field(default_factory=ReflectSection)
    cache: CacheSection = Field(default_factory=CacheSection)

    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _sources: list[Path] = PrivateAttr(default_factory=list)

    @classmethod
    def from_overrides(cls, overrides: Sequence[str] = (), *, prices: Mapping[str, Price] | None = None) -> TrainConfig:
        """A config with no file: defaults plus `section.key=value` overrides (data.* among them);
        `prices` (config.toml's `[prices]`) go over the providers' own."""
        return _build([], overrides, base_dir=Path.cwd(), source="overrides", prices=prices)

    @property
    def base_dir(self) -> Path:
        """Directory of the config file; relative paths resolve against it."""
        return self._base_dir

    @property
    def sources(self) -> list[Path]:
        """The files this config was read from, child first."""
        return list(self._sources)

    @property
    def roles(self) -> ModelRoles:
        """What the run's `Models` are built from: the three sections (the judge's filled in) and the seed."""
        return ModelRoles(target=self.target, optimizer=self.optimizer, judge=self.judge_model, seed=self.run.seed)

    @property
    def judge_model(self) -> ModelSection:
        """The judge settings with an empty backend filled in from the optimizer."""
        if self.judge.backend:
            return self.judge
        return self.judge.model_copy(
            update={"backend": self.optimizer.backend, "base_url": self.judge.base_url or self.optimizer.base_url}
        )


def resolve_path(cfg: TrainConfig, p: str) -> Path:
    """A path from the config: absolute as is, else relative to the config file's directory."""
    path = user_path(p, "a path in the run config")
    return path if path.is_absolute() else cfg.base_dir / path


def load_config(path: Path, overrides: Sequence[str] = (), *, prices: Mapping[str, Price] | None = None) -> TrainConfig:
    """Read a TOML config (following `extends`), apply overrides, validate; ConfigError on any problem.
    Its own `[prices]` table goes over `prices` (config.toml's), which go over the providers' own."""
    path = user_path(str(path), "--config").resolve()
    return _build(_read_chain(path, []), overrides, base_dir=path.parent, source=_label(path), prices=prices)


def _build(
    chain: list[tuple[Path, dict[str, Any]]],
    overrides: Sequence[str],
    *,
    base_dir: Path,
    source: str,
    prices: Mapping[str, Price] | None,
) -> TrainConfig:
    base = {**default_prices(), **(prices or {})}
    merged: dict[str, Any] = {"prices": {k: v.model_dump() for k, v in base.items()}}
    origin: dict[tuple[str, ...], str] = {}
    for file, raw in reversed(chain):  # parents first, so children win
        _merge(merged, raw, origin, _label(file), ())
    for text in overrides:
        parsed = _parse_override(text)
        _absolutize(parsed, base_dir, f"override {text!r}")
        _merge(merged, parsed, origin, f"override {text!r}", ())
    lines = [
        f"{source_of(loc, origin, source)}: {location(loc, True)}expected a finite number, got {value}"
        for loc, value in _non_finite(merged, ())
    ]  # TOML has inf and nan; no setting means them
    try:
        cfg = TrainConfig.model_validate(merged, strict=True)  # TOML values are typed: no coercion
    except ValidationError as exc:
        lines += describe_validation_error(exc, origin=origin, default_source=source)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
    cfg._base_dir = base_dir
    cfg._sources = [file for file, _ in chain]
    if not cfg.run.name:
        cfg.run.name = base_dir.name or "run"
    cfg.run.out_dir = str(resolve_path(cfg, cfg.run.out_dir))  # the default "runs" too
    return cfg


def _label(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read_chain(path: Path, seen: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """[(file, raw dict with paths made absolute)], child first, following `extends`."""
    if path in seen:
        cycle = " → ".join(_label(p) for p in [*seen[seen.index(path) :], path])
        raise ConfigError(f"extends cycle: {cycle}")
    by = f" (extended by {_label(seen[-1])})" if seen else ""
    text = read_text_file(path, "config file", shown=_label(path) + by, instead="a TOML run config")
    raw = load_toml(text, _label(path))
    problems = [f"{_label(path)}: {p}" for p in unknown_keys(TrainConfig, raw, (), allow={"extends"})]
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
    parent = raw.pop("extends", None)
    _absolutize(raw, path.parent, _label(path))
    chain = [(path, raw)]
    if parent is not None:
        if not isinstance(parent, str):
            raise ConfigError(f"{_label(path)}: extends: expected a file path string, got {parent!r}")
        parent_path = path.parent / user_path(parent, f"{_label(path)}: extends")
        chain += _read_chain(parent_path.resolve(), [*seen, path])
    return chain


def _non_finite(table: dict[str, Any], prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], float]]:
    """(key path, value) of every inf or nan in a merged config."""
    found: list[tuple[tuple[str, ...], float]] = []
    for key, value in table.items():
        if isinstance(value, dict):
            found += _non_finite(value, (*prefix, key))
        elif isinstance(value, float) and not math.isfinite(value):
            found.append(((*prefix, key), value))
    return found


def _absolutize(raw: dict[str, Any], base: Path, source: str) -> None:
    for section, key in _PATH_KEYS:
        table = raw.get(section)
        if isinstance(table, dict) and isinstance(table.get(key), str):
            p = user_path(table[key], f"{source}: [{section}] {key}")
            table[key] = str(p if p.is_absolute() else base / p)


def _merge(
    into: dict[str, Any], new: dict[str, Any], origin: dict[tuple[str, ...], str], source: str, prefix: tuple[str, ...]
) -> None:
    """Deep-merge `new` into `into`, remembering which source set each leaf."""
    for key, value in new.items():
        path = (*prefix, key)
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value, origin, source, path)
        else:
            into[key] = copy.deepcopy(value)
            for known in [k for k in origin if k[: len(path)] == path]:
                del origin[known]
            origin[path] = source
            if isinstance(value, dict):
                _mark(value, origin, source, path)


def _mark(table: dict[str, Any], origin: dict[tuple[str, ...], str], source: str, prefix: tuple[str, ...]) -> None:
    for key, value in table.items():
        origin[(*prefix, key)] = source
        if isinstance(value, dict):
            _mark(value, origin, source, (*prefix, key))


def _parse_override(text: str) -> dict[str, Any]:
    """`section.key=value` → a nested dict; the value is a TOML scalar or else a plain string."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise ConfigError(f"invalid override {text!r}: expected section.key=value, e.g. train.epochs=3")
    try:
        parsed = tomllib.loads(f"{key} = {value}")
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):  # not a TOML value (too deep, too long): a string
        try:
            parsed = tomllib.loads(f"{key} = {json.dumps(value)}")
        except tomllib.TOMLDecodeError:
            raise ConfigError(f"invalid override {text!r}: {key!r} is not a valid key path") from None
    problems = unknown_keys(TrainConfig, parsed, ())
    if problems:
        raise ConfigError(f"override {text!r}: {problems[0]}")
    return parsed
