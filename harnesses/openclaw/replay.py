"""Replay one task with a candidate skill inside the real OpenClaw CLI (`openclaw agent exec`).

The recipe, run in a fresh temporary copy of the task's working directory (stdin closed, the
process in its own group, killed with it on timeout):

    openclaw agent exec --message-file <run>/prompt.md --json --timeout T
             --cwd <temp workdir> --state-dir <run>/state --config <run>/openclaw.json
             [--model provider/model] [--local-model-lean] [--thinking LEVEL] [extra_args]

with `OPENCLAW_STATE_DIR=<run>/state XDG_CACHE_HOME=<run>/cache OPENCLAW_NO_AUTO_UPDATE=1
DO_NOT_TRACK=1`, where `<run>` is a temporary folder deleted after the run.

Why each flag:

- `agent exec` runs one headless embedded turn without a Gateway (it needs no running service).
  `--json` reserves stdout for one envelope `{ok, status, final, payloads, usage{input, output,
  cacheRead, cacheWrite, total, cost{total}}, toolSummary{calls, tools, failures}, model,
  provider, sessionId, error{message, kind}}`; the exit status is 0 ok, 1 error, 2 timeout.
- `--message-file`: the prompt can be long or start with `-` without being read as a flag.
- `--timeout T`: OpenClaw's own deadline, `timeout_s` minus `AGENT_DEADLINE_MARGIN_S` (at least
  1 s). Its clock starts after OpenClaw's start-up (~10 s here), so on a timeout it usually ends
  itself, prints a `status: "timeout"` envelope and writes its transcript; the hard kill of the
  whole process group at `timeout_s` is the backstop.
- `--cwd`: the temporary copy is both the agent's workspace (where it finds `skills/`) and the
  tools' working directory; by default OpenClaw's filesystem tools are restricted to it.
- `--state-dir` plus `OPENCLAW_STATE_DIR`: both are needed. `--state-dir` alone still lets the
  CLI write to the user's `~/.openclaw` while it starts (`state/openclaw.sqlite` config-health
  rows, `plugin-skills/` links) before it switches to the given directory; the environment
  variable moves those too. The retained state dir (instead of `agent exec`'s own throwaway one)
  lets the harness read the run's transcript afterwards.
- `--config`: with the state dir moved, OpenClaw would no longer find the user's config, so a
  generated `openclaw.json` is passed that `$include`s the user's (found as OpenClaw finds it:
  `$OPENCLAW_CONFIG_PATH`, else `$OPENCLAW_STATE_DIR/openclaw.json`, else
  `~/.openclaw[-<profile>]/openclaw.json`, `~` being `$OPENCLAW_HOME` or `$HOME`), with
  `OPENCLAW_INCLUDE_ROOTS` allowing its folder. OpenClaw never rewrites a config whose root
  authors `$include`, so the user's file is only read. The generated file adds
  `update.checkOnStart: false` and, with `base_url`, the replay provider (below).
- `XDG_CACHE_HOME`: OpenClaw stages SQLite snapshots under `~/.cache/openclaw-<uid>`; this keeps
  them in the run folder too (the agent's tools then also see that cache folder).
- `OPENCLAW_AGENT_DIR` and `OPENCLAW_CONFIG_PATH` are removed from the environment: the first
  would put the run's transcript into the user's agent folder.
- `OPENCLAW_NO_AUTO_UPDATE=1 DO_NOT_TRACK=1`: no update check, no telemetry.
- `--model` only when `target_model` is set: by default the run uses the model the user's
  OpenClaw config selects. With `base_url` the generated config adds a provider `skillsleep`
  (`api: "openai-completions"`, `baseUrl: base_url`, an OpenAI-compatible URL ending in `/v1`,
  `models: [target_model]`, `apiKey: "${<api_key_env>}"`, a reference OpenClaw resolves from
  the environment, or a placeholder when `api_key_env` is empty) and `--model
  skillsleep/<target_model>`; the key itself is never written to a file.
- `--local-model-lean` (setting `lean`): the reduced tool surface for small local models (about
  8k tokens of prompt instead of 15k). `--thinking` (setting `thinking`): one run's level.
- Provider retries (setting `provider_retries`, default 2; None keeps OpenClaw's own 8 retries
  within 90 s) go to `<run>/state/agents/main/agent/settings.json` as
  `retry.provider.maxRetries`, so a dead model server fails in seconds, not a minute and a half.
  (Only for the default agent `main`; a config whose default agent has another id keeps
  OpenClaw's retries.)

How the skill is installed and invoked: the skill document is written to
`<temp workdir>/skills/<name>/SKILL.md`, `<name>` being the frontmatter's `name` (lowercase
letters, digits, hyphens) or `skillsleep-candidate`; a `name`/`description` missing from the
frontmatter is added, since OpenClaw's skill docs require both. The prompt is prefixed
with `$<name> `: OpenClaw expands a `$skill` mention into an instruction to read that SKILL.md
before acting, so the model reads it with its `read` tool (that call is part of the run's tool
calls). An empty skill installs nothing and adds no prefix (the baseline).

Where state goes: everything the run writes (sessions in
`<run>/state/agents/main/agent/openclaw-agent.sqlite`, state databases, locks, caches) stays in
`<run>`, deleted afterwards; the user's `~/.openclaw` and the task's own folder are only read.
The user's `<state>/.env` (where OpenClaw keeps provider keys) is symlinked into the run's
state so those keys still work. What a replay does NOT see: logins stored in the user's state
(auth profiles from `openclaw onboard` / `models auth`), skills under `~/.openclaw/skills` and
plugins installed into the user's state; provide provider keys through the environment, the
`.env` file or the config, or use `base_url` + `api_key_env`. OpenClaw always appends its
own log to `/tmp/openclaw/openclaw-YYYY-MM-DD.log` (pruned after 24 h); `logging.file` in the
passed config does not move it (2026.9.6).

What comes back: `parse_openclaw_output` turns the envelope into a `Run` (final text, usage,
cost = `usage.cost.total`, tool names from `toolSummary`); the harness then reads the run's
transcript from its state dir with `harnesses/openclaw.read_openclaw_sqlite` to get every tool
call WITH its arguments and result, and adds wall time (`latency_s`) and exit status. A missing
or too old CLI, a Node.js older than 24.16, an auth failure, a dead model server, a crash, a
timeout or output without an envelope all come back as `Run(error=...)` saying what to do;
`run()` never raises for one episode. OpenClaw has no sampling seed: `sample` only
distinguishes repeats. One `agent exec` takes ~15 s and ~0.9 GB of memory: keep `concurrency`
low on small machines.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from skillsleep.core.records import Run, Task, ToolCall, Usage
from skillsleep.core.session import Session
from skillsleep.core.skill import Skill
from skillsleep.harnesses.agent_cli import (
    PLACEHOLDER_KEY,
    AgentCLI,
    AgentSettings,
    CLIHarness,
    CLIResult,
    HarnessStatus,
    agent_env,
    run_cli,
    skill_document,
    skill_name,
    tail,
    task_text,
    workdir,
)
from skillsleep.harnesses.openclaw.transcripts import openclaw_sources, parse_openclaw_jsonl, read_openclaw_sqlite

__all__ = [
    "OPENCLAW",
    "OpenClawHarness",
    "OpenClawSettings",
    "parse_openclaw_output",
    "tool_calls_from_sessions",
    "user_config_path",
]

OPENCLAW = AgentCLI(
    harness="openclaw",
    default_command="openclaw",
    package="openclaw",
    min_version=(2026, 9, 0),
    tested_version="2026.9.6",
)
QUIET_ENV = {"OPENCLAW_NO_AUTO_UPDATE": "1", "DO_NOT_TRACK": "1"}
REPLAY_PROVIDER = "skillsleep"  # the provider the generated config adds for base_url
AGENT_DEADLINE_MARGIN_S = 20.0  # start-up + shutdown time between OpenClaw's deadline and the hard kill
NODE_HINT = (
    "OpenClaw needs Node.js 24.16 or newer (node:sqlite): put a Node 24.16+ `node` first on PATH "
    "(e.g. `nvm install 24`, or the bin folder of the npm package node@24) and run again"
)

_NODE_PROBLEM = re.compile(r"node:sqlite is unavailable|use 24\.16\+|requires Node(?:\.js)? (?:>= ?)?24", re.I)
_NODE_VERSION = re.compile(r"Node(?:\.js)? v?(\d+\.\d+\.\d+)")
_AUTH_MARKERS = (
    "api key",
    "apikey",
    "unauthorized",
    "authentication",
    "forbidden",
    "credential",
    "auth profile",
    "not logged in",
    "invalid key",
)
_AUTH_CODES = re.compile(r"\b(?:401|403)\b")
_RATE_CODE = re.compile(r"\b429\b")
_CONNECT_MARKERS = (
    "connection refused",
    "econnrefused",
    "fetch failed",
    "connection error",
    "enotfound",
    "econnreset",
    "socket hang up",
    "unreachable",
    "getaddrinfo",
)
_RATE_MARKERS = ("rate limit", "rate_limit", "too many requests")
_CONTEXT_MARKERS = (
    "context size",
    "context length",
    "context window",
    "maximum context",
    "context_length_exceeded",
    "context overflow",
)


class OpenClawSettings(AgentSettings):
    """Settings of the openclaw harness (`[harness.openclaw]`), on top of `AgentSettings`."""

    lean: bool = False  # `--local-model-lean`: reduced tool surface for small local models
    thinking: str = ""  # `--thinking LEVEL` (off, minimal, low, medium, high, …); "" → the config's
    provider_retries: int | None = Field(default=2, ge=0)  # retry.provider.maxRetries; None → OpenClaw's 8


# --- parsing stdout ---------------------------------------------------------------------------


def _envelope(stdout: str) -> dict[str, Any] | None:
    """The `agent exec --json` envelope in stdout: the whole text as one JSON object, else the last
    JSON object starting on its own line that looks like an envelope (has `ok` or `status`)."""
    text = stdout.strip()
    if not text:
        return None
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return whole
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    for match in re.finditer(r"(?m)^[ \t]*\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.end() - 1)
        except ValueError:
            continue
        if isinstance(value, dict) and ("ok" in value or "status" in value):
            found = value
    return found


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 2**53 else 0


def _usage(raw: Any) -> Usage:
    """OpenClaw usage → Usage, as the transcript reader does: input is the whole prompt
    (`input + cacheRead + cacheWrite`), `cached_tokens = cacheRead`."""
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=_count(raw, "input") + _count(raw, "cacheRead") + _count(raw, "cacheWrite"),
        output_tokens=_count(raw, "output"),
        cached_tokens=_count(raw, "cacheRead"),
    )


def _cost(env: Mapping[str, Any]) -> float:
    usage = env.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    value = cost.get("total") if isinstance(cost, dict) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        value = env.get("costUsd")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return 0.0


def _payload_texts(env: Mapping[str, Any], *, errors: bool) -> list[str]:
    payloads = env.get("payloads")
    out = []
    for p in payloads if isinstance(payloads, list) else []:
        if (
            isinstance(p, dict)
            and isinstance(p.get("text"), str)
            and p["text"].strip()
            and bool(p.get("isError")) == errors
        ):
            out.append(p["text"].strip())
    return out


def _error_message(env: Mapping[str, Any]) -> str:
    error = env.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"].strip():
        return error["message"].strip()
    if isinstance(error, str) and error.strip():
        return error.strip()
    texts = _payload_texts(env, errors=True)
    return " ".join(texts) if texts else f"status {env.get('status')!r}, no details"


def node_problem(text: str) -> str | None:
    """The error to show when OpenClaw's output says its Node.js is too old, else None."""
    if not _NODE_PROBLEM.search(text):
        return None
    found = _NODE_VERSION.search(text)
    runs_on = f" (it ran on Node {found.group(1)})" if found else ""
    return f"{NODE_HINT}{runs_on}."


