"""`skillsleep skills` on a fake home with every kind of skill location (user, project, plugin and
system skills, skillsleep's managed skill and its own skills, instruction files and their sections),
its use counted from a real SQLite store the real `skillsleep harvest` filled from the recorded
sessions of tests/fixtures/<agent>/skills/; its outputs pinned in tests/fixtures/verbs/skills.*."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden import check

from skillsleep.slash_commands.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def _skill(folder: Path, name: str, description: str = "") -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description or name}\n---\n\nDo it.\n")


def _home(tmp_path: Path) -> tuple[Path, Path]:
    """A home and a project (a git repository) with a skill in every kind of place, and transcripts."""
    home, proj = tmp_path / "home", tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    claude, codex, openclaw = home / ".claude", home / ".codex", home / ".openclaw"
    _skill(claude / "skills", "review-pr", "Review a pull request.")  # user
    _skill(claude / "skills", "skillsleep-learned")  # skillsleep's managed skill: the user's to train
    _skill(claude / "skills", "sleep")  # skillsleep's own: left out
    _skill(proj / ".claude" / "skills", "release-notes")  # project
    _skill(claude / "plugins" / "cache" / "mkt" / "tools" / "1.0.2" / "skills", "lint")  # an installed plugin's
    (claude / "skills" / "house" / ".claude-plugin").mkdir(parents=True)  # a plugin kept in the personal skills
    _skill(claude / "skills" / "house" / "skills", "fmt")
    _skill(home / ".agents" / "skills", "review-pr")  # Codex's (and OpenClaw's) user skills
    _skill(proj / ".agents" / "skills", "release-notes")  # Codex's project skill
    _skill(codex / "skills" / ".system", "skill-creator")  # Codex's own
    plugin = openclaw / "extensions" / "notes-plugin"
    _skill(plugin / "skills", "notes")
    (plugin / "openclaw.plugin.json").write_text(json.dumps({"id": "notes-plugin", "skills": ["skills"]}))
    _skill(proj / "skills", "deploy")  # OpenClaw's workspace skill
    (claude / "CLAUDE.md").write_text("# Me\n\n## Style\n\nShort.\n\n### Detail\n\nx\n")
    (proj / "AGENTS.md").write_text("# Project\n\n## Testing\n\nRun it.\n\n```\n## not a heading\n```\n")
    shutil.copytree(FIXTURES / "claude" / "skills" / "projects", claude / "projects")
    shutil.copytree(FIXTURES / "recorded" / "claude" / "config" / "projects", claude / "projects", dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "codex" / "skills" / "sessions", codex / "sessions")
    shutil.copytree(FIXTURES / "openclaw" / "skills" / "state" / "agents", openclaw / "agents")
    return home, proj


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, proj = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no agent CLI: each agent is found by its home
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR", "OPENCLAW_HOME", "OPENCLAW_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", "")
    monkeypatch.chdir(proj)
    return tmp_path


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_openclaws_bundled_skills_are_listed_read_only(fake_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The skills in the package of the `openclaw` on PATH (bin entry → the package's openclaw.mjs)."""
    package = fake_home / "lib" / "node_modules" / "openclaw"
    _skill(package / "skills", "skill-creator", "Create a skill.")
    (package / "package.json").write_text('{"name": "openclaw"}')
    (package / "openclaw.mjs").write_text("#!/usr/bin/env node\n")
    (package / "openclaw.mjs").chmod(0o755)
    (fake_home / "bin").mkdir()
    (fake_home / "bin" / "openclaw").symlink_to(package / "openclaw.mjs")
    monkeypatch.setenv("PATH", f"{fake_home / 'bin'}:/usr/bin:/bin")
    out = json.loads(_run("skills", "--json"))
    [row] = [s for s in out["skills"] if (s["agent"], s["name"]) == ("openclaw", "skill-creator")]
    assert (row["kind"], row["writable"], row["path"]) == (
        "system",
        False,
        str((package / "skills" / "skill-creator" / "SKILL.md").resolve()),
    )


def test_skills_lists_every_kind_of_location_with_its_use(fake_home: Path) -> None:
    assert json.loads(_run("skills", "--json"))["harvested"] is False  # nothing harvested: no use counted
    assert not (fake_home / "data" / "state.db").exists()  # … and no database made to say so
    _run("harvest", "--json")
    out = json.loads(_run("skills", "--json", "--days", "36500"))
    rows = {(s["agent"], s["name"]): (s["kind"], s["writable"], s["uses"]) for s in out["skills"]}
    assert rows == {
        ("claude-code", "review-pr"): ("user", True, 1),
        ("claude-code", "skillsleep-learned"): ("managed", True, 0),
        ("claude-code", "release-notes"): ("project", True, 1),
        ("claude-code", "tools:lint"): ("plugin", False, 0),
        ("claude-code", "house:fmt"): ("plugin", False, 0),
        ("claude-code", "CLAUDE.md"): ("instructions", True, 0),
        ("claude-code", "CLAUDE.md#Style"): ("section", True, 0),
        ("codex", "release-notes"): ("project", True, 1),
        ("codex", "review-pr"): ("user", True, 1),
        ("codex", "skill-creator"): ("system", False, 0),
        ("codex", "AGENTS.md"): ("instructions", True, 0),
        ("codex", "AGENTS.md#Testing"): ("section", True, 0),
        ("openclaw", "deploy"): ("project", True, 0),
        ("openclaw", "release-notes"): ("project", True, 1),  # OpenClaw reads <workspace>/.agents/skills too
        ("openclaw", "review-pr"): ("user", True, 0),
        ("openclaw", "notes"): ("plugin", False, 0),
        ("openclaw", "AGENTS.md"): ("instructions", True, 0),
        ("openclaw", "AGENTS.md#Testing"): ("section", True, 0),
    }
    assert out["agents"] == ["claude-code", "codex", "openclaw"] and out["harvested"] is True
    # used, but no folder holds it now: the skill of the other recorded Claude Code fixtures
    assert out["not_found"] == [{"agent": "claude-code", "name": "stub-skill", "uses": 1}]


def test_the_use_counted_is_of_the_last_days(fake_home: Path) -> None:
    from datetime import UTC, datetime

    from skillsleep.slash_commands.skills_report import list_skills

    _run("harvest", "--json")
    recorded = datetime(2026, 12, 5, 12, tzinfo=UTC)  # the fixtures were recorded that morning
    fresh = list_skills(30, now=recorded)
    assert {(s.agent, s.name): s.uses for s in fresh.skills if s.uses} == {
        ("claude-code", "review-pr"): 1,
        ("claude-code", "release-notes"): 1,
        ("codex", "release-notes"): 1,
        ("codex", "review-pr"): 1,
        ("openclaw", "release-notes"): 1,
    }
    later = list_skills(30, now=datetime(2027, 2, 1, tzinfo=UTC))
    assert all(s.uses == 0 for s in later.skills) and later.not_found == []


def test_skills_prints_its_golden_outputs(fake_home: Path) -> None:
    _run("harvest", "--json")
    names = {str(fake_home): "<ROOT>"}
    check("skills.json", _run("skills", "--json", "--days", "36500"), names)
    check("skills.text", _run("skills", "--format", "text", "--days", "36500"), names)
    check("skills.md", _run("skills", "--format", "md", "--days", "36500"), names)
