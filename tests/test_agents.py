"""The agents as one set: the registry (built-ins and plugins through one path), the token-count
rule every reader shares, and the table of replay failures."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from skillsleep.core.shared.errors import ConfigError, UnknownNameError
from skillsleep.core.shared.records import Usage
from skillsleep.harnesses import registry, wire
from skillsleep.harnesses.claude_code.output import parse_claude_output
from skillsleep.harnesses.claude_code.transcripts import parse_claude
from skillsleep.harnesses.codex.output import parse_codex_output
from skillsleep.harnesses.codex.transcripts import parse_codex
from skillsleep.harnesses.failures import Failure, classify
from skillsleep.harnesses.openclaw.output import parse_openclaw_output
from skillsleep.harnesses.openclaw.transcripts import parse_openclaw_jsonl

# --- the registry ---------------------------------------------------------------------------------


def test_the_builtin_agents_are_listed_once_after_chat() -> None:
    assert registry.names() == ("chat", "claude-code", "codex", "openclaw")
    assert [a.command for a in registry.agents()] == ["claude", "codex", "openclaw"]
    assert set(registry.parsers()) == {"claude-code", "codex", "openclaw"}
    assert set(registry.db_readers()) == {"openclaw"}


def test_an_unknown_agent_is_an_error_listing_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown agent 'codx'\. Did you mean 'codex'\?"):
        registry.get("codx")
    with pytest.raises(UnknownNameError, match="Known: chat, claude-code, codex, openclaw"):
        registry.check_name("cursor")


class _EntryPoint:
    name, value = "mine", "my_agent:register"

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def load(self) -> Any:
        return self.obj


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Entry points of the `skillsleep.agents` group, as a test sets them."""
    found: list[Any] = []
    monkeypatch.setattr(registry, "LOAD_ENTRY_POINTS", True)
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    monkeypatch.setattr(registry, "AGENTS", dict(registry.AGENTS))
    monkeypatch.setattr(registry, "entry_points", lambda group: found if group == registry.ENTRY_POINT_GROUP else [])
    yield found


def test_a_plugin_agent_registers_through_the_same_path_as_the_builtins(plugins: list[Any]) -> None:
    mine = registry.AGENTS["codex"].model_copy(update={"name": "my-agent", "command": "my-agent"})
    plugins.append(_EntryPoint(lambda register: register(mine)))
    assert registry.names()[-1] == "my-agent" and registry.get("my-agent") is mine


def test_a_plugin_agent_names_its_replay_harness_and_installer_by_import_path(plugins: list[Any]) -> None:
    mine = registry.AGENTS["codex"].model_copy(update={"name": "my-agent", "replay": "skillsleep.harnesses.wire:count"})
    plugins.append(_EntryPoint(mine))
    assert registry.get("my-agent").installer is not None
    with pytest.raises(ConfigError, match="skillsleep.harnesses.wire:count is not a replay harness"):
        registry.create_harness("my-agent")


def test_a_plugin_may_not_take_a_builtin_name(plugins: list[Any]) -> None:
    plugins.append(_EntryPoint(registry.AGENTS["codex"].model_copy(update={"command": "other"})))
    with pytest.raises(ConfigError, match="an agent named 'codex' is already registered"):
        registry.agents()


# --- token counts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (12, 12),
        (12.9, 12),  # a float count is truncated
        (0, 0),
        (-5, 0),  # never negative: a sum of usages never shrinks
        (True, 0),  # a boolean is no count (JSON true is not 1 token)
        (False, 0),
        (math.nan, 0),
        (math.inf, 0),
        (2**53, 0),  # past what a JSON number holds exactly
        ("12", 0),
        (None, 0),
        ([3], 0),
    ],
)
def test_a_token_count_is_a_positive_number_below_2_to_the_53(value: Any, count: int) -> None:
    assert wire.count(value) == count


_ODD = {"a": -7, "b": True, "c": 5.5, "d": 3}  # one negative, one boolean, one float, one count