def _failure(env: Mapping[str, Any], server: str) -> str:
    """The error of a failed envelope, worded as what to do."""
    status = env.get("status")
    detail = _error_message(env)[:500]
    low = detail.lower()
    at = f" at {server}" if server else ""
    node = node_problem(detail)
    if node:
        return node
    if any(m in low for m in _CONNECT_MARKERS):
        return (
            f"OpenClaw could not reach the model server{at} ({detail}); start the server, or fix `base_url` "
            f"in the openclaw harness settings (or the provider's baseUrl in openclaw.json)."
        )
    if any(m in low for m in _CONTEXT_MARKERS):
        return (
            f"OpenClaw's prompt does not fit the model's context ({detail}); use a model or server with a "
            f"larger context (llama.cpp: --ctx-size 16384), and `lean = true` in the openclaw harness settings "
            f"(--local-model-lean: ~8k tokens of prompt instead of ~15k)."
        )
    if any(m in low for m in _RATE_MARKERS) or _RATE_CODE.search(low):
        return (
            f"the model server{at} rate-limited OpenClaw ({detail}); lower `concurrency` in the openclaw "
            f"harness settings or try again later."
        )
    if any(m in low for m in _AUTH_MARKERS) or _AUTH_CODES.search(low):
        return (
            f"OpenClaw could not authenticate with the model provider ({detail}): a replay sees provider "
            f"keys from the environment, ~/.openclaw/.env and openclaw.json, not logins stored in OpenClaw's "
            f"state; export the provider's key (e.g. OPENAI_API_KEY), or with `base_url` set put the key in "
            f"the variable named by `api_key_env`."
        )
    if status == "timeout" or (isinstance(env.get("error"), dict) and env["error"].get("kind") == "timeout"):
        return (
            f"OpenClaw timed out before finishing ({detail}); raise timeout_s, or check that the model "
            f"server{at} answers."
        )
    return (
        f"OpenClaw reported an error ({detail}); check that `openclaw agent exec hello --json` works in "
        f"this environment, and `target_model` / `base_url` in the openclaw harness settings."
    )


