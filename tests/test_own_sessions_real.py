"""skillsleep never learns from itself, with the real agent CLIs (slow): in the worst case — a user
whose agent persists every session (tests/own_kit.py: a wrapper that drops `--no-session-persistence`
/ `--ephemeral` / the throwaway `--state-dir` and points the agent at the user's home) — a replay
through the real harness and a call of the agent as the night's model land in the user's transcripts;
`skillsleep harvest` over that home, into real SQLite, stores none of them and says so, while the
user's own sessions in the same home are stored (and a session that mixes `/sleep` with real work
keeps the work)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from agent_server import AgentServer
from own_kit import (
    SLEEP_SKILL,
    codex_user_config,
    cwds,
    harvest_json,
    model_call_argv,
    stub_settings,
    user_env,
    user_run,
    wrapper,
)

from skillsleep.core.document.skill import Skill
from skillsleep.core.harvest.own import in_run_folder
from skillsleep.core.mine.intents import extract_instances
from skillsleep.core.models.store import Store
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.shared.records import Task
from skillsleep.core.shared.session import Session
from skillsleep.harnesses import registry
from skillsleep.harnesses.run_folder import run_folder
from skillsleep.slash_commands.harvester import HarvestResult, left_out_lines

if TYPE_CHECKING:
    from conftest import AgentTools

pytestmark = pytest.mark.slow


def _replay(agent: str, command: Path, server: AgentServer, home: Path, path_env: str) -> None:
    """One replay through the agent's real harness (its run folder, its argv), persisting via `command`."""
    harness = registry.get(agent).harness(
        stub_settings(agent, server, str(command)), env=user_env(path_env, home, server)
    )
    run = asyncio.run(
        harness.run(Task(id="t", prompt="STUB_TOOL: echo from-replay"), Skill("Be brief.\n"), timeout_s=180)
    )
    assert run.error is None, run.error
    assert run.response.startswith("hello | tool said: "), run.response  # OpenClaw reads the skill first


def _stored(data: Path, agent: str) -> list[Session]:
    store = Store(data / "state.db")
    try:
        return list(store.sessions(agent))
    finally:
        store.close()


def _check(report: dict[str, object], data: Path, agent: str, own: int, user: list[list[str]]) -> list[Session]:
    """The harvest stored only the user's sessions (their prompts, in any order) and said why the rest were left out."""
    assert report["own_sessions"] == own, report
    assert report["sessions"] == {**dict.fromkeys(registry.agent_names(), 0), agent: len(user)}, report
    stored = _stored(data, agent)
    assert sorted(s.prompts() for s in stored) == sorted(user)
    assert not any(in_run_folder(s.project) for s in stored)
    assert f"skillsleep's own: {own} session(s) not stored" in "\n".join(
        left_out_lines(HarvestResult.model_validate(report))
    )
    return stored


def test_claude_code(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, real = tmp_path / "home", agent_tools.bin / "claude"
    command = wrapper(tmp_path / "claude", "claude-code", real, home)
    env = user_env(agent_tools.path_env(), home, agent_server)
    _replay("claude-code", command, agent_server, home, agent_tools.path_env())
    with run_folder() as folder:  # the agent as the night's model
        user_run(model_call_argv("claude-code", str(command), agent_server, "merge these edits"), env, folder.work)
    landed = sorted(p.parent.name for p in (home / ".claude" / "projects").rglob("*.jsonl"))
    assert sum("skillsleep-run-" in name for name in landed) == 2, landed  # both were persisted: the worst case

    skill = home / ".claude" / "skills" / "sleep" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SLEEP_SKILL)
    project = home / "project"
    user_run([str(real), "-p", "/sleep status"], env, project)  # nothing but a verb
    first = json.loads(user_run([str(real), "-p", "--output-format", "json", "/sleep diff"], env, project).stdout)
    user_run([str(real), "-p", "--resume", first["session_id"], "say hello"], env, project)  # a verb, then work
    user_run([str(real), "-p", "fix the login bug"], env, project)

    report = harvest_json(monkeypatch, home, tmp_path / "data")
    stored = _check(report, tmp_path / "data", "claude-code", 3, [["fix the login bug"], ["say hello"]])
    mixed = next(s for s in stored if s.prompts() == ["say hello"])
    assert [t.text for t in mixed.turns if t.kind == "command"] == ["/sleep diff"]  # kept whole
    assert sorted(i.prompt for i in extract_instances(stored)[0]) == ["fix the login bug", "say hello"]


