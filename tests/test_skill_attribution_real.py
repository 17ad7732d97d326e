"""Which skill a session used, with the real agent CLIs (slow): the user invokes a skill in Claude Code
(`/review-pr`, and the model's Skill tool) and in Codex (`$review-pr`), and works without one; the real
`skillsleep harvest --json` over that home, into real SQLite, stores each session with the skills it
used, counts them, and `skillsleep skills` shows their use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from agent_server import AgentServer
from click.testing import CliRunner
from own_kit import codex_user_config, harvest_json, user_env, user_run

from skillsleep.core.models.store import Store
from skillsleep.slash_commands.cli import main

if TYPE_CHECKING:
    from conftest import AgentTools

pytestmark = pytest.mark.slow


def _skill(folder: Path, name: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: The {name} skill.\n---\n\nSKILL_SAYS: ok\n"
    )


def _stored(data: Path, agent: str) -> dict[str, list[str]]:
    store = Store(data / "state.db")
    try:
        return {next(t.text for t in s.turns if t.kind in ("user", "command")): s.skills for s in store.sessions(agent)}
    finally:
        store.close()


def test_claude_code_skill_use_is_harvested(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, real = tmp_path / "home", str(agent_tools.bin / "claude")
    project = home / "project"
    _skill(home / ".claude" / "skills", "review-pr")
    _skill(project / ".claude" / "skills", "release-notes")
    env = user_env(agent_tools.path_env(), home, agent_server)
    user_run([real, "-p", "/review-pr 12"], env, project)
    user_run([real, "-p", 'STUB_CALL:Skill:{"skill": "release-notes"}'], env, project)
    user_run([real, "-p", "fix the login bug"], env, project)

    report = harvest_json(monkeypatch, home, tmp_path / "data")
    assert report["skills"] == {"claude-code": {"review-pr": 1, "release-notes": 1}}, report
    assert _stored(tmp_path / "data", "claude-code") == {
        "/review-pr 12": ["review-pr"],
        'STUB_CALL:Skill:{"skill": "release-notes"}': ["release-notes"],
        "fix the login bug": [],
    }
    monkeypatch.chdir(project)
    listed = json.loads(CliRunner().invoke(main, ["skills", "--json"]).stdout)
    uses = {(s["agent"], s["name"]): (s["kind"], s["uses"]) for s in listed["skills"]}
    assert uses[("claude-code", "review-pr")] == ("user", 1) and uses[("claude-code", "release-notes")] == (
        "project",
        1,
    )


def test_codex_skill_use_is_harvested(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, real = tmp_path / "home", str(agent_tools.bin / "codex")
    project = home / "project"
    codex_user_config(home, agent_server)
    (home / ".tmp").mkdir()
    _skill(home / ".agents" / "skills", "review-pr")
    env = user_env(agent_tools.path_env(), home, agent_server, TMPDIR=str(home / ".tmp"))
    base = [real, "exec", "--json", "--skip-git-repo-check"]
    user_run([*base, "$review-pr check 12"], env, project)
    user_run([*base, "fix the login bug"], env, project)

    report = harvest_json(monkeypatch, home, tmp_path / "data")
    assert report["skills"] == {"codex": {"review-pr": 1}}, report
    assert _stored(tmp_path / "data", "codex") == {"$review-pr check 12": ["review-pr"], "fix the login bug": []}