def test_each_agent_reads_usage_the_same_in_its_transcripts_and_its_replay_output() -> None:
    # Claude Code: input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens
    cc = {"input_tokens": -7, "cache_creation_input_tokens": True, "cache_read_input_tokens": 5.5, "output_tokens": 3}
    assistant = {"type": "assistant", "sessionId": "s", "message": {"id": "m", "content": "hi", "usage": cc}}
    harvested = parse_claude(json.dumps(assistant).encode() + b"\n", source="/p/s.jsonl").sessions[0].usage
    result = {"type": "result", "subtype": "success", "result": "hi", "usage": cc}
    assert (
        harvested
        == parse_claude_output(json.dumps(result)).usage
        == Usage(input_tokens=5, output_tokens=3, cached_tokens=5)
    )

    # Codex: input_tokens already includes cached_input_tokens
    cx = {"input_tokens": 5.5, "cached_input_tokens": -7, "output_tokens": True}
    count = {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": cx}}}
    rollout = json.dumps(count).encode() + b"\n"
    harvested = parse_codex(rollout, source="/c/rollout-x.jsonl").sessions[0].usage
    replayed = parse_codex_output(json.dumps({"type": "turn.completed", "usage": cx})).usage
    assert harvested == replayed == Usage(input_tokens=5)

    # OpenClaw: input = input + cacheRead + cacheWrite
    oc = {"input": 3, "cacheRead": 5.5, "cacheWrite": True, "output": -7}
    message = {"type": "message", "message": {"role": "assistant", "content": "hi", "usage": oc}}
    harvested = parse_openclaw_jsonl(json.dumps(message).encode() + b"\n", source="/o/s.jsonl").sessions[0].usage
    envelope = {"ok": True, "status": "ok", "final": "hi", "usage": oc}
    assert harvested == parse_openclaw_output(json.dumps(envelope)).usage == Usage(input_tokens=8, cached_tokens=5)


# --- what a failure is --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("detail", "status", "kind"),
    [
        ("Invalid API key · Fix external API key", 401, Failure.AUTH),
        ("Not logged in · Please run /login", None, Failure.AUTH),
        ("unexpected status 403 Forbidden", None, Failure.AUTH),
        ("Missing environment variable: `MY_KEY`", None, Failure.MISSING_KEY),
        ("429 Too Many Requests", None, Failure.RATE_LIMIT),
        ("connect ECONNREFUSED 127.0.0.1:9", None, Failure.CONNECT),
        ("connect ECONNREFUSED 127.0.0.1:9", 502, Failure.SERVER),  # a status: the server answered
        ("the request exceeds the available context size", None, Failure.CONTEXT),
        ("We're currently experiencing high demand", None, Failure.SERVER),
        ("API Error: 404 model not found", 404, Failure.MODEL),
        ("model 'tiny' does not exist", None, Failure.MODEL),
        ("the prompt had 84012 tokens", None, Failure.OTHER),
    ],
)
def test_an_agents_error_is_classified_once_for_every_agent(detail: str, status: int | None, kind: Failure) -> None:
    assert classify(detail, status=status) is kind


def test_help_texts_name_the_registered_agents(plugins: list[Any]) -> None:
    from click.testing import CliRunner

    from skillsleep.slash_commands.cli import main

    plugins.append(_EntryPoint(registry.AGENTS["codex"].model_copy(update={"name": "my-agent", "command": "mine"})))
    shown = {
        "install": "[claude-code|codex|openclaw|my-agent|all]...",
        "uninstall": "[claude-code|codex|openclaw|my-agent|all]...",
        "eval": "Where tasks run: chat, claude-code, codex, openclaw or my-agent",
        "run": "--harness [chat|claude-code|codex|openclaw|my-agent]",
    }
    for verb, text in shown.items():
        result = CliRunner().invoke(main, [verb, "--help"], terminal_width=400)
        assert result.exit_code == 0 and text in result.output, (verb, result.output)
