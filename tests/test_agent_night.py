"""A whole night with the user's agent as both the model and the replay harness (slow, real CLIs):
`skillsleep run --harness A --backend A` over recorded sessions, every model call and replay going
through the pinned `claude` / `codex` to the scripted agent server, which answers each role as the
scripted backend would (the same rules). The night ends in a staged proposal; and in the worst case
(a wrapper on PATH that makes the agent persist every session into the user's home, tests/own_kit.py)
the next harvest stores none of the sessions the night created and the next night mines the same tasks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agent_server import AgentServer
from own_kit import cwds, harvest_json, wrapper
from sleep_kit import TARGET_RULES, invoke, night_env, optimizer_rules, write_chat_logs

from skillsleep.core.harvest.own import in_run_folder
from skillsleep.core.night.stages import NightPlan

if TYPE_CHECKING:
    from conftest import AgentTools

pytestmark = pytest.mark.slow

CLI = {"claude-code": "claude", "codex": "codex"}


def _night(agent: str, url: str) -> dict[str, Any]:
    code, out, err = invoke(
        "run", "--harness", agent, "--backend", f"{agent}:stub-model", "--base-url", url,
        "--since", "3650d", "--steps", "1", "--json",
    )  # fmt: skip
    assert code == 0, err[-3000:]
    return dict(json.loads(out))


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_night_with_the_agent_as_model_and_harness_stages_a_proposal_and_mines_none_of_its_own_sessions(
    agent: str, agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = night_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    write_chat_logs(tmp_path / "chats")
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    bin_dir.mkdir()
    command = wrapper(bin_dir / CLI[agent], agent, agent_tools.bin / CLI[agent], home)  # persists into home
    monkeypatch.setenv("PATH", f"{bin_dir}:{agent_tools.path_env()}")
    url = agent_server.url + ("/v1" if agent == "codex" else "")
    agent_server.rules = [(re.compile(r["match"]), r["reply"]) for r in optimizer_rules() + TARGET_RULES]
    data.mkdir()
    retries = "max_retries" if agent == "claude-code" else "retries"
    (data / "config.toml").write_text(
        f'[harness.{agent}]\nbase_url = "{url}"\ntarget_model = "stub-model"\n{retries} = 0\n'
    )

    first = _night(agent, url)
    context = {k: first[k] for k in ("outcome", "reason", "stop", "problems", "calls_by_role", "tasks")}
    assert first["harness"] == agent and first["outcome"] == "accepted" and first["proposal"], context
    roles = first["calls_by_role"]  # the agent answered the optimizer's roles, every call usable
    assert {"mine", "reflect", "slow_update"} <= set(roles) and not any(r["errors"] for r in roles.values()), context
    started = cwds(command)
    assert started and all(in_run_folder(cwd) for cwd in started)  # every model call and replay in a run folder
    folder = home / (".claude/projects" if agent == "claude-code" else ".codex/sessions")
    persisted = list(folder.rglob("*.jsonl"))
    assert persisted  # the worst case: the agent wrote its sessions into the home

    report = harvest_json(monkeypatch, home, data)
    assert report["own_sessions"] == len(persisted) and report["sessions"].get(agent, 0) == 0
    night_env(monkeypatch, tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}:{agent_tools.path_env()}")
    second = _night(agent, url)
    assert second["harvest"]["sessions"].get(agent, 0) == 0
    assert (second["sessions"], second["recurring_tasks"]) == (first["sessions"], first["recurring_tasks"])
    plans = [NightPlan.model_validate_json((data / "nights" / n / "plan.json").read_text()) for n in ("0001", "0002")]
    mined = [sorted(t.id for split in plan.tasks().values() for t in split) for plan in plans]
    assert mined[0] and mined[1] == mined[0]  # nothing the first night's calls and replays left was mined


def test_after_install_a_night_with_nothing_configured_uses_the_agent_as_harness_and_model(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`skillsleep install claude-code`, then a bare `skillsleep run`: Claude Code replays and answers
    every model call, under the default token cap. (Its own login here is an API key and a server in
    the environment, as `claude` itself reads them: no skillsleep setting names the agent.)"""
    data = night_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    write_chat_logs(tmp_path / "chats")
    monkeypatch.setenv("PATH", agent_tools.path_env())
    monkeypatch.setenv("ANTHROPIC_BASE_URL", agent_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    agent_server.rules = [(re.compile(r["match"]), r["reply"]) for r in optimizer_rules() + TARGET_RULES]
    code, out, err = invoke("install", "claude-code")
    assert code == 0, err + out

    code, out, err = invoke("run", "--since", "3650d", "--steps", "1", "--json")
    assert code == 0, err[-3000:]
    night = json.loads(out)
    assert night["harness"] == "claude-code" and night["outcome"] == "accepted" and night["proposal"], night["reason"]
    assert "reflect" in night["calls_by_role"] and night["tokens"] > 0
    ledger = [json.loads(line) for line in (data / "nights" / "0001" / "ledger.jsonl").read_text().splitlines()]
    assert ledger and {e["provider"] for e in ledger} == {"claude-code"}  # every model call went to the agent
    code, out, err = invoke("config", "--json")
    assert code == 0, err
    next_night = json.loads(out)["next_night"]
    assert (next_night["harness"], next_night["backend"], next_night["budget_tokens"]) == (
        "claude-code",
        "claude-code",
        1_000_000,
    )
    assert next_night["backend_from"].endswith("(installed " + ledger[0]["ts"][:10] + "; the only agent installed)")


def test_a_token_budget_stops_a_night_on_the_agent_model_cleanly_and_the_next_run_finishes(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscription's quota is real money: a night whose agent-model calls reach `--budget-tokens`
    stops before the call that would pass it (exit 1, the report says why, nothing staged), and the
    next run with more budget ends in a proposal. (Stopped while mining, before its plan was written,
    the night is begun again rather than resumed; its replies come from the response cache.)"""
    data = night_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    write_chat_logs(tmp_path / "chats")
    monkeypatch.setenv("PATH", agent_tools.path_env())
    agent_server.rules = [(re.compile(r["match"]), r["reply"]) for r in optimizer_rules() + TARGET_RULES]
    data.mkdir()
    (data / "config.toml").write_text(
        f'[harness.claude-code]\nbase_url = "{agent_server.url}"\ntarget_model = "stub-model"\nmax_retries = 0\n'
    )
    flags = ["run", "--harness", "claude-code", "--backend", "claude-code:stub-model", "--base-url", agent_server.url]
    flags += ["--since", "3650d", "--steps", "1", "--json"]
    code, out, err = invoke(*flags, "--budget-tokens", "6500")
    assert code == 1, err[-3000:]
    stopped = json.loads(out)
    assert stopped["outcome"] == "stopped-early" and stopped["stop"]["kind"] == "budget", stopped["reason"]
    assert not stopped["proposal"] and 0 < stopped["tokens"] <= 6500
    code, out, err = invoke(*flags, "--budget-tokens", "100000")
    assert code == 0, err[-3000:]
    resumed = json.loads(out)
    assert resumed["cache_hits"] > 0  # what the stopped run was answered is not paid for again
    assert resumed["outcome"] == "accepted" and resumed["proposal"], resumed["reason"]
