"""`claude-code[:MODEL]`: Claude Code (`claude -p`) as the model of any role (docs/backends.md).

One call is `claude -p --output-format json` in an empty folder, with skillsleep's system prompt
(`--system-prompt-file`), the request's schema (`--json-schema`: Claude Code offers the model a
`StructuredOutput` tool with it and validates the call), no tools, no session saved, and nothing
of the user's: a throwaway CLAUDE_CONFIG_DIR seeded from theirs (its login only counts: settings
sources are off, so no CLAUDE.md, hook, setting, plugin or skill is read), no MCP servers, no slash
commands. `--bare` is not used: it reads only ANTHROPIC_API_KEY, never a subscription's login.
MODEL is an alias (`sonnet`, `opus`, `haiku`) or a full name; none → the agent's default.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from skillsleep.core.models.backends.base import ProviderInfo
from skillsleep.core.models.ledger import Price
from skillsleep.core.shared.records import CompletionRequest, Usage
from skillsleep.harnesses.agent_cli import PLACEHOLDER_KEY, CLIResult
from skillsleep.harnesses.agent_model import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MODEL,
    AgentCall,
    AgentModelBackend,
    AgentReply,
    prompt_text,
    system_text,
)
from skillsleep.harnesses.claude_code.cli import CLAUDE, NAME, WORDS
from skillsleep.harnesses.claude_code.home import config_dir, global_config
from skillsleep.harnesses.claude_code.replay import QUIET_ENV, anthropic_base_url, prepare_config_dir

__all__ = ["ClaudeCodeModel", "build_argv", "read_result"]

_SONNET = Price(input=2.0, output=10.0, cached_input=0.20, cache_write=2.50)  # the anthropic backend's
_OPUS = Price(input=5.0, output=25.0, cached_input=0.50, cache_write=6.25)
_HAIKU = Price(input=1.0, output=5.0, cached_input=0.10, cache_write=1.25)
_STOP = {"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop"}
_KEY_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
_CLOUD_ENV = "CLAUDE_CODE_USE_"  # Bedrock, Vertex, Foundry: their own credentials


def build_argv(command: str, model: str | None, schema: dict[str, Any] | None, system_file: Path | None) -> list[str]:
    """The `claude` command line of one call; the prompt goes to its standard input."""
    argv = [command, "-p", "--output-format", "json", "--no-session-persistence", "--tools", ""]
    argv += ["--setting-sources", "", "--strict-mcp-config", "--disable-slash-commands"]
    if model:
        argv += ["--model", model]
    if system_file is not None:
        argv += ["--system-prompt-file", str(system_file)]
    if schema is not None:
        argv += ["--json-schema", json.dumps(schema, separators=(",", ":"))]
    return argv


def read_result(stdout: str) -> dict[str, Any] | None:
    """The `result` record of `claude -p --output-format json` (the last JSON line of that type)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("type") == "result":
            return record
    return None


def _usage(raw: Any) -> Usage:
    """Claude Code's usage: `input_tokens` is only the prompt outside the cache, as in the API."""
    u = raw if isinstance(raw, dict) else {}
    written, read = int(u.get("cache_creation_input_tokens") or 0), int(u.get("cache_read_input_tokens") or 0)
    return Usage(
        input_tokens=int(u.get("input_tokens") or 0) + written + read,
        output_tokens=int(u.get("output_tokens") or 0),
        cached_tokens=read,
        cache_write_tokens=written,
    )


def to_reply(record: dict[str, Any] | None) -> AgentReply:
    """The answer of one `result` record: the structured output when the schema was asked for and
    met, else the result text (which the caller's parse then refuses)."""
    if record is None:
        return AgentReply(error=None, complete=False)
    status = record.get("api_error_status")
    if record.get("is_error") or record.get("subtype") != "success":
        detail = str(record.get("result") or record.get("errors") or record.get("subtype") or "an error")
        return AgentReply(error=detail, status=status if isinstance(status, int) else None)
    structured = record.get("structured_output")
    usage = record.get("modelUsage")
    cost = record.get("total_cost_usd")
    return AgentReply(
        text=json.dumps(structured) if structured is not None else str(record.get("result") or ""),
        usage=_usage(record.get("usage")),
        cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
        finish_reason=_STOP.get(str(record.get("stop_reason")), "stop"),
        raw_id=record.get("session_id"),
        model=next(iter(usage), "") if isinstance(usage, dict) else "",
    )


class ClaudeCodeModel(AgentModelBackend):
    """Claude Code as a model provider."""

    name = NAME
    cli = CLAUDE
    words = WORDS
    login_hint = "run `claude` once and log in with /login (or set ANTHROPIC_API_KEY)"
    info = ProviderInfo(
        name=NAME,
        description="Claude Code (`claude -p`) with your own login, no API key: sonnet, opus, haiku or a full name",
        models=[],
        default_model=DEFAULT_MODEL,
        how_to_configure=f"install Claude Code: {CLAUDE.install_hint()}; then run `claude` once to log in",
        # the anthropic backend's list prices; `default` (the agent's choice) is priced as the dearest
        prices={
            DEFAULT_MODEL: _OPUS,
            "sonnet": _SONNET,
            "opus": _OPUS,
            "haiku": _HAIKU,
            "claude-sonnet-5": _SONNET,
            "claude-opus-5": _OPUS,
            "claude-haiku-4-5": _HAIKU,
            "claude-sonnet-4-5": Price(input=3.0, output=15.0, cached_input=0.30, cache_write=3.75),
            "claude-opus-4-5": _OPUS,
        },
        default_concurrency=DEFAULT_CONCURRENCY,
    )

    @classmethod
    def login_problem(cls, env: dict[str, str]) -> str | None:
        if any(env.get(k) for k in _KEY_ENV) or any(k.startswith(_CLOUD_ENV) and v for k, v in env.items()):
            return None
        if platform.system() == "Darwin":  # macOS keeps the login in the keychain
            return None
        if (config_dir(env) / ".credentials.json").is_file():
            return None
        try:
            stored = json.loads(global_config(env).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stored = None
        if isinstance(stored, dict) and (stored.get("oauthAccount") or stored.get("primaryApiKey")):
            return None
        return f"it is not logged in: {cls.login_hint}"

    def prepare(self, command: str, request: CompletionRequest, env: dict[str, str], tmp: Path) -> AgentCall:
        own = bool(self.settings.base_url)
        config = prepare_config_dir(config_dir(env), global_config(env), tmp / "config", own_provider=own)
        system = system_text(request)
        system_file = tmp / "system.md" if system else None
        if system_file is not None:
            system_file.write_text(system, encoding="utf-8")
        argv = build_argv(command, self.model_flag, request.json_schema, system_file)
        extra = {"CLAUDE_CODE_MAX_RETRIES": "0", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(request.max_tokens)}
        call_env = {**env, **QUIET_ENV, **extra, "CLAUDE_CONFIG_DIR": str(config)}
        if own:
            for name in [n for n in call_env if n.startswith("CLAUDE_CODE_USE_")] + ["ANTHROPIC_AUTH_TOKEN"]:
                call_env.pop(name, None)
            call_env["ANTHROPIC_BASE_URL"] = anthropic_base_url(self.settings.base_url or "")
            call_env["ANTHROPIC_API_KEY"] = self.settings.api_key or PLACEHOLDER_KEY
        return AgentCall(argv=argv, env=call_env, stdin=prompt_text(request.messages).encode())

    def parse(self, result: CLIResult) -> AgentReply:
        return to_reply(read_result(result.stdout))