def test_codex(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, real = tmp_path / "home", agent_tools.bin / "codex"
    command = wrapper(tmp_path / "codex", "codex", real, home)
    codex_user_config(home, agent_server)
    (home / ".tmp").mkdir()
    env = user_env(agent_tools.path_env(), home, agent_server, TMPDIR=str(home / ".tmp"))
    _replay("codex", command, agent_server, home, agent_tools.path_env())
    with run_folder() as folder:
        user_run(model_call_argv("codex", str(command), agent_server, "merge these edits"), env, folder.work)
    rollouts = list((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 2 and all("skillsleep-run-" in p.read_text() for p in rollouts)  # the worst case

    project = home / "project"
    base = [str(real), "exec", "--json", "--skip-git-repo-check"]
    user_run([*base, "$sleep status"], env, project)
    user_run([*base, "fix the login bug"], env, project)

    report = harvest_json(monkeypatch, home, tmp_path / "data")
    _check(report, tmp_path / "data", "codex", 3, [["fix the login bug"]])


def test_openclaw(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, real = tmp_path / "home", agent_tools.bin / "openclaw"
    command = wrapper(tmp_path / "openclaw", "openclaw", real, home)
    state = home / ".openclaw"
    provider = {"baseUrl": f"{agent_server.url}/v1", "apiKey": "dummy", "api": "openai-completions",
                "models": [{"id": "stub-model", "name": "stub-model"}]}  # fmt: skip
    config = {"update": {"checkOnStart": False}, "models": {"providers": {"local": provider}},
              "agents": {"defaults": {"model": {"primary": "local/stub-model"}}}}  # fmt: skip
    (state / "openclaw.json").write_text(json.dumps(config))
    env = user_env(agent_tools.path_env(), home, agent_server)
    _replay("openclaw", command, agent_server, home, agent_tools.path_env())
    project = home / "project"
    argv = [str(real), "agent", "exec", "fix the login bug", "--json", "--timeout", "60"]
    user_run([*argv, "--cwd", str(project), "--state-dir", str(state)], env, project)
    assert list(state.rglob("openclaw-agent.sqlite")), "the replay and the user's run wrote to the user's store"

    report = harvest_json(monkeypatch, home, tmp_path / "data")
    _check(report, tmp_path / "data", "openclaw", 1, [["fix the login bug"]])


def test_a_night_replaying_in_claude_code_adds_nothing_to_the_next_nights_tasks(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole night with Claude Code as the replay harness, persisting every replay into the user's
    home (the worst case): the next harvest stores none of them, and the next night mines the same
    tasks from the same sessions. (The agent as the night's model is the same run folder: test_claude_code.)"""
    from sleep_kit import run_night, scripted_night

    data = scripted_night(monkeypatch, tmp_path) / "data"
    home = tmp_path / "home"
    command = wrapper(tmp_path / "claude", "claude-code", agent_tools.bin / "claude", home)
    monkeypatch.setenv("PATH", agent_tools.path_env())
    data.mkdir()
    (data / "config.toml").write_text(
        f'[harness.claude-code]\ncommand = "{command}"\nbase_url = "{agent_server.url}"\n'
        'target_model = "stub-model"\nmax_retries = 0\n'
    )
    first = run_night(tmp_path, "--harness", "claude-code", "--steps", "1")
    replays = [cwd for cwd in cwds(command) if in_run_folder(cwd)]
    persisted = list((home / ".claude" / "projects").rglob("*.jsonl"))
    context = {k: first[k] for k in ("outcome", "reason", "stop", "problems", "sessions", "recurring_tasks", "tasks")}
    assert first["harness"] == "claude-code" and replays and len(persisted) == len(replays), context

    report = harvest_json(monkeypatch, home, data)
    assert report["own_sessions"] == len(persisted) and report["sessions"]["claude-code"] == 0
    second = run_night(tmp_path, "--harness", "claude-code", "--steps", "1")
    assert second["harvest"]["sessions"]["claude-code"] == 0
    assert _stored(data, "claude-code") == []
    assert (second["sessions"], second["recurring_tasks"]) == (first["sessions"], first["recurring_tasks"])
    plans = [NightPlan.model_validate_json((data / "nights" / n / "plan.json").read_text()) for n in ("0001", "0002")]
    mined = [sorted(t.id for split in plan.tasks().values() for t in split) for plan in plans]
    assert mined[0] and mined[1] == mined[0]  # the same tasks: nothing of the first night's replays was mined
