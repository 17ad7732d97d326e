"""`skillsleep config` shows `[prices]`: every price a command starts from, the built-in ones and
config.toml's over them, each with where it came from (text and --json)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from click.testing import CliRunner
from test_user_config import home, write_config  # noqa: F401  (home: a fixture)

from skillsleep.core.train.config import DEFAULT_PRICES
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
    assert set(prices) == {*DEFAULT_PRICES, "openai:my-model"}
    mine = prices["openai:my-model"]
    assert mine["source"] == "file" and mine["value"]["input"] == 3.0 and set(mine["layers"]) == {"file"}
    flash = prices["deepseek:deepseek-v4-flash"]  # config.toml's over the built-in one, which is kept
    assert flash["source"] == "file" and flash["value"]["input"] == 0.2
    assert flash["layers"]["default"] == DEFAULT_PRICES["deepseek:deepseek-v4-flash"].model_dump(mode="json")
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
    assert table["openai:my-model"] == {"input": 3.0, "output": 6.0} and len(table) == len(DEFAULT_PRICES) + 1


def test_config_without_a_file_shows_the_built_in_prices(home: Path) -> None:
    result = CliRunner().invoke(main, ["config", "--json"])
    assert result.exit_code == 0, result.output
    prices = json.loads(result.stdout)["prices"]
    assert set(prices) == set(DEFAULT_PRICES) and all(p["source"] == "default" for p in prices.values())
