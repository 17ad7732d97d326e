"""`skillsleep eval --harness …`: a skill scored inside a real agent CLI (Codex, the fastest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_server import AgentServer
from click.testing import CliRunner
from conftest import AgentTools

from skillsleep.harnesses import agent_cli
from skillsleep.slash_commands.cli import main


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    skill = tmp_path / "SKILL.md"
    skill.write_text("---\nname: answer\ndescription: how to answer\n---\nSKILL_SAYS: mango\n")
    empty = tmp_path / "EMPTY.md"
    empty.write_text("")
    tasks = tmp_path / "tasks.jsonl"
    check = {"checks": [{"type": "contains", "value": "mango", "feedback": "say mango"}]}
    tasks.write_text(
        "".join(json.dumps({"id": f"t{i}", "prompt": f"question {i}", "judge": check}) + "\n" for i in range(2))
    )
    return skill, empty, tasks


def test_target_flags_belong_to_their_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    skill, _, tasks = _files(tmp_path)
    r = CliRunner().invoke(
        main,
        [
            "eval",
            "--skill",
            str(skill),
            "--tasks",
            str(tasks),
            "--harness",
            "codex",
            "--target",
            "local:qwen2.5-coder-0.5b",
        ],
    )
    assert r.exit_code == 2 and "--target-model" in r.output
    r = CliRunner().invoke(main, ["eval", "--skill", str(skill), "--tasks", str(tasks), "--target-model", "m"])
    assert r.exit_code == 2 and "chat harness" in r.output
    r = CliRunner().invoke(main, ["eval", "--skill", str(skill), "--tasks", str(tasks), "--harness", "cursor"])
    assert r.exit_code == 2 and "unknown harness" in r.output


def test_missing_agent_is_a_usage_error_naming_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent_cli._STATUS_CACHE.clear()
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    skill, _, tasks = _files(tmp_path)
    r = CliRunner().invoke(main, ["eval", "--skill", str(skill), "--tasks", str(tasks), "--harness", "codex"])
    assert r.exit_code == 2 and "npm install -g @openai/codex@" in r.output


@pytest.mark.slow
def test_eval_in_real_codex_scores_the_skill_not_the_baseline(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(
        'model = "stub-model"\nmodel_provider = "local"\n[model_providers.local]\nname = "local"\n'
        f'base_url = "{agent_server.url}/v1"\nwire_api = "responses"\nenv_key = "STUB_KEY"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("STUB_KEY", "dummy")
    monkeypatch.setenv("PATH", agent_tools.path_env())
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "ss"))
    skill, empty, tasks = _files(tmp_path)
    scores = {}
    for name, path in (("skill", skill), ("baseline", empty)):
        r = CliRunner().invoke(
            main, ["eval", "--skill", str(path), "--tasks", str(tasks), "--harness", "codex", "--json"]
        )
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)
        assert out["harness"] == "codex" and out["n"] == 2
        assert all(t["error"] is None for t in out["per_task"]), out
        scores[name] = out["score"]
    assert scores == {"skill": 1.0, "baseline": 0.0}
    sent = agent_server.requests_text()
    assert "question 0" in sent and "question 1" in sent and "SKILL_SAYS: mango" in sent


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["codex", "claude-code"])
def test_compare_in_a_real_agent_scores_both_skills_there(
    agent: str, agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`skillsleep compare EMPTY SKILL --harness A`: both skills run inside the real agent on the same
    tasks; the skill the agent follows wins every task (2 tasks: too few for "B is better")."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PATH", agent_tools.path_env())
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "ss"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    skill, empty, tasks = _files(tmp_path)
    url = agent_server.url + ("/v1" if agent == "codex" else "")
    argv = ["compare", str(empty), str(skill), "--tasks", str(tasks), "--harness", agent, "--base-url", url]
    r = CliRunner().invoke(main, [*argv, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    c = out["comparison"]
    assert (c["a_mean"], c["b_mean"], c["wins"], c["n_tasks"]) == (0.0, 1.0, 2, 2), c
    assert c["verdict"].startswith("no detectable difference: +1.00"), c["verdict"]
    sent = agent_server.requests_text()
    assert "question 0" in sent and "question 1" in sent and "SKILL_SAYS: mango" in sent
