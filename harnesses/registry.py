"""Harnesses by name: which agents skillsleep can replay tasks in, their settings and status.

    chat         the skill as system prompt, one completion through any backend of the engine
    claude-code  `claude -p` (harnesses/claude_code_replay.py)
    codex        `codex exec` (harnesses/codex_replay.py)
    openclaw     `openclaw agent exec` (harnesses/openclaw_replay.py)

Settings for a CLI harness are a plain mapping (from a config file section) validated against
that harness's settings model, so an unknown or mistyped key is an error, never ignored.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillsleep.core.errors import ConfigError, UnknownNameError
from skillsleep.core.harness import Harness
from skillsleep.core.llm import LLM
from skillsleep.harnesses.agent_cli import AgentSettings, HarnessStatus

# name → (module, harness class, settings class)
CLI_HARNESSES: dict[str, tuple[str, str, str]] = {
    "claude-code": ("skillsleep.harnesses.claude_code.replay", "ClaudeCodeHarness", "ClaudeCodeSettings"),
    "codex": ("skillsleep.harnesses.codex.replay", "CodexHarness", "CodexSettings"),
    "openclaw": ("skillsleep.harnesses.openclaw.replay", "OpenClawHarness", "OpenClawSettings"),
}
NAMES = ("chat", *CLI_HARNESSES)


def _load(name: str) -> tuple[type[Any], type[AgentSettings]]:
    module_name, harness_cls, settings_cls = CLI_HARNESSES[name]
    module = importlib.import_module(module_name)
    return getattr(module, harness_cls), getattr(module, settings_cls)


def check_name(name: str) -> str:
    """`name` if it is a known harness, else an error listing the known ones."""
    if name not in NAMES:
        raise UnknownNameError("harness", name, list(NAMES))
    return name


def settings_for(name: str, raw: Mapping[str, Any] | None, *, where: str = "") -> AgentSettings:
    """Validate a CLI harness's settings mapping; errors name the section and the key."""
    _, settings_cls = _load(check_name(name))
    try:
        return settings_cls.model_validate(dict(raw or {}))
    except ValidationError as exc:
        section = where or f"[harness.{name}]"
        problems = "; ".join(_problem(e, list(settings_cls.model_fields)) for e in exc.errors())
        known = ", ".join(settings_cls.model_fields)
        raise ConfigError(f"{section}: {problems} (known keys: {known})") from None


def _problem(error: Any, known: list[str]) -> str:
    """One pydantic error of a harness table in words; an unknown key names the closest known one."""
    key = ".".join(map(str, error["loc"])) or "(section)"
    if error["type"] != "extra_forbidden":
        return f"{key}: {error['msg']}"
    close = difflib.get_close_matches(key, known, n=1)
    return f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def create_harness(
    name: str,
    *,
    llm: LLM | None = None,
    settings: Mapping[str, Any] | AgentSettings | None = None,
    env: dict[str, str] | None = None,
    chat_log_dir: Path | None = None,
) -> Harness:
    """A harness by name. `chat` needs the target `llm`; CLI harnesses take `settings` and the
    base environment for the agent process (`env`, None → this process's)."""
    check_name(name)
    if name == "chat":
        from skillsleep.harnesses.chat import ChatHarness

        if llm is None:
            raise ConfigError("the chat harness needs a target model: set [target] backend in the config")
        if settings:
            raise ConfigError("the chat harness takes no [harness.chat] settings; configure the model in [target]")
        return ChatHarness(llm, log_dir=chat_log_dir)
    harness_cls, _ = _load(name)
    parsed = settings if isinstance(settings, AgentSettings) else settings_for(name, settings)
    return harness_cls(parsed, env=env)


def statuses(
    settings: Mapping[str, Mapping[str, Any]] | None = None, env: dict[str, str] | None = None
) -> list[HarnessStatus]:
    """Every harness: whether its agent is installed, its version, whether it is usable and why not."""
    try:
        own = version("skillsleep")
    except PackageNotFoundError:
        own = None
    out = [
        HarnessStatus(
            name="chat",
            installed=True,
            version=own,
            usable=True,
            reason="runs through the engine's backends; no agent CLI needed",
        )
    ]
    for name in CLI_HARNESSES:
        harness = create_harness(name, settings=(settings or {}).get(name), env=env)
        out.append(harness.status())  # type: ignore[attr-defined]
    return out
