"""Replay one task with a candidate skill inside the real Claude Code CLI (`claude -p`).

The recipe, run in a fresh temporary copy of the task's working directory (stdin closed, the
process in its own group, killed with it on timeout):

    claude -p --output-format stream-json --verbose --no-session-persistence
           --permission-mode dontAsk --max-turns N --allowedTools Bash Read Edit …
           [--model M] [--bare] [--tools …] [--append-system-prompt-file <skill>] [extra_args]
           -- PROMPT

Why each flag:

- `-p` runs headless and exits; `--output-format stream-json --verbose` prints one JSON record per
  line (assistant messages with their `tool_use` blocks, user messages with `tool_result`s, and a
  final `result` record with the answer, usage and `total_cost_usd`), so tool calls and their
  results are visible, and a run cut off midway still yields what it did.
- `--no-session-persistence` writes no transcript to resume.
- `--permission-mode dontAsk` (setting `permission_mode`): nobody is there to answer a permission
  prompt, so a tool in `allowed_tools` runs and anything else is denied at once (the model sees
  the denial as the tool's result) instead of the run waiting for an answer.
  `bypassPermissions` would let the agent run any tool; choose it only in a sandbox.
- `--max-turns` bounds a run that loops; reaching it is an error run ("raise max_turns").
- `--model` only when `target_model` is set: by default the run uses the model the user's
  Claude Code is configured with (their `settings.json` / environment).
- `--bare` and `--tools` (settings `bare`, `tools`) cut the system prompt for tiny local models:
  `bare=True, tools=[]` gives `--bare --tools ""`, about 100 tokens of prompt. `--bare` also
  skips hooks, CLAUDE.md discovery and auto-memory, and accepts only ANTHROPIC_API_KEY auth.
- The prompt comes after `--`, so a prompt starting with `-` is not read as a flag, and the
  variadic `--allowedTools` list cannot swallow it.

How the skill is installed and invoked: the skill's body (the document without its YAML
frontmatter, like the chat harness) is written to `<run state>/skill.md` and passed with
`--append-system-prompt-file`, so it is appended to Claude Code's own system prompt on every
request of the run; nothing needs to invoke it. An empty skill adds no flag (the baseline).

Where state goes: the agent's config dir is a temporary one per run (`CLAUDE_CONFIG_DIR`), so
the `projects/<cwd>/…` folders, `.claude.json`, backups and plugin caches Claude Code writes even
with `--no-session-persistence` never land in the user's `~/.claude`. It is prepared from the
user's config dir (`$CLAUDE_CONFIG_DIR`, else `~/.claude`, read from the base environment):

- `.credentials.json` is symlinked, so a `claude` login keeps working. Not verified: whether a
  token refresh during a replay writes through the link or replaces it (then the user's stored
  token may go stale and they log in again); and on macOS, where the login lives in the
  Keychain, whether it is found under a temporary config dir (if not, the run is an auth error
  Run; set ANTHROPIC_API_KEY);
- `settings.json` is copied (model, env, permissions) without its `hooks`, so a user hook (e.g.
  an incremental-harvest `SessionEnd` hook) never fires for a replay; an unreadable
  settings.json is not copied (Claude Code ignores it in `-p` mode anyway);
- from the global config (`~/.claude.json`, or `.claude.json` inside `$CLAUDE_CONFIG_DIR`) only
  the login keys (`oauthAccount`, `primaryApiKey`, `customApiKeyResponses`) are copied.

With `base_url` set, none of the user's Anthropic credentials go along (no credentials link, no
stored key, no `apiKeyHelper`, no `ANTHROPIC_*` / `CLAUDE_CODE_USE_*` entries in the copied
settings' env, `ANTHROPIC_AUTH_TOKEN` removed from the environment), so they are never sent to
another server. `ANTHROPIC_BASE_URL` is set to `base_url` (a trailing `/v1` is dropped: Claude
Code adds it) and `ANTHROPIC_API_KEY` to the value of the variable named by `api_key_env`; when
`api_key_env` is empty a placeholder key is sent (local servers ignore it); when it names a
variable that is unset or empty the run is an error naming that variable.

Environment: the base environment (the constructor's `env`, else this process's), then
`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
DISABLE_ERROR_REPORTING=1` and `CLAUDE_CODE_MAX_RETRIES` (setting `max_retries`, default 2: a
replay should ride out a transient 529/overload but a dead server should fail within seconds;
tests use 0), then `settings.env`, then the enforced `CLAUDE_CONFIG_DIR` and provider variables.

What comes back: `parse_claude_output` turns stdout into a `Run` (final text from the `result`
record, tool calls paired with their results, usage and `total_cost_usd` from it — Claude Code
prices a model it does not know at its default rate, so the cost of a local model is its guess);
the harness adds the process's wall time (`latency_s`) and exit status. A missing or too old
CLI, an auth failure, a dead or failing model server, the turn limit, a crash, a timeout or
output without a final result all come back as `Run(error=...)` saying what to do; `run()` never
raises for one episode. Claude Code has no sampling seed: `sample` only distinguishes repeats.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from skillsleep.core.records import Run, Task, ToolCall, Usage
from skillsleep.core.skill import Skill
from skillsleep.harnesses.agent_cli import (
    PLACEHOLDER_KEY,
    AgentCLI,
    AgentSettings,
    CLIHarness,
    CLIResult,
    agent_env,
    run_cli,
    tail,
    task_text,
    workdir,
)

__all__ = ["CLAUDE", "ClaudeCodeHarness", "ClaudeCodeSettings", "parse_claude_output", "prepare_config_dir"]

CLAUDE = AgentCLI(
    harness="claude-code",
    default_command="claude",
    package="@anthropic-ai/claude-code",
    min_version=(2, 1, 0),
    tested_version="2.1.332",
)
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
_LOGIN_KEYS = ("oauthAccount", "primaryApiKey", "customApiKeyResponses")
_PROVIDER_ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_USE_")
_AUTH_MARKERS = (
    "invalid api key",
    "not logged in",
    "/login",
    "authentication",
    "unauthorized",
    "oauth token",
    "x-api-key",
    "api key",
)
_CONNECT_MARKERS = (
    "connection refused",
    "econnrefused",
    "unable to connect",
    "fetch failed",
    "enotfound",
    "connection error",
    "econnreset",
    "socket hang up",
    "network",
)


class ClaudeCodeSettings(AgentSettings):
    """Settings of the claude-code harness (`[harness.claude-code]`), on top of `AgentSettings`."""

    allowed_tools: list[str] = Field(default_factory=lambda: ["Bash", "Read", "Edit", "Write", "Glob", "Grep"])
    max_turns: int = Field(default=8, ge=1)
    # Headless: allowed tools run, anything else is denied at once (no one can answer a prompt).
    permission_mode: Literal["dontAsk", "acceptEdits", "auto", "bypassPermissions", "manual", "plan"] = "dontAsk"
    bare: bool = False  # `--bare`: minimal system prompt, no hooks/CLAUDE.md/auto-memory (tiny local models)
    tools: list[str] | None = None  # `--tools`: None → the agent's default set, [] → none (`--tools ""`)
    max_retries: int = Field(default=2, ge=0)  # CLAUDE_CODE_MAX_RETRIES


# --- parsing stdout ---------------------------------------------------------------------------


@dataclass
class _Parsed:
    tool_calls: list[ToolCall] = field(default_factory=list)
    by_id: dict[str, ToolCall] = field(default_factory=dict)  # tool_use id → its call, to pair results
    usage_by_message: dict[str, Usage] = field(default_factory=dict)
    last_text: str = ""
    api_error_text: str = ""
    result: dict[str, Any] | None = None
    records: int = 0
    skipped: int = 0


def _records(stdout: str) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects in stdout (one per line, or one document for `--output-format json`),
    and how many non-empty lines were not JSON objects."""
    text = stdout.strip()
    if text[:1] in ("{", "["):
        try:
            whole = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(whole, dict):
                return [whole], 0
            if isinstance(whole, list):
                items = [v for v in whole if isinstance(v, dict)]
                return items, len(whole) - len(items)
    out: list[dict[str, Any]] = []
    skipped = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if isinstance(value, dict):
            out.append(value)
        else:
            skipped += 1
    return out, skipped


