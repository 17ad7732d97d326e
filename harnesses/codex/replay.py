"""Replay one task with a candidate skill inside the real Codex CLI (`codex exec`).

The recipe, run in a fresh temporary copy of the task's working directory (stdin closed, the
process in its own group, killed with it on timeout):

    CODEX_HOME=<run>/home TMPDIR=<run>/tmp \
    codex exec --json --skip-git-repo-check --ephemeral -s SANDBOX
               -c check_for_update_on_startup=false -c analytics.enabled=false
               -c features.plugins=false -c features.remote_plugin=false -c features.apps=false
               -c features.unbounded_connection_retries=false -c features.hooks=false -c notify=[]
               [-m MODEL] [-c model_providers.skillsleep={…} -c model_provider="skillsleep"]
               [lean flags] [-c skills.config=[…]] [extra_args] -- [$NAME ]PROMPT  </dev/null

Why each flag:

- `exec` runs one turn headless and exits; `--json` prints one event per line
  (`thread.started`, `turn.started`, `item.started|updated|completed` with agent messages,
  command executions, file changes, MCP calls…, then `turn.completed{usage}` or
  `turn.failed{error}`), so tool calls and their results are visible and a run cut off midway
  still yields what it did. stdin is /dev/null: `codex exec` reads a piped stdin into the
  prompt and would wait for it.
- `--skip-git-repo-check`: the working copy is not a git repository (`.git` is not copied).
- `--ephemeral` writes no rollout file (defence in depth: the Codex home is temporary anyway).
- `-s SANDBOX` (setting `sandbox`, default `workspace-write`): the agent may edit its working
  copy and run commands but not write outside it (and the temp dirs). `codex exec` never waits
  for an approval (checked with `approval_policy="on-request"`: a refused command just fails
  and the model sees the failure), so there is no approval setting; the CLI's other switches
  (`--approve-for-me`, `--dangerously-bypass-approvals-and-sandbox`) can go in `extra_args`.
  `danger-full-access` lifts the sandbox; use it only inside a sandbox of your own.
- the quiet/fail-fast `-c` keys (HARNESSES.md): no update check, no analytics, no plugin/app
  fetches, no endless reconnects — a replay must not phone home and a dead server must fail in
  seconds; and no user hooks or `notify` program, which would otherwise fire for every replay
  (an incremental-harvest hook, a desktop notification) with effects outside the run.
- `-m` only when `target_model` is set: by default the run uses the model and provider the
  user's Codex is configured with (their `config.toml`, copied, see below).
- with `base_url`: a provider `[model_providers.skillsleep]` (`wire_api="responses"`, the only
  API Codex speaks; `env_key` = `api_key_env` when set, no key otherwise; request and stream
  retries = setting `retries`, default 0 so a dead server fails at once and a failed episode
  scores 0) is defined and selected with `-c`. An `api_key_env` that is not set is an error
  before anything runs.
- `lean` (for tiny local models: ≈2k prompt tokens instead of ≈10k): `-c
  model_instructions_file=<file holding lean_instructions> --disable goals --disable
  multi_agent --disable view_image --disable image_generation -c web_search="disabled"`.
- the prompt comes after `--`, so a prompt starting with `-` is not read as a flag. It is the
  task's context and prompt (context first, like the chat harness).

How the skill is installed and invoked (setting `skill_mode`):

- `skill` (default): the whole document is written to `<copy>/.agents/skills/<name>/SKILL.md`
  and the prompt starts with `$<name> `. Codex injects the body of a `$`-mentioned skill into
  the request, so the candidate reaches the model on every run, as when the user invokes the
  skill, and the project's own `AGENTS.md` stays as it is — the right default for a SKILL.md.
  `<name>` is the frontmatter `name` (else `skillsleep-candidate`); a missing `name` or
  `description` is added to the frontmatter of the copy, as Codex refuses to load a SKILL.md
  without them (and a candidate Codex cannot load is an error run, not a silent baseline).
  Codex injects nothing when two loaded skills share the mentioned name, so every other skill of
  that name is kept out of the run: removed from the working copy, not linked from the user's
  Codex home, and disabled by path (`skills.config`, merged with the user's own entries) in
  `~/.agents/skills` and `/etc/codex/skills`. This mode exercises the skill once invoked, not
  Codex's own decision to invoke it.
- `agents_md`: the body (frontmatter dropped) replaces `<copy>/AGENTS.md` (an
  `AGENTS.override.md` there is removed, since it would win): for training project instructions.

An empty skill installs nothing and adds no `$name` (the no-skill baseline).

Where state goes: Codex writes into its home even with `--ephemeral` (SQLite state, logs,
memories, goals and queue databases, `installation_id`, `.sandbox_migration`, `skills/.system`,
shell snapshots), and temp files (sandbox mount targets) into `$TMPDIR`. So each run gets its
own temporary folder holding `CODEX_HOME` and `TMPDIR` (not one inside the other, or Codex
refuses to create its helper aliases and warns), deleted afterwards. The home is prepared from
the user's Codex home (`$CODEX_HOME`, else `~/.codex`, read from the base environment):
`config.toml`, `AGENTS.md`, `AGENTS.override.md` and `rules/` are copied; the user's skills in
`skills/` are symlinked (not `.system`, not same-name skills); `auth.json` is symlinked, so a
`codex login` keeps working and a token refreshed during a replay is written through to the
user's file (a login kept only in the OS keyring may not be found under another home: use an
API key then). With `base_url` set, `auth.json` is not linked: no OpenAI login goes to another
server. HOME stays the user's (shell startup files, `~/.agents/skills`) and nothing is written
there; MCP servers in the user's config start as they would for the user.

What comes back: `parse_codex_output` turns stdout into a `Run` (the last agent message, tool
calls with arguments and results, the turn's usage); the harness adds the wall time
(`latency_s`) and exit status. Codex reports no cost: `cost_usd` is 0.0 and the engine's ledger
prices the tokens. A missing or too old CLI, an auth failure, a dead or failing server, a crash,
a timeout or output without a finished turn come back as `Run(error=...)` saying what to do;
`run()` never raises for one episode. Codex has no sampling seed: `sample` only tells repeats
apart.

Known gap: a command the sandbox refuses is reported to the model, but `codex exec --json`
emits no item for it (0.171.0), so it is missing from `tool_calls`.

Minimum version 0.171.0: the oldest build this recipe was verified against (the one
scripts/install-agents.sh pins). What it relies on drifts between builds: the `--json` event
names, `--ephemeral`, `--disable <feature>` with the `goals`/`multi_agent`/`hooks` features,
`model_instructions_file`, `web_search="disabled"`, `skills.config` and `.agents/skills`
discovery with `$name` injection.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from skillsleep.core.records import Run, Task, ToolCall, Usage
from skillsleep.core.skill import Skill
from skillsleep.harnesses.agent_cli import (
    AgentCLI,
    AgentSettings,
    CLIHarness,
    CLIResult,
    frontmatter_value,
    run_cli,
    skill_document,
    skill_name,
    tail,
    task_text,
    workdir,
)

__all__ = ["CODEX", "CodexHarness", "CodexSettings", "codex_skill", "parse_codex_output"]

CODEX = AgentCLI(
    harness="codex", default_command="codex", package="@openai/codex", min_version=(0, 171, 0), tested_version="0.171.0"
)
PROVIDER = "skillsleep"
QUIET = (
    "check_for_update_on_startup=false",
    "analytics.enabled=false",
    "features.plugins=false",
    "features.remote_plugin=false",
    "features.apps=false",
    "features.unbounded_connection_retries=false",
    "features.hooks=false",
    "notify=[]",
)
LEAN_FEATURES = ("goals", "multi_agent", "view_image", "image_generation")
LEAN_INSTRUCTIONS = (
    "You are a coding agent in a terminal. Do what the user asks. Use the shell tool when you "
    "need to run a command. Answer briefly.\n"
)
_TURN_FAILED = "Codex failed: "
_STDERR_NOISE = ("Reading additional input from stdin", "WARNING: proceeding, even though we could not create")


class CodexSettings(AgentSettings):
    """Settings of the codex harness (`[harness.codex]`), on top of `AgentSettings`."""

    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    skill_mode: Literal["skill", "agents_md"] = "skill"  # see the module docstring
    lean: bool = False  # minimal instructions and tools, for tiny local models
    lean_instructions: str = LEAN_INSTRUCTIONS
    retries: int = Field(default=0, ge=0)  # request/stream retries of the base_url provider


# --- parsing stdout ---------------------------------------------------------------------------


def _hint(message: str) -> str:
    """What to do about a Codex turn failure, from its message."""
    low = message.lower()
    if re.search(r"\b40[13]\b", low) or any(
        m in low for m in ("unauthorized", "forbidden", "api key", "not logged in", "login")
    ):
        return (
            "authentication failed: run `codex login`, or with base_url set the key in the variable api_key_env names"
        )
    if "missing environment variable" in low:
        return "set that variable in the environment skillsleep runs in (api_key_env names it)"
    if any(
        m in low
        for m in (
            "connection failed",
            "error sending request",
            "connection refused",
            "stream disconnected",
            "name does not resolve",
            "dns",
        )
    ):
        return (
            "the model server did not answer: start it, or fix base_url (or the provider in the user's "
            "Codex config.toml)"
        )
    if re.search(r"\b(429|5\d\d)\b", low) or any(
        m in low for m in ("rate limit", "usage limit", "quota", "high demand", "overloaded")
    ):
        return (
            'the model server failed or refused the request for load or quota (Codex says "high demand" '
            "for any HTTP 5xx): check the server's log, retry later or lower concurrency"
        )
    if "model" in low and any(m in low for m in ("not found", "does not exist", "not supported")):
        return "the model was refused: check target_model (or the model in the user's Codex config.toml)"
    return "rerun the task with `codex exec` in its folder to see the whole error"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(raw: Any) -> Usage:
    """`turn.completed.usage` → Usage (OpenAI convention: input includes the cached tokens)."""
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        cached_tokens=_int(raw.get("cached_input_tokens")),
    )


def _shell_body(command: str) -> str:
    """`/bin/bash -lc 'echo hi'` → `echo hi` (what the model asked to run); anything else as is."""
    try:
        parts = shlex.split(command)
    except ValueError:
        return command
    if len(parts) == 3 and os.path.basename(parts[0]) in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
        return parts[2]
    return command


def _tool_call(item: dict[str, Any]) -> ToolCall | None:
    """A tool item of `codex exec --json` as a ToolCall (None for messages, reasoning, errors…).

    Names follow Codex's own tool names (`exec_command`, `apply_patch`, `web_search`,
    `update_plan`, `mcp__<server>__<tool>`), as the transcripts do."""
    kind = item.get("type")
    done = item.get("status") not in (None, "in_progress")
    if kind == "command_execution":
        result = None
        if done:
            result = str(item.get("aggregated_output") or "")
            code = item.get("exit_code")
            if isinstance(code, int) and code != 0:
                result += f"\n[exit code {code}]"
            elif item.get("status") not in ("completed",):
                result += f"\n[{item.get('status')}]"
        return ToolCall(
            name="exec_command", arguments={"cmd": _shell_body(str(item.get("command") or ""))}, result=result
        )
    if kind == "file_change":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        return ToolCall(
            name="apply_patch", arguments={"changes": changes}, result=str(item.get("status")) if done else None
        )
    if kind == "mcp_tool_call":
        args = item.get("arguments")
        outcome: str | None = None
        if isinstance(item.get("error"), dict):
            outcome = f"error: {item['error'].get('message', '')}"
        elif item.get("result") is not None:
            outcome = json.dumps(item["result"], ensure_ascii=False)
        return ToolCall(
            name=f"mcp__{item.get('server', '')}__{item.get('tool', '')}",
            arguments=args if isinstance(args, dict) else {"arguments": args},
            result=outcome,
        )
    if kind == "web_search":
        return ToolCall(name="web_search", arguments={"query": str(item.get("query") or "")})
    if kind == "todo_list":
        return ToolCall(name="update_plan", arguments={"items": item.get("items") or []})
    if kind == "collab_tool_call":
        return ToolCall(
            name=str(item.get("tool") or "collab_tool_call"),
            arguments={k: v for k, v in item.items() if k not in ("id", "type", "tool", "status")},
        )
    return None


def parse_codex_output(stdout: str) -> Run:
    """The `Run` in `codex exec --json` stdout: the last agent message, every tool item (in the
    order they started, with their results), the usage of the turn, and an error when the turn
    failed or the output ends before the turn did. Lines that are not JSON objects and unknown
    events are skipped; this never raises. `latency_s` and `exit_status` are the caller's."""
    items: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    usage = Usage()
    finished = failed = False
    error = ""
    last_error_event = ""
    events = skipped = 0
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not isinstance(event, dict):
            skipped += 1
            continue
        events += 1
        kind = event.get("type")
        if kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                key = str(item.get("id") or f"#{len(order)}")
                if key not in items:
                    order.append(key)
                items[key] = {**items.get(key, {}), **item, "_completed": kind == "item.completed"}
        elif kind == "turn.completed":
            finished = True
            usage = usage + _usage(event.get("usage"))
        elif kind == "turn.failed":
            failed = True
            err = event.get("error")
            error = str(err.get("message") if isinstance(err, dict) else err or "no message")
        elif kind == "error":  # also sent for retries ("Reconnecting... 2/5"): only the last one counts
            last_error_event = str(event.get("message") or "")
    response = ""
    tool_calls: list[ToolCall] = []
    for key in order:
        item = items[key]
        if item.get("type") == "agent_message" and item["_completed"]:
            response = str(item.get("text") or "")
        elif (call := _tool_call(item)) is not None:
            tool_calls.append(call)
    run = Run(response=response, tool_calls=tool_calls, usage=usage, cost_usd=0.0)
    if failed:
        run.error = f"{_TURN_FAILED}{error} — {_hint(error)}"
    elif not finished:
        what = (
            f"last error: {last_error_event} — {_hint(last_error_event)}"
            if last_error_event
            else (f"{events} events, {skipped} unreadable lines")
        )
        run.error = (
            f"Codex output ended before the turn finished ({what}); rerun the task with `codex exec` "
            f"in its folder to see why"
        )
    return run


