"""The worst case for "skillsleep never learns from itself": a user whose agent persists every session.

The replay harnesses and the agent-as-model calls switch persistence off (`--no-session-persistence`,
`--ephemeral`, OpenClaw's throwaway `--state-dir`). A user's wrapper can undo that; `wrapper()`
writes one, used as the harness's `command`: it runs the real CLI with the switch removed and the
agent's state pointed back at the user's home, and logs every working folder it was started in.
What lands there is what harvest must recognise and refuse.

    wrapper(path, agent, real, home)   the persisting wrapper script (logs cwds to <path>.cwds)
    stub_settings(agent, server, cmd)  the replay harness settings for the scripted server
    model_call_argv(agent, …)          the command line of the agent as the night's model
                                       (the argv shape of harnesses/<agent>/model.py)
    user_env / user_run                the user's own session, persisted as the agent always does
    SLEEP_SKILL                        the `sleep` skill a user installs (`/sleep …` in Claude Code)
    harvest_json(monkeypatch, home, data)  `skillsleep harvest --json` over that home, into real SQLite
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_server import AgentServer
from click.testing import CliRunner

from skillsleep.harnesses.agent_cli import AgentSettings
from skillsleep.harnesses.claude_code.settings import ClaudeCodeSettings
from skillsleep.harnesses.codex.settings import CodexSettings
from skillsleep.harnesses.openclaw.settings import OpenClawSettings

SLEEP_SKILL = "---\nname: sleep\ndescription: skillsleep's verbs.\n---\n\nRun `skillsleep $ARGUMENTS`.\n"
# the one switch each agent's replay uses to write no transcript, and where its state would go
_SWITCH = {
    "claude-code": ('[ "$a" = --no-session-persistence ] && continue', 'CLAUDE_CONFIG_DIR="{home}/.claude"'),
    "codex": ('[ "$a" = --ephemeral ] && continue', 'CODEX_HOME="{home}/.codex"'),
    "openclaw": (
        '[ "$skip" = 1 ] && { skip=0; set -- "$@" "{home}/.openclaw"; continue; }; [ "$a" = --state-dir ] && skip=1',
        'OPENCLAW_STATE_DIR="{home}/.openclaw"',
    ),
}


def wrapper(path: Path, agent: str, real: Path, home: Path) -> Path:
    """A script that runs `real` as `agent` persisting into `home` (see the module docstring)."""
    test, state = (part.replace("{home}", str(home)) for part in _SWITCH[agent])
    path.write_text(
        f"""#!/bin/sh
[ "$1" = --version ] && exec "{real}" "$@"
pwd >> "{path}.cwds"
skip=0
for a in "$@"; do shift; {test}; set -- "$@" "$a"; done
export {state}
exec "{real}" "$@"
""",
        encoding="utf-8",
    )
    path.chmod(0o755)
    (home / {"claude-code": ".claude", "codex": ".codex", "openclaw": ".openclaw"}[agent]).mkdir(
        parents=True, exist_ok=True
    )
    return path


def cwds(wrapper_path: Path) -> list[str]:
    """The working folders the wrapper was started in."""
    log = Path(f"{wrapper_path}.cwds")
    return log.read_text(encoding="utf-8").split() if log.is_file() else []


def stub_settings(agent: str, server: AgentServer, command: str) -> AgentSettings:
    """Replay settings that point `agent` at the scripted server through `command`."""
    if agent == "claude-code":
        return ClaudeCodeSettings(command=command, base_url=server.url, target_model="stub-model", max_retries=0)
    if agent == "codex":
        return CodexSettings(command=command, base_url=f"{server.url}/v1", target_model="stub-model", retries=0)
    return OpenClawSettings(command=command, base_url=f"{server.url}/v1", target_model="stub-model")


def model_call_argv(agent: str, command: str, server: AgentServer, prompt: str) -> list[str]:
    """The agent as the night's model: the argv shape of `claude -p` / `codex exec` providers."""
    if agent == "claude-code":
        return [
            command, "-p", "--output-format", "json", "--no-session-persistence", "--model", "stub-model",
            "--system-prompt", "You are skillsleep's optimizer.", "--tools", "", "--", prompt,
        ]  # fmt: skip
    provider = f'{{name="stub", base_url="{server.url}/v1", wire_api="responses", request_max_retries=0}}'
    return [
        command, "exec", "--json", "--ephemeral", "--skip-git-repo-check", "-s", "read-only",
        "-c", f"model_providers.stub={provider}", "-c", 'model_provider="stub"', "-m", "stub-model",
        "--", prompt,
    ]  # fmt: skip


def user_env(path_env: str, home: Path, server: AgentServer, **extra: str) -> dict[str, str]:
    """The environment of the user's own agent runs (and of the model calls), in `home`."""
    return {
        "PATH": path_env,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "DO_NOT_TRACK": "1",
        **extra,
    }


def user_run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """One agent process as the user starts it; fails the test when it fails."""
    cwd.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{argv[:3]} failed ({proc.returncode}):\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}"
    return proc


def codex_user_config(home: Path, server: AgentServer) -> None:
    """The user's own Codex, configured for the scripted server (as the user's config.toml would)."""
    codex = home / ".codex"
    codex.mkdir(parents=True, exist_ok=True)
    (codex / "config.toml").write_text(
        'model = "stub-model"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.stub]\nname = "stub"\nbase_url = "{server.url}/v1"\nwire_api = "responses"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n",
        encoding="utf-8",
    )


def harvest_json(monkeypatch: pytest.MonkeyPatch, home: Path, data: Path, *extra: str) -> dict[str, Any]:
    """`skillsleep harvest --json` over `home`, into the state database under `data`."""
    from skillsleep.slash_commands.cli import main

    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(data))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR", "SKILLSLEEP_CHAT_DIRS"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, ["harvest", "--json", *extra])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))
