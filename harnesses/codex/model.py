"""`codex[:MODEL]`: the Codex CLI (`codex exec`) as the model of any role (docs/backends.md).

One call is `codex exec --json --ephemeral` in an empty folder with a read-only sandbox, no
approvals, and a throwaway CODEX_HOME that holds only the user's login (`auth.json`, linked): no
config.toml, AGENTS.md, skills, MCP servers, plugins or hooks of theirs. skillsleep's system prompt
replaces Codex's own instructions (`model_instructions_file`: the request then carries it as its
only developer message), project docs, skills, the permissions and environment notes and every
optional tool are off, the request's schema goes through `--output-schema`, the prompt through
standard input (the schema made strict: `strict_schema`). The last `agent_message` is the reply;
usage comes from `turn.completed`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillsleep.core.models.backends.base import ProviderInfo
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
from skillsleep.harnesses.codex.cli import CODEX, NAME, WORDS
from skillsleep.harnesses.codex.home import codex_home
from skillsleep.harnesses.codex.replay import PROVIDER, QUIET, _toml

__all__ = ["CodexModel", "build_argv", "read_events"]

KEY_ENV = "SKILLSLEEP_CODEX_KEY"  # the variable the `base_url` provider reads its key from
NO_SYSTEM = "Answer the user's request."  # Codex's own coding-agent instructions are never sent
ISOLATE = (
    'approval_policy="never"',
    "project_doc_max_bytes=0",  # no AGENTS.md of any folder
    "skills.bundled.enabled=false",
    "include_permissions_instructions=false",
    "include_environment_context=false",
    'web_search="disabled"',
)
NO_TOOLS = ("shell_tool", "goals", "multi_agent", "view_image", "image_generation")
_KEY_VARS = ("OPENAI_API_KEY", "CODEX_API_KEY")


def build_argv(
    command: str, model: str | None, instructions: Path, schema: Path | None, provider: dict[str, Any] | None
) -> list[str]:
    """The `codex exec` command line of one call; the prompt goes to its standard input (`-`)."""
    argv = [command, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "-s", "read-only"]
    argv.append("--strict-config")  # a `-c` key this Codex does not know is an error, never ignored
    for option in (*QUIET, *ISOLATE, f"model_instructions_file={_toml(str(instructions))}"):
        argv += ["-c", option]
    for feature in NO_TOOLS:
        argv += ["--disable", feature]
    if model:
        argv += ["-m", model]
    if provider is not None:
        argv += ["-c", f"model_providers.{PROVIDER}={_toml(provider)}", "-c", f"model_provider={_toml(PROVIDER)}"]
    if schema is not None:
        argv += ["--output-schema", str(schema)]
    return [*argv, "-"]


def strict_schema(node: Any) -> Any:
    """`node` as OpenAI's strict structured output takes it (Codex always sends `strict: true`):
    every object with properties closed (`additionalProperties: false`) and all of them required;
    a reply may then give a property the request left optional, which the reply models accept."""
    if isinstance(node, list):
        return [strict_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: strict_schema(value) for key, value in node.items()}
    if isinstance(out.get("properties"), dict):
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def read_events(stdout: str) -> list[dict[str, Any]]:
    """The JSON events of `codex exec --json` (other lines skipped)."""
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _usage(raw: Any) -> Usage:
    """`turn.completed` usage: `input_tokens` is the whole prompt, cached reads included."""
    u = raw if isinstance(raw, dict) else {}
    return Usage(
        input_tokens=int(u.get("input_tokens") or 0),
        output_tokens=int(u.get("output_tokens") or 0),
        cached_tokens=int(u.get("cached_input_tokens") or 0),
        cache_write_tokens=int(u.get("cache_write_input_tokens") or 0),
    )


def to_reply(events: list[dict[str, Any]]) -> AgentReply:
    """The last agent message and the turn's usage. A failed turn is the error (its message, else
    the last `error` event's); an `error` event before a completed turn was a notice (Codex reports
    its own reconnects that way), not the end."""
    text, usage, thread, done = "", Usage(), None, False
    failed: str | None = None
    notice = ""
    for event in events:
        kind = event.get("type")
        found = event.get("item")
        item: dict[str, Any] = found if isinstance(found, dict) else {}
        if kind == "thread.started":
            thread = event.get("thread_id")
        elif kind == "item.completed" and item.get("type") == "agent_message":
            text = str(item.get("text") or "")
        elif kind == "turn.completed":
            usage, done = usage + _usage(event.get("usage")), True
        elif kind == "turn.failed":
            error = event.get("error")
            failed = str((error.get("message") if isinstance(error, dict) else error) or notice or "the turn failed")
        elif kind == "error":
            notice = str(event.get("message") or notice)
    if failed is not None or (notice and not done):
        return AgentReply(error=failed or notice)
    return AgentReply(text=text, usage=usage, raw_id=thread, complete=done)


class CodexModel(AgentModelBackend):
    """The Codex CLI as a model provider."""

    name = NAME
    cli = CODEX
    words = WORDS
    login_hint = "run `codex login` (or set OPENAI_API_KEY)"
    info = ProviderInfo(
        name=NAME,
        description="the Codex CLI (`codex exec`) with your own ChatGPT login, no API key: any model it offers",
        models=[],
        default_model=DEFAULT_MODEL,
        how_to_configure=f"install Codex: {CODEX.install_hint()}; then run `codex login`",
        default_concurrency=DEFAULT_CONCURRENCY,  # unpriced: cap its spend in tokens (--budget-tokens)
    )

    @classmethod
    def login_problem(cls, env: dict[str, str]) -> str | None:
        if any(env.get(k) for k in _KEY_VARS) or (codex_home(env) / "auth.json").is_file():
            return None
        return f"it is not logged in: {cls.login_hint}"

    def prepare(self, command: str, request: CompletionRequest, env: dict[str, str], tmp: Path) -> AgentCall:
        home, scratch = tmp / "home", tmp / "tmp"
        home.mkdir()
        scratch.mkdir()
        auth = codex_home(env) / "auth.json"
        if not self.settings.base_url and auth.exists():
            (home / "auth.json").symlink_to(auth.resolve())
        instructions = tmp / "instructions.md"
        instructions.write_text(system_text(request) or NO_SYSTEM, encoding="utf-8")
        schema = None
        if request.json_schema is not None:
            schema = tmp / "schema.json"
            schema.write_text(json.dumps(strict_schema(request.json_schema)), encoding="utf-8")
        provider = None
        call_env = {**env, "CODEX_HOME": str(home), "TMPDIR": str(scratch)}
        if self.settings.base_url:
            provider = {
                "name": PROVIDER,
                "base_url": self.settings.base_url,
                "wire_api": "responses",
                "request_max_retries": 0,  # BaseBackend's loop is the only retry loop
                "stream_max_retries": 0,
                "env_key": KEY_ENV,
            }
            call_env[KEY_ENV] = self.settings.api_key or PLACEHOLDER_KEY
        argv = build_argv(command, self.model_flag, instructions, schema, provider)
        return AgentCall(argv=argv, env=call_env, stdin=prompt_text(request.messages).encode())

    def parse(self, result: CLIResult) -> AgentReply:
        return to_reply(read_events(result.stdout))
