"""Replay one task with a candidate skill inside the real OpenClaw CLI (`openclaw agent exec`).

The skill is a workspace skill of the temporary working copy, invoked with `$name`; the run's state,
cache and a config that `$include`s the user's live in a temporary folder. docs/agents.md has every
flag and why.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Task, Usage
from skillsleep.harnesses.agent_cli import (
    PLACEHOLDER_KEY,
    CLIResult,
    HarnessStatus,
    agent_env,
    mentioned_task,
    skill_document,
    skill_name,
)
from skillsleep.harnesses.openclaw.cli import NAME, OPENCLAW, WORDS
from skillsleep.harnesses.openclaw.home import config_path, state_dir
from skillsleep.harnesses.openclaw.output import (
    envelope_of,
    last_assistant_text,
    node_problem,
    parse_openclaw_output,
    read_run_sessions,
    tool_calls_from_sessions,
)
from skillsleep.harnesses.openclaw.settings import OpenClawSettings
from skillsleep.harnesses.replay import CLIHarness, Invocation, Parsed

__all__ = ["OPENCLAW", "OpenClawHarness", "agent_deadline", "build_argv", "run_config"]

QUIET_ENV = {"OPENCLAW_NO_AUTO_UPDATE": "1", "DO_NOT_TRACK": "1"}
REPLAY_PROVIDER = "skillsleep"  # the provider the generated config adds for base_url
AGENT_DEADLINE_MARGIN_S = 20.0  # start-up + shutdown time between OpenClaw's deadline and the hard kill


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
    """Create the run's state dir, cache dir and config under `root` (docs/agents.md).
    Returns (state dir, config file, the user's config file or None). Only reads the user's files."""
    state, cache = root / "state", root / "cache"
    state.mkdir(parents=True)
    cache.mkdir()
    user_config = config_path(base)
    found = user_config.resolve() if user_config.is_file() else None
    config_file = root / "openclaw.json"
    config_file.write_text(json.dumps(run_config(found, settings), indent=2), encoding="utf-8")
    user_env = state_dir(base) / ".env"
    if user_env.is_file():
        (state / ".env").symlink_to(user_env.resolve())
    if settings.provider_retries is not None:
        agent_dir = state / "agents" / "main" / "agent"
        agent_dir.mkdir(parents=True)
        retry = {"retry": {"provider": {"maxRetries": settings.provider_retries}}}
        (agent_dir / "settings.json").write_text(json.dumps(retry), encoding="utf-8")
    return state, config_file, found


def task_prompt(task: Task, name: str | None) -> str:
    """The prompt one replay sends: `$<skill name> ` (when a skill is installed and the prompt does
    not start with that mention already), the task's context, a blank line, then its prompt."""
    return mentioned_task(task, name)


def install_skill(cwd: Path, skill: Skill) -> str | None:
    """Write the skill to `<cwd>/skills/<name>/SKILL.md`; its name, or None for an empty skill."""
    if not skill.body.strip():
        return None
    name = skill_name(skill)
    folder = cwd / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_document(skill, name), encoding="utf-8")
    return name


def agent_deadline(timeout_s: float) -> int:
    """OpenClaw's own `--timeout` for a run killed at `timeout_s` (docs/agents.md)."""
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
    """The `openclaw` command line of one replay (docs/agents.md: every flag and why)."""
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
    """Runs one task headless in OpenClaw with a given skill (docs/agents.md).

    `env` is the base environment of the agent process (None → this process's); it also says
    where the user's OpenClaw config and state are. At most `settings.concurrency` runs of one
    harness instance go at once."""

    name = NAME
    cli = OPENCLAW
    words = WORDS
    settings: OpenClawSettings

    def __init__(self, settings: OpenClawSettings, *, env: dict[str, str] | None = None) -> None:
        super().__init__(settings, env=env)
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

    def problem(self) -> str | None:
        s = self.settings
        if s.base_url and not s.target_model:
            return (
                f"openclaw harness: `base_url` is set ({s.base_url}) but `target_model` is empty; set "
                f"`target_model` (`--target-model` on the command line) to the model name that server serves."
            )
        return None

    def prepare(
        self, command: str, task: Task, skill: Skill, base: dict[str, str], *, cwd: Path, tmp: Path, timeout_s: float
    ) -> Invocation:
        s = self.settings
        state, config, user_config = prepare_run_state(tmp, base, s)
        name = install_skill(cwd, skill)
        prompt_file = tmp / "prompt.md"
        prompt_file.write_text(task_prompt(task, name), encoding="utf-8")
        argv = build_argv(command, s, prompt_file=prompt_file, cwd=cwd, state=state, config=config, timeout_s=timeout_s)
        return Invocation(argv=argv, env=self._env(base, tmp, state, user_config), state=state, skill=name)

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

    def parse(self, result: CLIResult, call: Invocation) -> Parsed:
        """The envelope, completed from the transcript the run wrote: every tool call with its
        arguments and result, the usage and the answer when the envelope lacks them."""
        envelope = envelope_of(result.stdout)
        run = parse_openclaw_output(result.stdout, server=self.server())
        session_id = envelope.get("sessionId") if envelope else None
        sessions = read_run_sessions(call.state, session_id if isinstance(session_id, str) else None)
        update: dict[str, Any] = {}
        if sessions:
            calls = tool_calls_from_sessions(sessions)
            if calls or not run.tool_calls:
                update["tool_calls"] = calls
            if run.usage.total == 0:
                update["usage"] = sum((s.usage for s in sessions), Usage())
            if not run.response and run.error is None:
                update["response"] = last_assistant_text(sessions)
        return Parsed(run=run.model_copy(update=update), complete=envelope is not None)

    def special(self, result: CLIResult, parsed: Parsed, call: Invocation) -> str | None:
        """A Node.js too old for OpenClaw, whatever else the run reported."""
        problem = node_problem(f"{result.stderr}\n{result.stdout}")
        return problem if problem and parsed.run.error is not None else None
