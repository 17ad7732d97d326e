"""run.toml values are taken as TOML typed them (no coercion), and the split fractions must be shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.train.config import load_config

MINIMAL = '[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(MINIMAL + text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[train]\nepochs = true\n", "[train] epochs: expected an integer, got true"),
        ('[train]\nepochs = "2"\n', "[train] epochs: expected an integer, got '2'"),
        ("[train]\nepochs = 2.0\n", "[train] epochs: expected an integer, got 2.0"),
        ('[slow_update]\nenabled = "yes"\n', "[slow_update] enabled: expected true or false, got 'yes'"),
        ("[gate]\nno_regress = 1\n", "[gate] no_regress: expected true or false, got 1"),
        ('[target]\ntemperature = "0.5"\n', "[target] temperature: expected a number, got '0.5'"),
        ('[target.retry]\nattempts = "3"\n', "[target.retry] attempts: expected an integer, got '3'"),
    ],
)
def test_a_value_of_the_wrong_toml_type_is_refused_not_converted(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config(tmp_path, text))
    assert f"run.toml: {message}" in str(info.value)


def test_an_integer_is_still_a_number_where_a_float_is_expected(tmp_path: Path) -> None:
    cfg = load_config(config(tmp_path, "[budget]\nusd = 2\n[target]\ntimeout_s = 600\n"))
    assert cfg.budget.usd == 2.0 and cfg.target.timeout_s == 600.0


@pytest.mark.parametrize(
    ("override", "get", "expected"),
    [
        ("train.epochs=3", lambda c: c.train.epochs, 3),
        ("budget.usd=1", lambda c: c.budget.usd, 1.0),
        ("slow_update.enabled=false", lambda c: c.slow_update.enabled, False),
        ("data.split={train = 0.6, val = 0.4, test = 0}", lambda c: c.data.split.test, 0.0),
    ],
)
def test_command_line_overrides_are_read_as_toml_values(tmp_path: Path, override: str, get, expected) -> None:
    assert get(load_config(config(tmp_path, ""), [override])) == expected


def test_an_override_of_the_wrong_type_names_the_override(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"override 'slow_update.enabled=yes': \[slow_update\] enabled: expected true or false"
    ):
        load_config(config(tmp_path, ""), ["slow_update.enabled=yes"])


def test_split_fractions_that_add_up_to_more_than_one_are_refused(tmp_path: Path) -> None:
    path = config(tmp_path, "[data.split]\ntrain = 0.5\nval = 1.0\ntest = 1.0\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert (
        "run.toml: [data.split] fractions add up to 2.5 (train 0.5 + val 1 + test 1); set them so they add up to 1"
    ) in str(info.value)


def test_a_split_fraction_above_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[data.split\] val: must be <= 1, got 2.0"):
        load_config(config(tmp_path, "[data.split]\ntrain = 0.5\nval = 2.0\ntest = 0.2\n"))


def test_split_fractions_name_the_default_that_tips_the_sum(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"fractions add up to 1\.2 \(train 0\.8 \+ val 0\.2 \+ default test 0\.2\)"):
        load_config(config(tmp_path, "[data.split]\ntrain = 0.8\nval = 0.2\n"))


def test_split_fractions_that_add_up_to_one_in_floating_point_load(tmp_path: Path) -> None:
    cfg = load_config(config(tmp_path, "[data.split]\ntrain = 0.7\nval = 0.2\ntest = 0.1\n"))
    assert (cfg.data.split.train, cfg.data.split.val, cfg.data.split.test) == (0.7, 0.2, 0.1)
