"""`[sleep]` in config.toml: the settings of `skillsleep run`, layered flag > env > file > default."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.core.night.user_config import SleepSection, UserConfig, check_since
from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands import wiring
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.wiring import SLEEP_ENVS, SLEEP_FLAGS, parse_user_config, sleep_settings

DEFAULTS = {
    "harness": "chat",
    "skill": "",
    "backend": "local",
    "base_url": "",
    "retries": 3,
    "call_timeout": 120.0,
    "optimizer_model": "",
    "target_model": "",
    "gate": "on",
    "gate_metric": "mixed",
    "gate_min_wins": 2,
    "rollouts_k": 1,
    "candidates": 1,
    "min_support": 2,
    "preferences": "",
    "budget_tokens": 0,
    "budget_usd": 0.0,
    "max_tasks": 20,
    "since": "30d",
    "auto_adopt": False,
    "steps": 2,
    "dreams": 1,
    "min_recurrence": 2,
    "context_chars": 12000,
    "edit_frontmatter": False,
    "skills": "used",
}


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SKILLSLEEP_HOME in tmp (so config.toml is $SKILLSLEEP_HOME/config.toml); the autouse
    fixture of conftest has removed every SKILLSLEEP_<KEY> variable."""
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def write_config(home: Path, text: str) -> Path:
    path = home / "config.toml"
    path.write_text(text)
    return path


def test_the_env_and_flag_names_follow_the_keys() -> None:
    assert list(SLEEP_ENVS) == list(DEFAULTS) == list(SLEEP_FLAGS)
    assert SLEEP_ENVS["rollouts_k"] == "SKILLSLEEP_ROLLOUTS_K" and SLEEP_ENVS["base_url"] == "SKILLSLEEP_BASE_URL"
    assert SLEEP_FLAGS["rollouts_k"] == "--rollouts-k" and SLEEP_FLAGS["gate"] == "--gate"
    assert SLEEP_FLAGS["auto_adopt"] == "--auto-adopt" and SLEEP_FLAGS["min_recurrence"] == "--min-recurrence"


def test_no_file_and_no_env_means_the_defaults(home: Path) -> None:
    s = sleep_settings()
    assert s.values.model_dump() == DEFAULTS
    assert {k: (v.value, v.source, v.layers) for k, v in s.settings.items()} == {
        k: (v, "default", {}) for k, v in DEFAULTS.items()
    }
    assert UserConfig().sleep == SleepSection()


def test_the_file_overrides_the_default_only_for_the_keys_it_sets(home: Path) -> None:
    write_config(
        home,
        '[sleep]\nharness = "codex"\nrollouts_k = 3\nbudget_usd = 2\ngate = "on"\n'
        'auto_adopt = true\nsince = "2026-11-28"\n',
    )
    s = sleep_settings()
    assert (s.values.harness, s.values.rollouts_k, s.values.budget_usd, s.values.auto_adopt) == ("codex", 3, 2.0, True)
    assert s.values.since == "2026-11-28"
    # a key the file sets to its default value still comes from the file
    assert (s.settings["gate"].value, s.settings["gate"].source) == ("on", "file")
    assert s.settings["rollouts_k"].layers == {"file": 3}
    assert (s.settings["max_tasks"].value, s.settings["max_tasks"].source) == (20, "default")


def test_env_overrides_file_and_flag_overrides_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(home, '[sleep]\nrollouts_k = 3\nbackend = "ollama"\ngate_metric = "hard"\n')
    monkeypatch.setenv("SKILLSLEEP_ROLLOUTS_K", "4")
    monkeypatch.setenv("SKILLSLEEP_BACKEND", "deepseek")
    s = sleep_settings()
    assert (s.values.rollouts_k, s.settings["rollouts_k"].source) == (4, "env")
    assert s.settings["rollouts_k"].layers == {"env": 4, "file": 3}
    assert (s.values.backend, s.values.gate_metric) == ("deepseek", "hard")
    s = sleep_settings({"rollouts_k": 5, "backend": None, "gate_metric": "soft"})
    assert (s.values.rollouts_k, s.settings["rollouts_k"].source) == (5, "flag")
    assert s.settings["rollouts_k"].layers == {"flag": 5, "env": 4, "file": 3}
    assert (s.values.backend, s.settings["backend"].source) == ("deepseek", "env")  # None: flag not given
    assert (s.values.gate_metric, s.settings["gate_metric"].source) == ("soft", "flag")
    monkeypatch.setenv("SKILLSLEEP_ROLLOUTS_K", "")  # empty counts as unset
    assert sleep_settings().settings["rollouts_k"].source == "file"