def parse_openclaw_output(stdout: str, *, server: str = "") -> Run:
    """The `Run` that `openclaw agent exec --json` printed. Pure: no I/O; `latency_s` and
    `exit_status` are left for the caller.

    The response is `final` (else the non-error payload texts joined); usage from `usage`
    (input counts the whole prompt, cache reads included; `cached_tokens = cacheRead`); cost from
    `usage.cost.total` (else `costUsd`); tool calls are the names in `toolSummary.tools`, one
    each, without arguments (the envelope has no more; the harness replaces them with the
    transcript's). An envelope that is not ok (`ok: false` or `status` other than "ok") gives an
    error Run saying what to do; no envelope (garbage, truncated or empty output) gives an error
    Run too. `server` (where the model server is, if known) is only used in messages. Never raises."""
    env = _envelope(stdout)
    if env is None:
        what = "printed nothing on stdout" if not stdout.strip() else "printed no JSON envelope on stdout"
        return Run(error=f"OpenClaw {what} (the run was cut off or crashed)")
    final = env.get("final")
    response = (
        final.strip() if isinstance(final, str) and final.strip() else "\n".join(_payload_texts(env, errors=False))
    )
    summary = env.get("toolSummary")
    tools = summary.get("tools") if isinstance(summary, dict) else None
    calls = [ToolCall(name=t) for t in tools if isinstance(t, str) and t] if isinstance(tools, list) else []
    ok = env.get("ok") is True and env.get("status", "ok") == "ok"
    error = None if ok else _failure(env, server)
    return Run(
        response=response if ok else (final.strip() if isinstance(final, str) else ""),
        tool_calls=calls,
        usage=_usage(env.get("usage")),
        cost_usd=_cost(env),
        error=error,
    )


