"""Harnesses by name, their settings from the config file, and `skillsleep harnesses`."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.core.shared.errors import ConfigError, UnknownNameError
from skillsleep.harnesses import agent_cli, registry
from skillsleep.slash_commands.cli import main


@pytest.fixture(autouse=True)
def _fresh_probe_cache() -> None:
    agent_cli._STATUS_CACHE.clear()


def _fake(bin_dir: Path, name: str, version_line: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_unknown_harness_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'codex'.*claude-code, codex, openclaw"):
        registry.create_harness("codx")


def test_settings_are_strict_and_name_the_section() -> None:
    with pytest.raises(ConfigError, match=r"\[harness.codex\].*sandbx.*known keys: .*sandbox"):
        registry.settings_for("codex", {"sandbx": "read-only"})
    with pytest.raises(ConfigError, match=r"\[harness.claude-code\].*max_turns"):
        registry.settings_for("claude-code", {"max_turns": "many"})


def test_chat_needs_a_target_and_takes_no_settings() -> None:
    with pytest.raises(ConfigError, match=r"\[target\]"):
        registry.create_harness("chat")


def test_harnesses_command_reports_installed_version_and_usability(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "claude", "2.1.332 (Claude Code)")
    _fake(bin_dir, "codex", "codex-cli 0.100.0")  # older than the oldest supported
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(main, ["harnesses", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert list(rows) == ["chat", "claude-code", "codex", "openclaw"]
    for r in rows.values():
        assert {"name", "installed", "version", "usable", "reason"} <= set(r)
    assert rows["chat"]["usable"]
    assert rows["claude-code"]["installed"] and rows["claude-code"]["usable"]
    assert rows["claude-code"]["version"] == "2.1.332"
    assert rows["codex"]["installed"] and not rows["codex"]["usable"] and rows["codex"]["version"] == "0.100.0"
    assert "older than" in rows["codex"]["reason"]
    assert not rows["openclaw"]["installed"] and not rows["openclaw"]["usable"]
    assert "npm install -g openclaw@" in rows["openclaw"]["reason"]
    text = CliRunner().invoke(main, ["harnesses"])
    assert text.exit_code == 0 and "-- codex" in text.output and "ok claude-code" in text.output


def test_harness_command_path_comes_from_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "opt"
    tools.mkdir()
    _fake(tools, "my-codex", "codex-cli 0.171.0")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'[harness.codex]\ncommand = "{tools / "my-codex"}"\n')
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("SKILLSLEEP_HOME", str(home))
    rows = {r["name"]: r for r in json.loads(CliRunner().invoke(main, ["harnesses", "--json"]).output)}
    assert rows["codex"]["usable"] and rows["codex"]["command"] == str(tools / "my-codex")
    (home / "config.toml").write_text('[harness.codex]\ncommnd = "x"\n')
    bad = CliRunner().invoke(main, ["harnesses"])
    assert bad.exit_code == 2 and "commnd" in bad.output and "config.toml" in bad.output
    (home / "config.toml").write_text('[harness.cursor]\ncommand = "x"\n')
    bad = CliRunner().invoke(main, ["harnesses"])
    assert bad.exit_code == 2 and "harness.cursor" in bad.output