# --- installing the skill ---------------------------------------------------------------------


def codex_skill(skill: Skill) -> tuple[str, str]:
    """(name, SKILL.md text) as Codex will load it (see `agent_cli.skill_document`)."""
    name = skill_name(skill)
    return name, skill_document(skill, name)


def _skill_files(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.glob("*/SKILL.md") if p.is_file())
    except OSError:
        return []


def _named(path: Path, name: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    fm = Skill.parse(text).frontmatter
    return frontmatter_value(fm, "name") == name or (not fm and path.parent.name == name)


def _install_skill(work: Path, skill: Skill, mode: str) -> str:
    """Write the candidate into the working copy; returns the prompt prefix that invokes it.
    An empty skill (the no-skill baseline) installs nothing."""
    if not skill.body.strip():
        return ""
    if mode == "agents_md":
        (work / "AGENTS.override.md").unlink(missing_ok=True)
        (work / "AGENTS.md").write_text(skill.body.strip("\n") + "\n", encoding="utf-8")
        return ""
    name, text = codex_skill(skill)
    skills = work / ".agents" / "skills"
    for other in _skill_files(skills):  # a same-name skill in the project would make `$name` ambiguous
        if other.parent.name != name and _named(other, name):
            shutil.rmtree(other.parent)
    target = skills / name / "SKILL.md"
    if target.parent.is_symlink() or target.parent.is_file():
        target.parent.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return f"${name} "


# --- the temporary Codex home -----------------------------------------------------------------


def _toml(value: Any) -> str:
    """A value as inline TOML (for `-c key=value`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def _user_codex_home(env: Mapping[str, str]) -> Path | None:
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"])
    return Path(env["HOME"]) / ".codex" if env.get("HOME") else None


def _prepare_home(user: Path | None, home: Path, *, skill_name: str | None, link_auth: bool) -> None:
    """Fill the per-run Codex home from the user's (copies and links; nothing is written there)."""
    home.mkdir(parents=True)
    if user is None or not user.is_dir():
        return
    for name in ("config.toml", "AGENTS.md", "AGENTS.override.md"):
        if (user / name).is_file():
            shutil.copyfile(user / name, home / name)
    if (user / "rules").is_dir():
        shutil.copytree(user / "rules", home / "rules", symlinks=True)
    if link_auth and (user / "auth.json").exists():
        (home / "auth.json").symlink_to((user / "auth.json").resolve())
    if (user / "skills").is_dir():
        (home / "skills").mkdir()
        for entry in sorted((user / "skills").iterdir()):
            same = skill_name is not None and (entry.name == skill_name or _named(entry / "SKILL.md", skill_name))
            if entry.name != ".system" and entry.is_dir() and not same:
                (home / "skills" / entry.name).symlink_to(entry.resolve())


def _skills_config(user: Path | None, env: Mapping[str, str], name: str) -> list[dict[str, Any]] | None:
    """`skills.config` entries disabling every user/admin skill named `name` (merged with the
    user's own entries), or None when there is none to disable."""
    roots = [Path("/etc/codex/skills")]
    if env.get("HOME"):
        roots.insert(0, Path(env["HOME"]) / ".agents" / "skills")
    found = [p for root in roots for p in _skill_files(root) if _named(p, name)]
    if not found:
        return None
    entries: list[dict[str, Any]] = []
    if user is not None:
        try:
            parsed = tomllib.loads((user / "config.toml").read_text(encoding="utf-8"))
            own = parsed.get("skills", {}).get("config", [])
            entries = [e for e in own if isinstance(e, dict)] if isinstance(own, list) else []
        except (OSError, ValueError):
            entries = []  # no or unreadable config: Codex reports a broken one itself
    for path in found:
        for variant in dict.fromkeys([str(path), str(path.resolve())]):
            entries.append({"path": variant, "enabled": False})
    return entries


# --- the harness ------------------------------------------------------------------------------


class CodexHarness(CLIHarness):
    """Runs one task headless in `codex exec` with a candidate skill (see the module docstring).

    `env` is the base environment of the agent process (None → this process's); the user's Codex
    home is found in it. At most `settings.concurrency` runs go at once per harness."""

    name = "codex"
    cli = CODEX
    settings: CodexSettings

    def __init__(self, settings: CodexSettings | None = None, *, env: dict[str, str] | None = None) -> None:
        super().__init__(settings or CodexSettings(), env=env)

    async def replay(self, command: str, task: Task, skill: Skill, base: dict[str, str], timeout_s: float) -> Run:
        s = self.settings
        user = _user_codex_home(base)
        with workdir(task) as work, tempfile.TemporaryDirectory(prefix="skillsleep-codex-") as tmp:
            home, scratch = Path(tmp) / "home", Path(tmp) / "tmp"
            scratch.mkdir()
            skill_name = codex_skill(skill)[0] if s.skill_mode == "skill" and skill.body.strip() else None
            _prepare_home(user, home, skill_name=skill_name, link_auth=not s.base_url)
            prefix = _install_skill(work, skill, s.skill_mode)
            extra: list[str] = []
            if skill_name and (entries := _skills_config(user, base, skill_name)) is not None:
                extra += ["-c", f"skills.config={_toml(entries)}"]
            if s.lean:
                instructions = Path(tmp) / "instructions.md"
                instructions.write_text(s.lean_instructions, encoding="utf-8")
                extra += ["-c", f"model_instructions_file={_toml(str(instructions))}"]
            prompt = prefix + task_text(task)
            argv = self.argv(command, prompt, extra)
            env = {**base, "CODEX_HOME": str(home), "TMPDIR": str(scratch)}
            result = await run_cli(argv, cwd=work, env=env, timeout_s=timeout_s)
        return self._finish(result, timeout_s, skill_name)

    def argv(self, command: str, prompt: str, extra: list[str] | None = None) -> list[str]:
        """The command line of one run (`extra`: per-run `-c` options)."""
        s = self.settings
        argv = [command, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "-s", s.sandbox]
        for option in QUIET:
            argv += ["-c", option]
        if s.target_model:
            argv += ["-m", s.target_model]
        if s.base_url:
            provider: dict[str, Any] = {
                "name": PROVIDER,
                "base_url": s.base_url,
                "wire_api": "responses",
                "request_max_retries": s.retries,
                "stream_max_retries": s.retries,
            }
            if s.api_key_env:
                provider["env_key"] = s.api_key_env
            argv += ["-c", f"model_providers.{PROVIDER}={_toml(provider)}", "-c", f"model_provider={_toml(PROVIDER)}"]
        if s.lean:
            for feature in LEAN_FEATURES:
                argv += ["--disable", feature]
            argv += ["-c", 'web_search="disabled"']
        return [*argv, *(extra or []), *s.extra_args, "--", prompt]

    def _finish(self, result: CLIResult, timeout_s: float, skill_name: str | None) -> Run:
        run = parse_codex_output(result.stdout)
        run.latency_s = result.duration_s
        run.exit_status = result.returncode
        stderr = "\n".join(ln for ln in result.stderr.splitlines() if not ln.startswith(_STDERR_NOISE))
        where = f" at {self.settings.base_url}" if self.settings.base_url else ""
        if result.timed_out:
            run.error = (
                f"codex did not finish within {timeout_s:g}s and its process group was killed; raise "
                f"timeout_s, or check that the model server{where} answers"
            )
        elif skill_name and (
            m := re.search(rf"failed to load skill \S*/\.agents/skills/{skill_name}/SKILL\.md: (.+)", stderr)
        ):
            run.error = (
                f"Codex could not load the candidate skill ({m.group(1).strip()}); fix the skill's YAML frontmatter"
            )
        elif result.returncode != 0 and not (run.error or "").startswith(_TURN_FAILED):
            code = result.returncode
            how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
            stage = "after the turn finished" if run.error is None else "before the turn finished"
            run.error = (
                f"codex {how} {stage}: {tail(stderr) or 'nothing on stderr'}; rerun the task with "
                f"`codex exec` in its folder to see why, or reinstall: {CODEX.install_hint()}"
            )
        return run