# --- the run's transcript ---------------------------------------------------------------------------


def tool_calls_from_sessions(sessions: list[Session]) -> list[ToolCall]:
    """Every tool call of the sessions in order, with its arguments and the text of its result
    (prefixed `[error] ` when the tool failed; None when no result came back)."""
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    for session in sessions:
        for turn in session.turns:
            if turn.kind == "tool_call":
                call = ToolCall(name=turn.tool or "?", arguments=dict(turn.arguments or {}))
                calls.append(call)
                if turn.call_id:
                    by_id[turn.call_id] = call
            elif turn.kind == "tool_result" and turn.call_id in by_id:
                by_id[turn.call_id].result = f"[error] {turn.text}" if turn.is_error else turn.text
    return calls


def read_run_sessions(state_dir: Path, session_id: str | None = None) -> list[Session]:
    """The sessions a run wrote into its own state dir (only `session_id`'s when it is found)."""
    sessions: list[Session] = []
    for source in openclaw_sources(state_dir).files:
        if source.suffix == ".sqlite":
            sessions += read_openclaw_sqlite(source)[0].sessions
        else:
            try:
                sessions += parse_openclaw_jsonl(source.read_bytes(), source=str(source)).sessions
            except OSError:
                continue
    wanted = [s for s in sessions if session_id and s.id == session_id]
    return wanted or sessions


