"""`[prices]` as `skillsleep config` shows it: every price a command starts from (the built-in
ones, config.toml's over them), each with where it came from, as config.toml lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skillsleep.core.models.backends.registry import default_prices
from skillsleep.core.models.ledger import Price
from skillsleep.core.night.user_config import UserConfig


class PriceSetting(BaseModel):
    """One effective price (USD per million tokens) of `[prices]`: the one used, where it came
    from ("file": config.toml, "default": built in) and what each level gave."""

    model_config = ConfigDict(extra="forbid")

    value: Price
    source: Literal["file", "default"]
    layers: dict[Literal["file", "default"], Price]


def effective_prices(cfg: UserConfig) -> dict[str, PriceSetting]:
    """The prices every command starts from: the built-in ones, config.toml's `[prices]` over them
    (a run config's own `[prices]` goes over these for that run)."""
    out = {}
    built_in = default_prices()
    for key in sorted({*built_in, *cfg.prices}):
        layers: dict[Literal["file", "default"], Price] = {}
        if key in cfg.prices:
            layers["file"] = cfg.prices[key]
        if key in built_in:
            layers["default"] = built_in[key]
        source: Literal["file", "default"] = "file" if key in cfg.prices else "default"
        out[key] = PriceSetting(value=layers[source], source=source, layers=layers)
    return out


def prices_text(prices: dict[str, PriceSetting], path: Path) -> list[str]:
    """`[prices]` as config.toml lines, each with where it came from."""

    def toml(price: Price) -> str:
        return "{" + ", ".join(f"{k} = {v}" for k, v in price if v is not None) + "}"

    origin = {"file": f"file: [prices] in {path}", "default": "default (built in)"}
    lines = ["prices (USD per million tokens; config.toml's go over the built-in ones, a run config's over both):"]
    for key, setting in prices.items():
        lines.append(f"  {json.dumps(key, ensure_ascii=False)} = {toml(setting.value)}  ← {origin[setting.source]}")
        lines += [
            f"    {toml(price)}  ← {origin[level]} (overridden, not used)"
            for level, price in setting.layers.items()
            if level != setting.source
        ]
    lines.append(
        f"  a model not listed (by provider:model or provider:*) has no price: a money cap over it is refused "
        f"until you give one under [prices] in {path}"
    )
    return lines
