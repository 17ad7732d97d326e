"""A night replayed in the real Codex CLI: `skillsleep run --harness codex --skill NAME`.

The optimizer is the scripted backend; the target is the pinned `codex` binary talking to the
scripted model server (tests/agent_server.py), which answers with the word after `SKILL_SAYS:`
when the skill Codex injected carries one. So the seed skill scores 0, the candidate with the
reflected line scores 1, and the gate's verdict comes from real agent runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_server import AgentServer
from conftest import AgentTools
from sleep_kit import TASKS, invoke, night_env, run_args, write_chat_logs, write_scripts

SEED = "---\nname: release-notes\ndescription: how to answer release chores\n---\n# Release chores\n\n- Be precise.\n"
LINE = "SKILL_SAYS: mango"


@pytest.mark.slow
def test_a_night_in_real_codex_trains_a_named_user_skill(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = night_env(monkeypatch, tmp_path)
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(
        'model = "stub-model"\nmodel_provider = "local"\n[model_providers.local]\nname = "local"\n'
        f'base_url = "{agent_server.url}/v1"\nwire_api = "responses"\nenv_key = "STUB_KEY"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
    )
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("STUB_KEY", "dummy")
    monkeypatch.setenv("PATH", agent_tools.path_env())
    live = home / ".agents" / "skills" / "release-notes" / "SKILL.md"
    live.parent.mkdir(parents=True)
    live.write_text(SEED)
    write_scripts(
        tmp_path,
        findings=[
            {
                "kind": "skill_defect",
                "diagnosis": "the answer word is missing",
                "op": "add",
                "target": "",
                "content": LINE,
            }
        ],
    )
    opt = json.loads((tmp_path / "opt.json").read_text())
    for rule in opt:  # the mined judge: the answer must contain the word
        if rule["match"] == '"mine_judge"':
            rule["reply"] = json.dumps(
                {
                    "checks": [
                        {"type": "contains", "value": "mango", "feedback": "the answer must contain the word mango"}
                    ],
                    "rubric": "",
                }
            )
    (tmp_path / "opt.json").write_text(json.dumps(opt))
    write_chat_logs(tmp_path / "chats", TASKS[:4], correction="no, the answer must contain the word mango")

    # --base-url is the optimizer backend's (scripted: unused); Codex keeps its own server
    args = run_args(
        tmp_path,
        "--harness",
        "codex",
        "--skill",
        "release-notes",
        "--steps",
        "1",
        "--dreams",
        "0",
        "--gate-min-wins",  # 4 tasks hold out 1: the gate may judge on it (the default needs 2 wins)
        "1",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--json",
    )
    args.remove("--target-model")
    args.remove(str(tmp_path / "target.json"))
    code, out, err = invoke(*args)
    assert code == 0, err
    s = json.loads(out)
    assert s["harness"] == "codex" and s["skill"]["path"] == str(live) and s["skill"]["name"] == "release-notes"
    assert s["outcome"] == "accepted", s["reason"]
    assert (s["baseline"], s["candidate"]) == (0.0, 1.0)
    assert s["test"] == {"before": 0.0, "after": 1.0, "tasks": 1}
    assert s["calls_by_role"].get("target") is None  # the target is Codex, not a backend call
    sent = agent_server.requests_text()
    assert LINE in sent and all(t in sent for t in TASKS[:4])  # every split was replayed in Codex
    assert live.read_text() == SEED  # staged, not adopted
    staged = data / "staging" / s["proposal"]
    assert LINE in (staged / "SKILL.md").read_text() and (staged / "SKILL.md").read_text().startswith(SEED.rstrip("\n"))
    code, _, err = invoke("adopt")
    assert code == 0, err
    assert LINE in live.read_text()
    # Replays never touched the user's Codex home: no sessions were written there.
    assert not (codex_home / "sessions").exists()