def _last_assistant_text(sessions: list[Session]) -> str:
    for session in reversed(sessions):
        for turn in reversed(session.turns):
            if turn.kind == "assistant" and turn.text:
                return turn.text
    return ""


# --- the agent's state --------------------------------------------------------------------------


def _home(env: Mapping[str, str]) -> Path:
    for key in ("OPENCLAW_HOME", "HOME"):
        value = (env.get(key) or "").strip()
        if value and value not in ("undefined", "null"):
            return Path(value).expanduser()
    return Path.home()


def user_state_dir(env: Mapping[str, str]) -> Path:
    """The user's OpenClaw state dir: `$OPENCLAW_STATE_DIR`, else `~/.openclaw` (`~/.openclaw-<profile>`
    with `OPENCLAW_PROFILE`), `~` being `$OPENCLAW_HOME` or `$HOME`."""
    if env.get("OPENCLAW_STATE_DIR"):
        return Path(env["OPENCLAW_STATE_DIR"]).expanduser()
    profile = (env.get("OPENCLAW_PROFILE") or "").strip()
    name = f".openclaw-{profile}" if profile and profile != "default" else ".openclaw"
    return _home(env) / name


def user_config_path(env: Mapping[str, str]) -> Path:
    """The user's OpenClaw config file (it may not exist): `$OPENCLAW_CONFIG_PATH`, else
    `openclaw.json` in the user's state dir."""
    if env.get("OPENCLAW_CONFIG_PATH"):
        return Path(env["OPENCLAW_CONFIG_PATH"]).expanduser()
    return user_state_dir(env) / "openclaw.json"


def run_config(user_config: Path | None, settings: OpenClawSettings) -> dict[str, Any]:
    """The generated config of one run: the user's config `$include`d (when it exists), no update
    check, and with `base_url` the replay provider serving `target_model`."""
    config: dict[str, Any] = {}
    if user_config is not None:
        config["$include"] = str(user_config)
    config["update"] = {"checkOnStart": False}
    if settings.base_url:
        key = f"${{{settings.api_key_env}}}" if settings.api_key_env else PLACEHOLDER_KEY
        model = settings.target_model
        config["models"] = {
            "providers": {
                REPLAY_PROVIDER: {
                    "baseUrl": settings.base_url.rstrip("/"),
                    "apiKey": key,
                    "api": "openai-completions",
                    "models": [{"id": model, "name": model}],
                }
            }
        }
    return config