def test_a_passed_config_is_used_instead_of_the_file(home: Path) -> None:
    write_config(home, "[sleep]\nsteps = 7\n")
    cfg = parse_user_config("[sleep]\nsteps = 9\n", home / "other.toml")
    assert sleep_settings(cfg=cfg).values.steps == 9
    assert sleep_settings().values.steps == 7


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", True),
        ("0", False),
        ("true", True),
        ("FALSE", False),
        ("Yes", True),
        ("no", False),
        ("ON", True),
        (" off ", False),
    ],
)
def test_bool_env_values(home: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: bool) -> None:
    monkeypatch.setenv("SKILLSLEEP_AUTO_ADOPT", text)
    s = sleep_settings()
    assert s.values.auto_adopt is expected and s.settings["auto_adopt"].source == "env"


def test_int_float_and_string_env_values(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in (
        ("SKILLSLEEP_BUDGET_TOKENS", "50000"),
        ("SKILLSLEEP_BUDGET_USD", "1.5"),
        ("SKILLSLEEP_MAX_TASKS", " 8 "),
        ("SKILLSLEEP_DREAMS", "0"),
        ("SKILLSLEEP_GATE", "off"),
        ("SKILLSLEEP_BASE_URL", "http://127.0.0.1:11434"),
        ("SKILLSLEEP_SINCE", "7d"),
        ("SKILLSLEEP_HARNESS", "claude-code"),
        ("SKILLSLEEP_SKILL", "AGENTS.md#Deploys"),
    ):
        monkeypatch.setenv(name, text)
    v = sleep_settings().values
    assert (v.budget_tokens, v.budget_usd, v.max_tasks, v.dreams, v.gate) == (50000, 1.5, 8, 0, "off")
    assert type(v.budget_usd) is float and type(v.budget_tokens) is int
    assert (v.base_url, v.since, v.harness, v.skill) == (
        "http://127.0.0.1:11434",
        "7d",
        "claude-code",
        "AGENTS.md#Deploys",
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("SKILLSLEEP_ROLLOUTS_K", "abc", "SKILLSLEEP_ROLLOUTS_K='abc': expected a whole number ≥ 1"),
        ("SKILLSLEEP_ROLLOUTS_K", "0", "SKILLSLEEP_ROLLOUTS_K='0': expected a whole number ≥ 1"),
        ("SKILLSLEEP_ROLLOUTS_K", "1.5", "SKILLSLEEP_ROLLOUTS_K='1.5': expected a whole number ≥ 1"),
        ("SKILLSLEEP_DREAMS", "-1", "SKILLSLEEP_DREAMS='-1': expected a whole number ≥ 0"),
        ("SKILLSLEEP_BUDGET_USD", "cheap", "SKILLSLEEP_BUDGET_USD='cheap': expected a number ≥ 0"),
        ("SKILLSLEEP_BUDGET_USD", "-0.5", "SKILLSLEEP_BUDGET_USD='-0.5': expected a number ≥ 0"),
        ("SKILLSLEEP_AUTO_ADOPT", "maybe", "SKILLSLEEP_AUTO_ADOPT='maybe': expected true or false"),
        ("SKILLSLEEP_GATE", "true", "SKILLSLEEP_GATE='true': expected one of 'on', 'off'"),
        ("SKILLSLEEP_GATE_METRIC", "best", "SKILLSLEEP_GATE_METRIC='best': expected one of 'hard', 'soft', 'mixed'"),
        ("SKILLSLEEP_HARNESS", "cursor", "SKILLSLEEP_HARNESS='cursor': expected one of 'chat', 'claude-code'"),
        ("SKILLSLEEP_SINCE", "yesterday", "SKILLSLEEP_SINCE='yesterday': 'yesterday' is neither an ISO date/time"),
    ],
)
def test_a_bad_env_value_names_the_variable_and_its_text(
    home: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, message: str
) -> None:
    monkeypatch.setenv(name, text)
    with pytest.raises(ConfigError) as err:
        sleep_settings()
    assert str(err.value).startswith(message), str(err.value)


