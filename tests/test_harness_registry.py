"""Harnesses by name, their settings from the config file, and `skillsleep harnesses`."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
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
        registry.get("codex").settings({"sandbx": "read-only"})
    with pytest.raises(ConfigError, match=r"\[harness.claude-code\].*max_turns"):
        registry.get("claude-code").settings({"max_turns": "many"})


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


def test_a_settings_table_is_checked_by_the_agent_record_without_loading_its_replay_harness() -> None:
    code = (
        "import sys\n"
        "from skillsleep.harnesses import registry\n"
        "s = registry.get('codex').settings({'sandbox': 'read-only'})\n"
        "print(type(s).__name__, s.sandbox, sorted(m for m in sys.modules if m.endswith('.replay')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["CodexSettings", "read-only", "[]"]


def test_an_agents_status_is_its_replay_harness_status(tmp_path: Path) -> None:
    _fake(tmp_path, "my-codex", "codex-cli 0.171.0")
    codex = registry.get("codex")
    status = codex.status(codex.settings({"command": str(tmp_path / "my-codex")}))
    assert (status.name, status.usable, status.version, status.command) == (
        "codex",
        True,
        "0.171.0",
        str(tmp_path / "my-codex"),
    )
    missing = codex.status(env={"PATH": str(tmp_path / "nowhere")})
    assert not missing.installed and "npm install -g @openai/codex@" in missing.reason
    with pytest.raises(TypeError, match="takes CodexSettings, not ClaudeCodeSettings"):
        codex.harness(registry.get("claude-code").settings())