def prepare_run_state(
    root: Path, base: Mapping[str, str], settings: OpenClawSettings
) -> tuple[Path, Path, Path | None]:
    """Create the run's state dir, cache dir and config under `root` (see the module docstring).
    Returns (state dir, config file, the user's config file or None). Only reads the user's files."""
    state, cache = root / "state", root / "cache"
    state.mkdir(parents=True)
    cache.mkdir()
    user_config = user_config_path(base)
    found = user_config.resolve() if user_config.is_file() else None
    config_file = root / "openclaw.json"
    config_file.write_text(json.dumps(run_config(found, settings), indent=2), encoding="utf-8")
    user_env = user_state_dir(base) / ".env"
    if user_env.is_file():
        (state / ".env").symlink_to(user_env.resolve())
    if settings.provider_retries is not None:
        agent_dir = state / "agents" / "main" / "agent"
        agent_dir.mkdir(parents=True)
        retry = {"retry": {"provider": {"maxRetries": settings.provider_retries}}}
        (agent_dir / "settings.json").write_text(json.dumps(retry), encoding="utf-8")
    return state, config_file, found


# --- the skill ------------------------------------------------------------------------------------


def task_prompt(task: Task, name: str | None) -> str:
    """The prompt one replay sends: `$<skill name> ` (when a skill is installed), the task's context,
    a blank line, then its prompt."""
    text = task_text(task)
    return f"${name} {text}" if name else text


def install_skill(cwd: Path, skill: Skill) -> str | None:
    """Write the skill to `<cwd>/skills/<name>/SKILL.md`; its name, or None for an empty skill."""
    if not skill.body.strip():
        return None
    name = skill_name(skill)
    folder = cwd / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_document(skill, name), encoding="utf-8")
    return name


# --- the harness ------------------------------------------------------------------------------------


def agent_deadline(timeout_s: float) -> int:
    """OpenClaw's own `--timeout` for a run killed at `timeout_s` (see the module docstring)."""
    return max(1, math.ceil(timeout_s - AGENT_DEADLINE_MARGIN_S))


def build_argv(
    command: str,
    settings: OpenClawSettings,
    *,
    prompt_file: Path,
    cwd: Path,
    state: Path,
    config: Path,
    timeout_s: float,
) -> list[str]:
    """The `openclaw` command line of one replay (see the module docstring for each flag)."""
    argv = [
        command,
        "agent",
        "exec",
        "--message-file",
        str(prompt_file),
        "--json",
        "--timeout",
        str(agent_deadline(timeout_s)),
        "--cwd",
        str(cwd),
        "--state-dir",
        str(state),
        "--config",
        str(config),
    ]
    if settings.base_url:
        argv += ["--model", f"{REPLAY_PROVIDER}/{settings.target_model}"]
    elif settings.target_model:
        argv += ["--model", settings.target_model]
    if settings.lean:
        argv.append("--local-model-lean")
    if settings.thinking:
        argv += ["--thinking", settings.thinking]
    return [*argv, *settings.extra_args]


