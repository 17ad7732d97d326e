"""Replay one task with a candidate skill inside the real Claude Code CLI (`claude -p`).

The skill's body is appended to Claude Code's system prompt (`--append-system-prompt-file`), in
a temporary config dir seeded from the user's; a task that invokes the skill by name (`/name …`,
as recorded) finds it there as a user skill instead. docs/agents.md has every flag and why.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Task
from skillsleep.harnesses.agent_cli import (
    PLACEHOLDER_KEY,
    CLIResult,
    agent_env,
    skill_document,
    skill_name,
    task_text,
)
from skillsleep.harnesses.claude_code.cli import CLAUDE, NAME, WORDS
from skillsleep.harnesses.claude_code.home import config_dir, global_config
from skillsleep.harnesses.claude_code.output import read_output, to_run
from skillsleep.harnesses.claude_code.settings import ClaudeCodeSettings
from skillsleep.harnesses.replay import CLIHarness, Invocation, Parsed

__all__ = ["CLAUDE", "PLACEHOLDER_KEY", "ClaudeCodeHarness", "prepare_config_dir"]

QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
_LOGIN_KEYS = ("oauthAccount", "primaryApiKey", "customApiKeyResponses")
_PROVIDER_ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_USE_")


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def prepare_config_dir(user_dir: Path, user_global: Path, dest: Path, *, own_provider: bool) -> Path:
    """Create `dest` as a throwaway Claude Code config dir seeded from the user's (docs/agents.md):
    credentials symlinked, settings copied without hooks, login keys of the global config copied.
    With `own_provider` (a `base_url` run) no user credential is carried over. Only reads the
    user's files; returns `dest`."""
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
        stored = _read_json(user_global)
        login = {k: stored[k] for k in _LOGIN_KEYS if stored and k in stored}
        if login:
            (dest / ".claude.json").write_text(json.dumps(login, indent=2), encoding="utf-8")
    return dest


def invoked_skill(config: Path, skill: Skill, prompt: str) -> bool:
    """When `prompt` invokes the skill by its name (`/name …`, a task recorded so), write it to the
    config dir's `skills/<name>/SKILL.md`, where Claude Code resolves that command (a user skill
    wins over a project's of the same name); True when it did."""
    name = skill_name(skill)
    if not skill.body.strip() or not re.match(rf"/{re.escape(name)}(?![\w:-])", prompt):
        return False
    folder = config / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_document(skill, name), encoding="utf-8")
    return True


def build_argv(command: str, settings: ClaudeCodeSettings, prompt: str, skill_file: Path | None) -> list[str]:
    """The `claude` command line of one replay (docs/agents.md: every flag and why)."""
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
    """Runs one task headless in Claude Code with a given skill (docs/agents.md).

    `env` is the base environment of the agent process (None → this process's). At most
    `settings.concurrency` runs of one harness instance go at once."""

    name = NAME
    cli = CLAUDE
    words = WORDS
    settings: ClaudeCodeSettings

    def server(self) -> str:
        return anthropic_base_url(self.settings.base_url) if self.settings.base_url else ""

    def prepare(
        self, command: str, task: Task, skill: Skill, base: dict[str, str], *, cwd: Path, tmp: Path, timeout_s: float
    ) -> Invocation:
        s = self.settings
        key = base[s.api_key_env] if s.base_url and s.api_key_env else PLACEHOLDER_KEY  # set: run() checked
        config = prepare_config_dir(
            config_dir(base), global_config(base), tmp / "config", own_provider=bool(s.base_url)
        )
        body, prompt = skill.body.strip(), task_text(task)
        skill_file = None
        if body and not invoked_skill(config, skill, prompt):
            skill_file = tmp / "skill.md"
            skill_file.write_text(body + "\n", encoding="utf-8")
        argv = build_argv(command, s, prompt, skill_file)
        return Invocation(argv=argv, env=self._env(base, config, key), state=config)

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

    def parse(self, result: CLIResult, call: Invocation) -> Parsed:
        out = read_output(result.stdout)
        return Parsed(run=to_run(out, self.server()), complete=out.result is not None)