def _usage(raw: Any) -> Usage:
    """Anthropic usage → Usage: input is the whole prompt (fresh + cache writes + cache reads)."""
    if not isinstance(raw, dict):
        return Usage()

    def n(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    cached = n("cache_read_input_tokens")
    return Usage(
        input_tokens=n("input_tokens") + n("cache_creation_input_tokens") + cached,
        output_tokens=n("output_tokens"),
        cached_tokens=cached,
    )


def _block_text(content: Any) -> str:
    """Text of a tool_result's content: a string, or text blocks joined ([image] etc. for others)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type"):
                    parts.append(f"[{block['type']}]")
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def _content(message: Any) -> list[Any]:
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _assistant(rec: dict[str, Any], p: _Parsed) -> None:
    message = rec.get("message")
    texts = []
    for block in _content(message):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            if isinstance(block.get("id"), str) and block["id"] in p.by_id:
                continue  # the same block repeated (a split reply written twice)
            raw = block.get("input")
            call = ToolCall(
                name=str(block.get("name") or "?"),
                arguments=raw if isinstance(raw, dict) else ({} if raw is None else {"input": raw}),
            )
            p.tool_calls.append(call)
            if isinstance(block.get("id"), str):
                p.by_id[block["id"]] = call
    if texts:
        if rec.get("is_api_error_message") or rec.get("isApiErrorMessage"):
            p.api_error_text = "\n".join(texts)  # Claude Code's own error notice, not the model's words
        elif not rec.get("parent_tool_use_id"):  # a subagent's text is not the agent's answer
            p.last_text = "\n".join(texts)
    if isinstance(message, dict) and isinstance(message.get("usage"), dict):
        key = str(message.get("id") or f"#{p.records}")
        p.usage_by_message[key] = _usage(message["usage"])  # split replies repeat usage: keep the last


def _user(rec: dict[str, Any], p: _Parsed) -> None:
    for block in _content(rec.get("message")):
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        call = p.by_id.get(str(block.get("tool_use_id")))
        if call is None:
            continue
        text = _block_text(block.get("content"))
        call.result = f"[error] {text}" if block.get("is_error") is True else text


def _error_detail(rec: dict[str, Any]) -> str:
    errors = rec.get("errors")
    parts = [str(e) for e in errors] if isinstance(errors, list) else []
    if isinstance(rec.get("result"), str) and rec["result"].strip():
        parts.insert(0, rec["result"].strip())
    return "; ".join(parts)[:500] or "no details"


def _result_error(rec: dict[str, Any], server: str) -> str | None:
    """The error a `result` record reports, worded as what to do; None for a success."""
    subtype = rec.get("subtype")
    if subtype == "success" and rec.get("is_error") is not True:
        return None
    detail = _error_detail(rec)
    low = detail.lower()
    status = rec.get("api_error_status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    at = f" at {server}" if server else ""
    if subtype == "error_max_turns":
        return (
            f"Claude Code stopped at its turn limit before finishing ({detail}); raise `max_turns` in "
            f"the claude-code harness settings, or make the task smaller."
        )
    if status in (401, 403) or any(m in low for m in _AUTH_MARKERS):
        return (
            f"Claude Code could not authenticate ({detail}): log in by running `claude` and /login, or "
            f"set ANTHROPIC_API_KEY; with `base_url` set, put the server's key in the environment "
            f"variable named by `api_key_env`."
        )
    if status == 429 or "rate limit" in low or "rate_limit" in low:
        return (
            f"the model server{at} rate-limited Claude Code ({detail}); lower `concurrency` in the "
            f"claude-code harness settings or try again later."
        )
    if rec.get("api_error") == "connection_failed" or (status is None and any(m in low for m in _CONNECT_MARKERS)):
        return (
            f"Claude Code could not reach the model server{at} ({detail}); start the server, or fix "
            f"`base_url` (or ANTHROPIC_BASE_URL in the agent's settings)."
        )
    if (status is not None and status >= 500) or rec.get("api_error"):
        return f"the model server{at} failed to answer ({detail}); check the server and its logs, then run again."
    if status is not None:
        return (
            f"the model server{at} rejected Claude Code's request (HTTP {status}: {detail}); check "
            f"`target_model` and `base_url` in the claude-code harness settings."
        )
    if subtype == "error_during_execution":
        return f"Claude Code failed during the run ({detail}); check that `claude -p hello` works in this environment."
    return (
        f"Claude Code reported an error ({subtype}: {detail}); check that `claude -p hello` works in this environment."
    )


def _parse(stdout: str) -> _Parsed:
    records, skipped = _records(stdout)
    p = _Parsed(skipped=skipped)
    for rec in records:
        p.records += 1
        kind = rec.get("type")
        if kind == "assistant":
            _assistant(rec, p)
        elif kind == "user":
            _user(rec, p)
        elif kind == "result":
            p.result = rec  # a later result (queued turn) supersedes an earlier one
        # system (init, permission_denied, …), stream_event and unknown types carry nothing we need
    return p


def parse_claude_output(stdout: str, *, server: str = "") -> Run:
    """The `Run` that `claude -p --output-format stream-json --verbose` (or `--output-format json`)
    printed. Pure: no I/O; `latency_s` and `exit_status` are left for the caller.

    Lines that are not JSON objects and unknown record types are skipped. The final text, usage
    and cost come from the last `result` record (usage summed over assistant messages when there
    is none); tool calls keep their order and get the text of their `tool_result` (prefixed
    `[error] ` when the tool failed). No `result` record (truncated or crashed output, or no JSON
    at all) gives an error Run; an error `result` gives an error Run saying what to do, whose
    `response` is what the model last said (not Claude Code's error notice). `server` (where the
    model server is, if known) is only used in those messages. Never raises."""
    return _to_run(_parse(stdout), server)


def _to_run(p: _Parsed, server: str) -> Run:
    calls = p.tool_calls
    if p.result is None:
        usage = sum(p.usage_by_message.values(), Usage())
        if p.records == 0:
            error = "Claude Code printed no JSON output"
        else:
            error = "Claude Code's output ended without a final `result` record (the run was cut off or crashed)"
        if p.api_error_text:
            error += f"; its last message was: {p.api_error_text[:300]}"
        return Run(response=p.last_text, tool_calls=calls, usage=usage, error=error)
    rec = p.result
    text = rec.get("result")
    error = _result_error(rec, server)
    # an error result's `result` is Claude Code's error notice: the answer is what the model last said
    response = text if isinstance(text, str) and error is None else p.last_text
    usage = _usage(rec["usage"]) if isinstance(rec.get("usage"), dict) else sum(p.usage_by_message.values(), Usage())
    cost = rec.get("total_cost_usd")
    cost_usd = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0 else 0.0
    return Run(response=response, tool_calls=calls, usage=usage, cost_usd=cost_usd, error=error)


# --- the agent's state ----------------------------------------------------------------------------


def user_config_dir(env: Mapping[str, str]) -> Path:
    """The user's Claude Code config dir: `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".claude"


def user_global_config(env: Mapping[str, str]) -> Path:
    """The user's global Claude Code config file (`.claude.json`)."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser() / ".claude.json"
    return Path(env.get("HOME") or Path.home()) / ".claude.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def prepare_config_dir(user_dir: Path, user_global: Path, dest: Path, *, own_provider: bool) -> Path:
    """Create `dest` as a throwaway Claude Code config dir seeded from the user's (see the module
    docstring): credentials symlinked, settings copied without hooks, login keys of the global
    config copied. With `own_provider` (a `base_url` run) no user credential is carried over.
    Only reads the user's files; returns `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    credentials = user_dir / ".credentials.json"
    if not own_provider and credentials.is_file():
        (dest / ".credentials.json").symlink_to(credentials.resolve())
    settings = _read_json(user_dir / "settings.json")
    if settings is not None:
        settings.pop("hooks", None)
        if own_provider:
            settings.pop("apiKeyHelper", None)
            env = settings.get("env")
            if isinstance(env, dict):
                settings["env"] = {k: v for k, v in env.items() if not str(k).startswith(_PROVIDER_ENV_PREFIXES)}
        (dest / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    if not own_provider:
        global_config = _read_json(user_global)
        login = {k: global_config[k] for k in _LOGIN_KEYS if global_config and k in global_config}
        if login:
            (dest / ".claude.json").write_text(json.dumps(login, indent=2), encoding="utf-8")
    return dest


# --- the harness ----------------------------------------------------------------------------------


def build_argv(command: str, settings: ClaudeCodeSettings, prompt: str, skill_file: Path | None) -> list[str]:
    """The `claude` command line of one replay (see the module docstring for each flag)."""
    argv = [
        command,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--no-session-persistence",
        "--permission-mode",
        settings.permission_mode,
        "--max-turns",
        str(settings.max_turns),
    ]
    if settings.allowed_tools:
        argv += ["--allowedTools", *settings.allowed_tools]
    if settings.tools is not None:
        argv += ["--tools", *(settings.tools or [""])]
    if settings.bare:
        argv.append("--bare")
    if settings.target_model:
        argv += ["--model", settings.target_model]
    if skill_file is not None:
        argv += ["--append-system-prompt-file", str(skill_file)]
    return [*argv, *settings.extra_args, "--", prompt]


def anthropic_base_url(base_url: str) -> str:
    """`base_url` as ANTHROPIC_BASE_URL wants it: no trailing slash, no trailing /v1."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class ClaudeCodeHarness(CLIHarness):
    """Runs one task headless in Claude Code with a given skill; see the module docstring.

    `env` is the base environment of the agent process (None → this process's). At most
    `settings.concurrency` runs of one harness instance go at once."""

    name = "claude-code"
    cli = CLAUDE
    settings: ClaudeCodeSettings

    def __init__(self, settings: ClaudeCodeSettings | None = None, *, env: dict[str, str] | None = None) -> None:
        super().__init__(settings or ClaudeCodeSettings(), env=env)

    def _server(self) -> str:
        return anthropic_base_url(self.settings.base_url) if self.settings.base_url else ""

    async def replay(self, command: str, task: Task, skill: Skill, base: dict[str, str], timeout_s: float) -> Run:
        s = self.settings
        key = base[s.api_key_env] if s.base_url and s.api_key_env else PLACEHOLDER_KEY  # set: run() checked
        with workdir(task) as cwd, tempfile.TemporaryDirectory(prefix="skillsleep-claude-") as tmp:
            state = Path(tmp)
            config = prepare_config_dir(
                user_config_dir(base), user_global_config(base), state / "config", own_provider=bool(s.base_url)
            )
            body = skill.body.strip()
            skill_file = None
            if body:
                skill_file = state / "skill.md"
                skill_file.write_text(body + "\n", encoding="utf-8")
            argv = build_argv(command, s, task_text(task), skill_file)
            result = await run_cli(argv, cwd=cwd, env=self._env(base, config, key), timeout_s=timeout_s)
        return self._finish(result, timeout_s)

    def _env(self, base: dict[str, str], config: Path, key: str) -> dict[str, str]:
        s = self.settings
        env = agent_env(base, {**QUIET_ENV, "CLAUDE_CODE_MAX_RETRIES": str(s.max_retries), **s.env})
        env["CLAUDE_CONFIG_DIR"] = str(config)
        if s.base_url:
            for name in [n for n in env if n.startswith("CLAUDE_CODE_USE_")] + ["ANTHROPIC_AUTH_TOKEN"]:
                env.pop(name, None)
            env["ANTHROPIC_BASE_URL"] = anthropic_base_url(s.base_url)
            env["ANTHROPIC_API_KEY"] = key
        return env

    def _finish(self, result: CLIResult, timeout_s: float) -> Run:
        server = self._server()
        parsed = _parse(result.stdout)
        run = _to_run(parsed, server)
        update: dict[str, Any] = {"latency_s": result.duration_s, "exit_status": result.returncode}
        if result.timed_out:
            where = f"the model server at {server}" if server else "the agent's model provider"
            update["error"] = (
                f"Claude Code did not finish within {timeout_s:g} s (timeout) and its process group "
                f"was killed; raise timeout_s, or check that {where} answers."
            )
        elif parsed.result is None:
            stderr = tail(result.stderr) or "no stderr"
            update["error"] = (
                f"Claude Code exited with status {result.returncode} without a final result "
                f"({run.error}; stderr: {stderr}); check that `claude -p hello` works in this "
                f"environment, or reinstall it: {CLAUDE.install_hint()}"
            )
        elif run.error is None and result.returncode != 0:
            update["error"] = (
                f"Claude Code exited with status {result.returncode} ({tail(result.stderr) or 'no stderr'}); "
                f"check that `claude -p hello` works in this environment."
            )
        return run.model_copy(update=update)