def test_every_bad_env_value_is_reported_at_once(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_STEPS", "two")  # not a number at all
    monkeypatch.setenv("SKILLSLEEP_GATE", "maybe")  # a string, but not a choice
    with pytest.raises(ConfigError) as err:
        sleep_settings()
    assert str(err.value).splitlines() == [
        "SKILLSLEEP_STEPS='two': expected a whole number ≥ 1",
        "SKILLSLEEP_GATE='maybe': expected one of 'on', 'off'",
    ]


def test_a_bad_flag_value_names_the_flag(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_ROLLOUTS_K", "abc")  # reported too: a bad env var is an error even under a flag
    with pytest.raises(ConfigError, match=r"--max-tasks 0: expected a whole number ≥ 1"):
        sleep_settings({"max_tasks": 0})
    monkeypatch.delenv("SKILLSLEEP_ROLLOUTS_K")
    with pytest.raises(ConfigError, match=r"^--rollouts-k 'x': expected a whole number ≥ 1$"):
        sleep_settings({"rollouts_k": "x"})
    assert sleep_settings({"rollouts_k": "3", "auto_adopt": "yes"}).values.model_dump(
        include={"rollouts_k", "auto_adopt"}
    ) == {"rollouts_k": 3, "auto_adopt": True}  # text flags are parsed
    with pytest.raises(ConfigError, match=r"^--gate 'maybe': expected one of 'on', 'off'$"):
        sleep_settings({"gate": "maybe"})


def test_an_unknown_flag_key_is_a_programming_error(home: Path) -> None:
    with pytest.raises(ValueError, match="rollout_k"):
        sleep_settings({"rollout_k": 2})


# --- the file -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("gate = false", r"\[sleep\] gate: expected 'on' or 'off', got false"),
        ('rollouts_k = "2"', r"\[sleep\] rollouts_k: expected an integer, got '2'"),
        ("rollouts_k = 0", r"\[sleep\] rollouts_k: must be >= 1, got 0"),
        ("candidates = 9", r"\[sleep\] candidates: must be <= 8, got 9"),
        ('auto_adopt = "yes"', r"\[sleep\] auto_adopt: expected true or false, got 'yes'"),
        ("budget_usd = -1.0", r"\[sleep\] budget_usd: must be >= 0, got -1"),
        ('since = "yesterday"', r"\[sleep\] since: 'yesterday' is neither an ISO date/time .* nor a span"),
        ('harness = "cursor"', r"\[sleep\] harness: expected 'chat', 'claude-code', 'codex' or 'openclaw'"),
    ],
)
def test_a_bad_value_in_the_file_names_the_file_the_table_and_the_key(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as err:
        parse_user_config(f"[sleep]\n{body}\n", path)
    assert str(path) in str(err.value)
    assert re.search(message, str(err.value)), str(err.value)


def test_a_bad_file_value_fails_sleep_settings_naming_the_file(home: Path) -> None:
    path = write_config(home, "[sleep]\ngate = false\n")
    with pytest.raises(ConfigError, match=rf"{path}: \[sleep\] gate: expected 'on' or 'off', got false"):
        sleep_settings()


def test_an_unknown_key_in_sleep_names_the_known_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as err:
        parse_user_config("[sleep]\nrollout_k = 2\n", path)
    msg = str(err.value)
    assert f"{path}: [sleep] unknown key 'rollout_k'" in msg and "did you mean 'rollouts_k'" in msg
    assert "known: " + ", ".join(DEFAULTS) in msg


@pytest.mark.parametrize(
    "text",
    [
        "7d",
        "30m",
        "24h",
        "2w",
        " 3 d ",
        "2026-11-28",
        "2026-11-28T22:00+01:00",
        "2026-11-28T22:00:00Z",
        "2026-11-28 22:00",
    ],
)
def test_since_accepts_a_span_or_an_iso_date(text: str) -> None:
    assert check_since(text) is None
    assert SleepSection(since=text).since == text


@pytest.mark.parametrize("text", ["yesterday", "7", "7y", "d7", "", "2026-13-01", "-7d"])
def test_since_rejects_anything_else_naming_both_forms(text: str) -> None:
    problem = check_since(text)
    assert problem is not None and "ISO date/time (2026-11-28" in problem and "span" in problem and "7d" in problem


# --- skillsleep config ----------------------------------------------------------------------------


def test_config_json_shows_the_sleep_settings_with_their_sources(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(home, '[sleep]\nrollouts_k = 3\ngate = "off"\nbackend = "deepseek"\n')
    monkeypatch.setenv("SKILLSLEEP_ROLLOUTS_K", "5")
    monkeypatch.setenv("SKILLSLEEP_AUTO_ADOPT", "yes")
    result = CliRunner().invoke(main, ["config", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    sleep = data["sleep"]
    assert list(sleep) == list(DEFAULTS)
    assert sleep["rollouts_k"] == {"value": 5, "source": "env", "layers": {"env": 5, "file": 3}}
    assert sleep["gate"] == {"value": "off", "source": "file", "layers": {"file": "off"}}
    assert sleep["auto_adopt"] == {"value": True, "source": "env", "layers": {"env": True}}
    assert sleep["max_tasks"] == {"value": 20, "source": "default", "layers": {}}
    assert data["harvest"]["chat_dirs"]["source"] == "default"  # [harvest] still shown as before
    text = CliRunner().invoke(main, ["config"]).stdout
    assert "sleep.rollouts_k = 5  ← env: SKILLSLEEP_ROLLOUTS_K" in text
    assert f"  3  ← file: [sleep] rollouts_k in {path} (overridden, not used)" in text
    assert f'sleep.backend = "deepseek"  ← file: [sleep] backend in {path}' in text
    assert 'sleep.since = "30d"  ← default' in text
    assert "harvest.chat_dirs (the highest level wins):\n  (none)  ← default" in text


def test_config_with_a_bad_sleep_env_var_is_a_usage_error_naming_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_BUDGET_TOKENS", "lots")
    result = CliRunner().invoke(main, ["config"])
    assert result.exit_code == 2
    assert "SKILLSLEEP_BUDGET_TOKENS='lots': expected a whole number ≥ 0" in result.stderr


def test_origin_label_names_each_level_of_a_sleep_setting(home: Path) -> None:
    where = wiring.config_file()
    assert wiring.origin_label("flag", "sleep.rollouts_k", where) == "--rollouts-k"
    assert wiring.origin_label("env", "sleep.gate_metric", where) == "SKILLSLEEP_GATE_METRIC"
    assert wiring.origin_label("file", "sleep.since", where) == f"[sleep] since in {where.path}"
    assert wiring.origin_label("default", "sleep.since", where) == "default"


def test_the_autouse_fixture_clears_every_sleep_variable() -> None:
    assert not [name for name in SLEEP_ENVS.values() if name in os.environ]


# --- base_url: a malformed URL is refused before any work ----------------------------------------

BAD_URLS = [
    ("127.0.0.1:8080", "no scheme"),
    ("localhost:11434/v1", "no scheme"),
    ("ftp://models.example/v1", "'ftp'"),
    ("http:///v1", "no host"),
    ("http://local host:8080/v1", "space"),
    ("http://127.0.0.1:99999/v1", "port"),
    ("http://127.0.0.1:port/v1", "port"),
]


@pytest.mark.parametrize(("url", "why"), BAD_URLS)
def test_a_malformed_base_url_names_where_it_was_set(
    home: Path, monkeypatch: pytest.MonkeyPatch, url: str, why: str
) -> None:
    with pytest.raises(ConfigError) as err:
        sleep_settings({"base_url": url})
    assert str(err.value).startswith(f"--base-url {url!r}: ") and why in str(err.value), str(err.value)
    assert "http://127.0.0.1:8080/v1" in str(err.value)  # what a good one looks like
    monkeypatch.setenv("SKILLSLEEP_BASE_URL", url)
    with pytest.raises(ConfigError, match=r"^SKILLSLEEP_BASE_URL=") as err:
        sleep_settings()
    assert why in str(err.value)
    monkeypatch.delenv("SKILLSLEEP_BASE_URL")
    path = write_config(home, f"[sleep]\nbase_url = {json.dumps(url)}\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: [sleep] base_url: ")) as err:
        sleep_settings()
    assert why in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "https://api.deepseek.com",
        "http://[::1]:11434",
        "http://localhost:11434/",
        "https://user@models.example:8443/v1",
    ],
)
def test_a_well_formed_base_url_is_kept(home: Path, url: str) -> None:
    assert sleep_settings({"base_url": url}).values.base_url == url


def test_retries_and_call_timeout_layer_like_every_sleep_setting(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (SLEEP_FLAGS["retries"], SLEEP_FLAGS["call_timeout"]) == ("--retries", "--call-timeout")
    assert (SLEEP_ENVS["retries"], SLEEP_ENVS["call_timeout"]) == ("SKILLSLEEP_RETRIES", "SKILLSLEEP_CALL_TIMEOUT")
    write_config(home, "[sleep]\nretries = 5\ncall_timeout = 30\n")
    monkeypatch.setenv("SKILLSLEEP_CALL_TIMEOUT", "12.5")
    s = sleep_settings({"retries": 0})
    assert (s.values.retries, s.settings["retries"].source) == (0, "flag")
    assert (s.values.call_timeout, s.settings["call_timeout"].source) == (12.5, "env")
    assert s.settings["call_timeout"].layers == {"env": 12.5, "file": 30}
    for flags, message in (
        ({"retries": -1}, "--retries -1: expected a whole number ≥ 0"),
        ({"call_timeout": 0}, "--call-timeout 0: expected a number > 0"),
    ):
        with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
            sleep_settings(flags)
