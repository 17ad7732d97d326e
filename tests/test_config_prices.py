"""`skillsleep config` shows `[prices]`: every price a command starts from, the built-in ones and
config.toml's over them, each with where it came from (text and --json)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from click.testing import CliRunner
from test_user_config import home, write_config  # noqa: F401  (home: a fixture)

from skillsleep.core.models.backends.registry import default_prices
from skillsleep.harnesses.providers import register_providers
from skillsleep.slash_commands.cli import main

PRICES = (
    '[prices]\n"openai:my-model" = {input = 3.0, output = 6.0}\n'
    '"deepseek:deepseek-v4-flash" = {input = 0.2, output = 0.4, cached_input = 0.01}\n'
)


def test_config_json_lists_the_effective_prices_with_the_source_of_each(home: Path) -> None:
    write_config(home, PRICES)
    result = CliRunner().invoke(main, ["config", "--json"])
    assert result.exit_code == 0, result.output
    prices = json.loads(result.stdout)["prices"]
    assert set(prices) == {*default_prices(), "openai:my-model"}
    mine = prices["openai:my-model"]
    assert mine["source"] == "file" and mine["value"]["input"] == 3.0 and set(mine["layers"]) == {"file"}
    flash = prices["deepseek:deepseek-v4-flash"]  # config.toml's over the built-in one, which is kept
    assert flash["source"] == "file" and flash["value"]["input"] == 0.2
    assert flash["layers"]["default"] == default_prices()["deepseek:deepseek-v4-flash"].model_dump(mode="json")
    assert prices["scripted:*"] == {
        "value": {"input": 0.0, "output": 0.0, "cached_input": None, "cache_write": None},
        "source": "default",
        "layers": {"default": {"input": 0.0, "output": 0.0, "cached_input": None, "cache_write": None}},
    }


def test_config_text_shows_each_price_as_a_config_toml_line_with_where_it_came_from(home: Path) -> None:
    path = write_config(home, PRICES)
    text = CliRunner().invoke(main, ["config"]).stdout
    assert f'  "openai:my-model" = {{input = 3.0, output = 6.0}}  ← file: [prices] in {path}' in text
    assert '"deepseek:deepseek-v4-flash" = {input = 0.2, output = 0.4, cached_input = 0.01}  ← file' in text
    assert (
        "    {input = 0.14, output = 0.28, cached_input = 0.0028}  ← default (built in) (overridden, not used)" in text
    )
    assert '  "anthropic:claude-sonnet-5" = {input = 2.0, output = 10.0, cached_input = 0.2, cache_write = 2.5}' in text
    assert f"has no price: a money cap over it is refused until you give one under [prices] in {path}" in text
    # every price line reads back as the [prices] table it shows
    shown = [line.split("  ←")[0].strip() for line in text.splitlines() if line.startswith('  "')]
    table = tomllib.loads("[prices]\n" + "\n".join(shown))["prices"]
    assert table["openai:my-model"] == {"input": 3.0, "output": 6.0} and len(table) == len(default_prices()) + 1


def test_config_without_a_file_shows_the_built_in_prices(home: Path) -> None:
    result = CliRunner().invoke(main, ["config", "--json"])
    assert result.exit_code == 0, result.output
    prices = json.loads(result.stdout)["prices"]
    assert set(prices) == set(default_prices()) and all(p["source"] == "default" for p in prices.values())


def test_the_built_in_prices_are_the_providers_own_in_registration_order() -> None:
    """The `[prices]` defaults come from each provider's record; this table pins them (USD per
    million tokens), so moving a price is a change a test sees. The agents' providers come last
    (registered by the command line: harnesses/providers.py)."""
    register_providers()
    table = {key: price.model_dump(exclude_none=True) for key, price in default_prices().items()}
    assert table == {
        "deepseek:deepseek-v4-flash": {"input": 0.14, "output": 0.28, "cached_input": 0.0028},
        "deepseek:deepseek-v4-pro": {"input": 0.435, "output": 0.87, "cached_input": 0.003625},
        "anthropic:claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cached_input": 0.10, "cache_write": 1.25},
        "anthropic:claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cached_input": 0.30, "cache_write": 3.75},
        "anthropic:claude-opus-4-5": {"input": 5.0, "output": 25.0, "cached_input": 0.50, "cache_write": 6.25},
        "anthropic:claude-sonnet-5": {"input": 2.0, "output": 10.0, "cached_input": 0.20, "cache_write": 2.50},
        "anthropic:claude-opus-5": {"input": 5.0, "output": 25.0, "cached_input": 0.50, "cache_write": 6.25},
        "local:*": {"input": 0.0, "output": 0.0},
        "scripted:*": {"input": 0.0, "output": 0.0},
        "claude-code:default": {"input": 5.0, "output": 25.0, "cached_input": 0.50, "cache_write": 6.25},
        "claude-code:sonnet": {"input": 2.0, "output": 10.0, "cached_input": 0.20, "cache_write": 2.50},
        "claude-code:opus": {"input": 5.0, "output": 25.0, "cached_input": 0.50, "cache_write": 6.25},
        "claude-code:haiku": {"input": 1.0, "output": 5.0, "cached_input": 0.10, "cache_write": 1.25},
        "claude-code:claude-sonnet-5": {"input": 2.0, "output": 10.0, "cached_input": 0.20, "cache_write": 2.50},
        "claude-code:claude-opus-5": {"input": 5.0, "output": 25.0, "cached_input": 0.50, "cache_write": 6.25},
        "claude-code:claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cached_input": 0.10, "cache_write": 1.25},
        "claude-code:claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cached_input": 0.30, "cache_write": 3.75},
        "claude-code:claude-opus-4-5": {"input": 5.0, "output": 25.0, "cached_input": 0.50, "cache_write": 6.25},
    }
    built_in = ["deepseek"] * 2 + ["anthropic"] * 5 + ["local", "scripted"]
    assert [key.partition(":")[0] for key in table] == built_in + ["claude-code"] * 9  # codex: unpriced
