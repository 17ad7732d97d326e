"""The verbs that set things up or say what there is — schedule, unschedule, install, uninstall, config,
backends, harnesses, help — in each of their formats, byte for byte against tests/fixtures/verbs/
(tests/golden.py)."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import pytest
from golden import check
from sleep_kit import invoke

from skillsleep.slash_commands.agent_installs import skillsleep_command
from skillsleep.slash_commands.scheduling import CARRIED


def _run(name: str, names: dict[str, str], *args: str, code: int = 0) -> None:
    exit_code, out, err = invoke(*args)
    assert exit_code == code, out + err
    check(name, out, names)


def test_schedule_and_unschedule_print_their_golden_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a systemd user timer (no user manager answers: the commands are to do by hand)."""
    for name in CARRIED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    (tmp_path / "run").mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.chdir(tmp_path)
    script = Path(str(resources.files("skillsleep.cron") / "run_sleep_cron.sh"))
    names = {str(tmp_path): "<ROOT>", str(script): "<SCRIPT>", str(Path(sys.executable).parent): "<BIN>"}
    night = ("--backend", "local", "--steps", "1")
    _run("schedule-print.json", names, "schedule", "--systemd", "--at", "03:00", "--print", "--json", *night)
    _run("schedule-print.text", names, "schedule", "--systemd", "--at", "03:00", "--print", *night)
    _run("schedule.json", names, "schedule", "--systemd", "--at", "03:00", "--json", *night)
    _run("schedule.text", names, "schedule", "--systemd", "--at", "04:30", *night)  # replaces it
    _run("unschedule.json", names, "unschedule", "--systemd", "--json")
    _run("unschedule-nothing.text", names, "unschedule", "--systemd")
    _run("schedule-again.json", names, "schedule", "--systemd", "--at", "05:00", "--json")
    _run("unschedule.text", names, "unschedule", "--systemd")
    _run("unschedule-nothing.json", names, "unschedule", "--systemd", "--json")


def test_install_and_uninstall_print_their_golden_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Into the agents' default homes, with no agent CLI on PATH."""
    home = tmp_path / "home"
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    names = {str(tmp_path): "<ROOT>", str(skillsleep_command()): "<SKILLSLEEP>"}
    _run("install-none.json", names, "install", "--json")  # no agent on PATH: each is named, skipped
    _run("install.json", names, "install", "claude-code", "codex", "--json")
    _run("install-again.md", names, "install", "claude-code", "--format", "md")
    _run("uninstall.text", names, "uninstall", "--format", "text")
    _run("install.text", names, "install", "codex", "openclaw", "--format", "text")
    _run("install.md", names, "install", "claude-code", "--format", "md")
    _run("uninstall.json", names, "uninstall", "codex", "--json")
    _run("uninstall.md", names, "uninstall", "all", "--format", "md")
    _run("uninstall-none.text", names, "uninstall", "--format", "text")


CONFIG = """\
[sleep]
steps = 3
backend = "deepseek"
preferences = "prefer short answers"

[harvest]
chat_dirs = ["/data/chats"]
redact_patterns = ["acme-[0-9]{8}"]

[executor]
kind = "ray"
num_cpus = 2

[prices]
"openai:my-model" = {input = 3.0, output = 6.0}
"deepseek:deepseek-v4-flash" = {input = 0.2, output = 0.4, cached_input = 0.01}

[harness.codex]
command = "/opt/codex"
"""


def test_config_prints_its_golden_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    names = {str(tmp_path): "<ROOT>"}
    _run("config-none.json", names, "config", "--json")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.toml").write_text(CONFIG)
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", "/env/chats")
    monkeypatch.setenv("SKILLSLEEP_STEPS", "5")
    _run("config.json", names, "config", "--json")
    _run("config.text", names, "config")


def test_config_and_status_with_agents_installed_print_their_golden_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `install claude-code` then `install codex`, a night defaults to the newer, as `config`
    shows with every origin; `/sleep status` typed in Claude Code says it uses Claude Code."""
    from skillsleep.slash_commands.night_agent import FROM_AGENT_ENV

    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    names = {str(tmp_path): "<ROOT>"}
    for agent in ("claude-code", "codex"):
        assert invoke("install", agent)[0] == 0
    monkeypatch.setenv("SKILLSLEEP_BUDGET_TOKENS", "2000000")
    _run("config-agents.text", names, "config")
    monkeypatch.delenv("SKILLSLEEP_BUDGET_TOKENS")
    monkeypatch.setenv(FROM_AGENT_ENV, "")  # `--from-agent` sets it in this process: put back after the test
    _run("status-agent.md", names, "sleep", "--from-agent", "claude-code", "status")


def test_backends_and_harnesses_print_their_golden_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each provider's check and each harness's status answered here (no key, server, network or
    agent CLI looked for): what is pinned is how the verbs show them."""
    from skillsleep.core.models.backends import registry as providers
    from skillsleep.harnesses import registry as agents
    from skillsleep.harnesses.agent_cli import HarnessStatus

    async def check_provider(name: str, settings: object = None) -> tuple[bool, str]:
        usable = name in ("scripted", "local")
        return usable, f"{name}: {'usable' if usable else 'not configured'} (checked by the test)"

    def statuses(settings: object = None) -> list[HarnessStatus]:
        return [
            HarnessStatus(name="chat", installed=True, version="1.2.3", usable=True, reason="no agent CLI needed"),
            HarnessStatus(name="codex", installed=False, usable=False, reason="`codex` was not found"),
            HarnessStatus(
                name="openclaw",
                installed=True,
                usable=False,
                reason="its gateway is not running",
                command="/x/openclaw",
            ),
        ]

    monkeypatch.setattr(providers, "check_provider", check_provider)
    monkeypatch.setattr(agents, "statuses", statuses)
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    for verb in ("backends", "harnesses"):
        _run(f"{verb}.json", {}, verb, "--json")
        _run(f"{verb}.text", {}, verb)


def test_help_prints_its_golden_outputs() -> None:
    for fmt, flags in {"json": ("--json",), "md": ("--format", "md"), "text": ("--format", "text")}.items():
        _run(f"help.{fmt}", {}, "help", *flags)
    _run("sleep-help.md", {}, "sleep", "help")
    _run("sleep-help.json", {}, "sleep", "--prefix", "$sleep", "help", "--json")