class OpenClawHarness(CLIHarness):
    """Runs one task headless in OpenClaw with a given skill; see the module docstring.

    `env` is the base environment of the agent process (None → this process's); it also says
    where the user's OpenClaw config and state are. At most `settings.concurrency` runs of one
    harness instance go at once."""

    name = "openclaw"
    cli = OPENCLAW
    settings: OpenClawSettings

    def __init__(self, settings: OpenClawSettings | None = None, *, env: dict[str, str] | None = None) -> None:
        super().__init__(settings or OpenClawSettings(), env=env)
        self._status: HarnessStatus | None = None

    def status(self) -> HarnessStatus:
        """As every CLI harness's, except that a Node.js too old for OpenClaw is reported as such."""
        if self._status is not None:
            return self._status
        status = super().status()
        if status.installed and not status.usable and status.version is None and status.command:
            problem = node_problem(self._version_output(status.command))
            if problem:
                status = status.model_copy(update={"reason": problem})
        self._status = status
        return status

    def _version_output(self, command: str) -> str:
        try:
            out = subprocess.run(
                [command, "--version"],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
                env=self.base_env(),
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return out.stdout + out.stderr

    async def replay(self, command: str, task: Task, skill: Skill, base: dict[str, str], timeout_s: float) -> Run:
        s = self.settings
        if s.base_url and not s.target_model:
            return Run(
                error=f"openclaw harness: `base_url` is set ({s.base_url}) but `target_model` is empty; set "
                f"`target_model` to the model name that server serves."
            )
        with (
            workdir(task) as cwd,
            tempfile.TemporaryDirectory(prefix="skillsleep-openclaw-", ignore_cleanup_errors=True) as tmp,
        ):
            root = Path(tmp)
            state, config, user_config = prepare_run_state(root, base, s)
            name = install_skill(cwd, skill)
            prompt_file = root / "prompt.md"
            prompt_file.write_text(task_prompt(task, name), encoding="utf-8")
            argv = build_argv(
                command, s, prompt_file=prompt_file, cwd=cwd, state=state, config=config, timeout_s=timeout_s
            )
            env = self._env(base, root, state, user_config)
            result = await run_cli(argv, cwd=cwd, env=env, timeout_s=timeout_s)
            return await asyncio.to_thread(self._finish, result, state, timeout_s)

    def _env(self, base: dict[str, str], root: Path, state: Path, user_config: Path | None) -> dict[str, str]:
        env = agent_env(base, {**QUIET_ENV, **self.settings.env})
        for name in ("OPENCLAW_AGENT_DIR", "OPENCLAW_CONFIG_PATH"):
            env.pop(name, None)
        env["OPENCLAW_STATE_DIR"] = str(state)
        env["XDG_CACHE_HOME"] = str(root / "cache")
        if user_config is not None:
            roots = [str(user_config.parent), *filter(None, env.get("OPENCLAW_INCLUDE_ROOTS", "").split(os.pathsep))]
            env["OPENCLAW_INCLUDE_ROOTS"] = os.pathsep.join(roots)
        return env

    def _server(self) -> str:
        return self.settings.base_url.rstrip("/")

    def _finish(self, result: CLIResult, state: Path, timeout_s: float) -> Run:
        server = self._server()
        envelope = _envelope(result.stdout)
        run = parse_openclaw_output(result.stdout, server=server)
        session_id = envelope.get("sessionId") if envelope else None
        sessions = read_run_sessions(state, session_id if isinstance(session_id, str) else None)
        update: dict[str, Any] = {"latency_s": result.duration_s, "exit_status": result.returncode}
        if sessions:
            calls = tool_calls_from_sessions(sessions)
            if calls or not run.tool_calls:
                update["tool_calls"] = calls
            if run.usage.total == 0:
                update["usage"] = sum((s.usage for s in sessions), Usage())
            if not run.response and run.error is None:
                update["response"] = _last_assistant_text(sessions)
        output = f"{result.stderr}\n{result.stdout}"
        if result.timed_out:
            where = f"the model server at {server}" if server else "the agent's model provider"
            update["error"] = (
                f"OpenClaw did not finish within {timeout_s:g} s (timed out) and its process group "
                f"was killed; raise timeout_s, or check that {where} answers."
            )
        elif node_problem(output) and run.error is not None:
            update["error"] = node_problem(output)
        elif envelope is None:
            update["error"] = (
                f"OpenClaw exited with status {result.returncode} without its JSON envelope "
                f"({run.error}; stderr: {tail(result.stderr) or 'no stderr'}); check that "
                f"`openclaw agent exec hello --json` works in this environment, or reinstall it: "
                f"{OPENCLAW.install_hint()}"
            )
        elif run.error is None and result.returncode != 0:
            update["error"] = (
                f"OpenClaw exited with status {result.returncode} ({tail(result.stderr) or 'no stderr'}); "
                f"check that `openclaw agent exec hello --json` works in this environment."
            )
        return run.model_copy(update=update)
