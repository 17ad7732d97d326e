"""The agent a night defaults to (harnesses/default_agent.py) and the `[sleep]` agent level it gives
(slash_commands/wiring.py): the rule as a typed record, computed without any backend, and the
settings a night resolves from it with their origins — no agent installed (nothing changes), one,
two, the agent the command was typed in, and every explicit setting over it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sleep_kit import data, invoke  # noqa: F401  (fixture)

from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.shared.errors import ConfigError
from skillsleep.harnesses.default_agent import (
    AGENT_BUDGET_TOKENS,
    AgentChoice,
    InstalledAgent,
    agent_level,
    choose_agent,
)
from skillsleep.harnesses.install import Manifest
from skillsleep.slash_commands.next_night import next_night, next_night_line
from skillsleep.slash_commands.night_agent import FROM_AGENT_ENV, agent_models
from skillsleep.slash_commands.wiring import sleep_settings

MODELS = {"claude-code": "claude-code", "codex": "codex"}
DEC1, DEC3 = datetime(2026, 12, 1, 9, tzinfo=UTC), datetime(2026, 12, 3, 9, tzinfo=UTC)


def installed(*pairs: tuple[str, datetime]) -> list[InstalledAgent]:
    return [InstalledAgent(name=name, installed=when) for name, when in pairs]


# --- the rule, pure ---------------------------------------------------------------------------------


def test_the_agents_that_can_be_the_model_are_claude_code_and_codex() -> None:
    assert agent_models() == MODELS  # OpenClaw replays, but cannot answer a night's model calls


def test_no_agent_installed_chooses_nothing() -> None:
    choice = choose_agent([], MODELS)
    assert choice == AgentChoice(
        agent=None,
        harness=None,
        backend=None,
        rule="none",
        reason="no agent installed: skillsleep install claude-code or codex makes one the harness and the model "
        "of a night",
    )
    assert choose_agent(installed(("openclaw", DEC1)), MODELS).rule == "none"  # not one that can be the model


def test_the_only_agent_installed_is_harness_and_model_with_a_token_cap() -> None:
    choice = choose_agent(installed(("claude-code", DEC1), ("openclaw", DEC3)), MODELS)
    assert (choice.agent, choice.harness, choice.backend, choice.budget_tokens) == (
        "claude-code",
        "claude-code",
        "claude-code",
        AGENT_BUDGET_TOKENS,
    )
    assert choice.rule == "only-installed"
    assert choice.reason == "claude-code (installed 2026-12-01; the only agent installed)"


def test_of_two_installed_the_newer_wins_and_the_reason_names_the_other() -> None:
    choice = choose_agent(installed(("codex", DEC3), ("claude-code", DEC1)), MODELS)
    assert (choice.agent, choice.rule) == ("codex", "latest-installed")
    assert choice.reason == (
        "codex (installed 2026-12-03, after claude-code on 2026-12-01: the most recently installed of 2; "
        "installing one again makes it the newest)"
    )
    assert [a.name for a in choice.installed] == ["claude-code", "codex"]  # oldest first


def test_the_agent_the_command_was_typed_in_wins_over_the_installs() -> None:
    choice = choose_agent(installed(("codex", DEC3), ("claude-code", DEC1)), MODELS, typed_in="claude-code")
    assert (choice.agent, choice.backend, choice.rule) == ("claude-code", "claude-code", "typed-in")
    assert choice.reason == "claude-code (the agent this command was typed in)"
    assert choose_agent([], MODELS, typed_in="codex").agent == "codex"  # typed in it: it is there
    with pytest.raises(ValueError, match="'openclaw' cannot be the model"):
        choose_agent([], MODELS, typed_in="openclaw")


def test_the_agent_level_gives_harness_model_and_cap_together() -> None:
    choice = choose_agent(installed(("claude-code", DEC1)), MODELS)
    level = agent_level(choice, MODELS)
    assert level.values == {"harness": "claude-code", "backend": "claude-code", "budget_tokens": AGENT_BUDGET_TOKENS}
    assert level.why["harness"] == level.why["backend"] == choice.reason
    assert "a subscription's quota is real money" in level.why["budget_tokens"]


def test_harness_and_model_follow_each_other_and_any_other_model_keeps_the_chat_harness() -> None:
    choice = choose_agent(installed(("claude-code", DEC1)), MODELS)
    # `--backend local` is a night without the network: no agent harness, no agent cap
    assert agent_level(choice, MODELS, backend="local").values == {}
    assert agent_level(choice, MODELS, backend="deepseek:deepseek-v4-pro").values == {}
    # the other agent as the model: it replays too, and the cap holds
    level = agent_level(choice, MODELS, backend="codex:gpt-5")
    assert level.values == {"harness": "codex", "budget_tokens": AGENT_BUDGET_TOKENS}
    assert level.why["harness"] == "codex is the model (codex:gpt-5), so it replays the tasks too"
    # an agent harness makes that agent the model; the chat harness keeps the chosen agent as the model
    level = agent_level(choice, MODELS, harness="codex")
    assert level.values == {"backend": "codex", "budget_tokens": AGENT_BUDGET_TOKENS}
    assert level.why["backend"] == "codex replays the tasks, so it is the model too"
    assert agent_level(choice, MODELS, harness="chat").values == {
        "backend": "claude-code",
        "budget_tokens": AGENT_BUDGET_TOKENS,
    }
    assert agent_level(choice, MODELS, harness="openclaw", backend="local").values == {}  # both set: nothing


def test_with_no_agent_installed_nothing_follows_but_an_agent_model_is_capped() -> None:
    none = choose_agent([], MODELS)
    assert agent_level(none, MODELS).values == {}
    assert agent_level(none, MODELS, harness="codex").values == {}  # the backend stays the built-in local
    assert agent_level(none, MODELS, backend="claude-code:opus").values == {"budget_tokens": AGENT_BUDGET_TOKENS}


# --- the settings a night resolves ------------------------------------------------------------------


def install(data: Path, name: str, when: datetime) -> None:
    """What `skillsleep install NAME` records, at `when`."""
    (data / "installed").mkdir(parents=True, exist_ok=True)
    (data / "installed" / f"{name}.json").write_text(Manifest(agent=name, time=when).model_dump_json())


def resolved(flags: dict[str, object | None] | None = None) -> tuple[tuple[object, ...], tuple[str, ...]]:
    """(harness, backend, budget_tokens) of the layered `[sleep]` settings, and where each came from."""
    s = sleep_settings(flags or {})
    keys = ("harness", "backend", "budget_tokens")
    return tuple(getattr(s.values, k) for k in keys), tuple(s.settings[k].source for k in keys)


def test_no_agent_installed_keeps_chat_and_local(data: Path) -> None:
    assert resolved() == (("chat", "local", 0), ("default", "default", "default"))
    line = next_night_line(next_night())
    assert line.startswith("next night: replays in chat, local as the model ← the default; no token cap (no agent")


def test_one_agent_installed_is_the_nights_harness_and_model_with_its_cap(data: Path) -> None:
    install(data, "claude-code", DEC1)
    install(data, "openclaw", DEC3)  # newer, but it cannot be the model
    assert resolved() == (("claude-code", "claude-code", AGENT_BUDGET_TOKENS), ("agent", "agent", "agent"))
    n = next_night()
    assert n.harness_from == n.backend_from == "claude-code (installed 2026-12-01; the only agent installed)"
    assert next_night_line(n).startswith(
        "next night: replays in claude-code, claude-code as the model ← claude-code (installed 2026-12-01; the "
        "only agent installed); token cap 1,000,000 ← the cap when an agent is the model"
    )
    (data / "installed" / "claude-code.json").unlink()  # `skillsleep uninstall claude-code`
    assert resolved()[0] == ("chat", "local", 0)


def test_two_installed_the_newer_is_the_default_and_the_line_says_how_to_choose(data: Path) -> None:
    install(data, "claude-code", DEC3)
    install(data, "codex", DEC1)
    assert resolved()[0] == ("claude-code", "claude-code", AGENT_BUDGET_TOKENS)
    line = next_night_line(next_night())
    assert "the most recently installed of 2" in line and "after codex on 2026-12-01" in line
    assert "newest) (--harness / --backend, or [sleep] harness / backend, choose another); token cap" in line
    install(data, "codex", DEC3.replace(hour=10))  # installed again: now the newer
    assert resolved()[0] == ("codex", "codex", AGENT_BUDGET_TOKENS)


def test_the_agent_the_command_came_from_wins_over_the_installs(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(data, "claude-code", DEC3)
    monkeypatch.setenv(FROM_AGENT_ENV, "codex")
    assert resolved() == (("codex", "codex", AGENT_BUDGET_TOKENS), ("agent", "agent", "agent"))
    assert next_night().harness_from == "codex (the agent this command was typed in)"
    monkeypatch.setenv(FROM_AGENT_ENV, "openclaw")
    with pytest.raises(ConfigError, match=r"SKILLSLEEP_FROM_AGENT='openclaw': not an agent that can answer"):
        sleep_settings()


def test_every_explicit_setting_goes_over_the_agent(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(data, "claude-code", DEC1)
    # --backend local: the offline night, chat on the embedded model, no cap
    assert resolved({"backend": "local"}) == (("chat", "local", 0), ("default", "flag", "default"))
    # each of the three alone, from a flag, the environment and the file
    assert resolved({"budget_tokens": 0}) == (("claude-code", "claude-code", 0), ("agent", "agent", "flag"))
    assert resolved({"budget_tokens": 5_000_000})[0][2] == 5_000_000
    monkeypatch.setenv("SKILLSLEEP_HARNESS", "chat")
    assert resolved() == (("chat", "claude-code", AGENT_BUDGET_TOKENS), ("env", "agent", "agent"))
    monkeypatch.delenv("SKILLSLEEP_HARNESS")
    config = data / "config.toml"
    config.write_text('[sleep]\nbackend = "deepseek"\n')
    assert resolved() == (("chat", "deepseek", 0), ("default", "file", "default"))
    config.write_text('[sleep]\nharness = "codex"\n')  # the other agent replays, so it is the model
    assert resolved() == (("codex", "codex", AGENT_BUDGET_TOKENS), ("file", "agent", "agent"))
    assert next_night().backend_from == "codex replays the tasks, so it is the model too"


def test_config_shows_each_agent_setting_with_why_and_what_it_overrides(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(data, "claude-code", DEC1)
    monkeypatch.setenv("SKILLSLEEP_BUDGET_TOKENS", "0")
    code, out, err = invoke("config")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("next night: replays in claude-code, claude-code as the model ← claude-code (installed")
    assert (
        'sleep.harness = "claude-code"  ← agent: claude-code (installed 2026-12-01; the only agent installed)' in lines
    )
    assert (
        'sleep.backend = "claude-code"  ← agent: claude-code (installed 2026-12-01; the only agent installed)' in lines
    )
    at = lines.index("sleep.budget_tokens = 0  ← env: SKILLSLEEP_BUDGET_TOKENS")
    assert lines[at + 1].startswith("  1000000  ← agent: the cap when an agent is the model")
    assert lines[at + 1].endswith("(overridden, not used)")
    assert "; no token cap" in lines[1]


# --- /sleep run in an agent -------------------------------------------------------------------------


def test_sleep_run_in_an_agent_starts_a_detached_night_that_uses_that_agent(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the Codex skill runs for `$sleep run` (`skillsleep sleep --from-agent codex run`): the night's
    settings resolve to Codex as harness and model under the cap, though Claude Code was installed
    later, and the background `skillsleep run` is started with that same identity and no flag that
    would pin anything else. (The providers are registered by their own change: until then the
    pre-flight check of the model spec is stood in for, and the spawn is caught before it starts.)"""
    from skillsleep.slash_commands import detach

    install(data, "codex", DEC1)
    install(data, "claude-code", DEC3)
    monkeypatch.setenv(FROM_AGENT_ENV, "")  # unset; monkeypatch puts it back as it was after `--from-agent`
    seen: dict[str, object] = {}
    resolved_settings: list[SleepSection] = []

    def check_night(flags: dict[str, object | None]) -> SleepSection:
        resolved_settings.append(sleep_settings(flags).values)
        return resolved_settings[-1]

    def spawn(path: str, argv: list[str], env: dict[str, str], **_: object) -> int:
        seen["argv"], seen["env"] = argv, env
        raise OSError("the test caught the spawn")

    monkeypatch.setattr(detach, "check_night", check_night)
    monkeypatch.setattr(detach, "check_night_backends", lambda _settings: None)
    monkeypatch.setattr(detach.os, "posix_spawn", spawn)
    code, out, _err = invoke("sleep", "--prefix", "$sleep", "--from-agent", "codex", "run")
    assert code != 0 and "the test caught the spawn" in out
    (settings,) = resolved_settings
    assert (settings.harness, settings.backend, settings.budget_tokens) == ("codex", "codex", AGENT_BUDGET_TOKENS)
    argv = seen["argv"]
    assert isinstance(argv, list) and argv[3] == "run" and argv[4] == "--detached-log" and len(argv) == 6
    env = seen["env"]
    assert isinstance(env, dict) and env[FROM_AGENT_ENV] == "codex"  # the child resolves the same night


def test_sleep_from_an_agent_that_cannot_be_the_model_says_which_can(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FROM_AGENT_ENV, "")
    code, out, _err = invoke("sleep", "--from-agent", "openclaw", "status")
    assert code == 2 and out.startswith("**Error:** --from-agent 'openclaw': not an agent that can answer")
    assert "(those that can: claude-code, codex)" in out


def test_a_default_agent_that_cannot_replay_here_is_named_with_why_and_how_to_choose_another(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(data, "claude-code", DEC1)
    monkeypatch.setenv("PATH", str(tmp_path / "no-agents"))
    code, _out, err = invoke("run")
    assert code == 2, err
    assert "the claude-code harness is not usable here:" in err
    assert "It is the night's harness by default: claude-code (installed 2026-12-01; the only agent installed)" in err
    assert "--backend local" in err and "`skillsleep uninstall claude-code`" in err
    assert not (data / "nights").exists()  # refused before any work
