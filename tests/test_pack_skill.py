"""This pack's own skill (SKILL.md at the repository root, shipped in the package): a valid Agent
Skills file for Claude Code, Codex and OpenClaw, true to the CLI.

Fast: the frontmatter and body, and the packaged copy. Slow: installed by `skillsleep install`'s
own installers into the real pinned agents (offline, against tests/agent_server.py) it is listed /
injected: Claude Code (`$CLAUDE_CONFIG_DIR/skills/`) lists it in the model request, Codex
(`$CODEX_HOME/skills/`) injects it for `$skillsleep`; OpenClaw (the OpenClaw plugin ships the same
file; here as a user skill in `~/.openclaw/skills/`) lists it as eligible with `skillsleep` on PATH
and as needing setup without.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from agent_server import AgentServer

from skillsleep.core.document.skill import Skill
from skillsleep.harnesses.agent_cli import frontmatter_value
from skillsleep.harnesses.install import Installs, installer
from skillsleep.harnesses.install_plan import InstallContext
from skillsleep.harnesses.skills import PACK_SKILL_NAME, pack_skill_text
from skillsleep.slash_commands.cli import main

if TYPE_CHECKING:
    from conftest import AgentTools

ROOT = Path(__file__).resolve().parents[1]
VERBS = ["status", "diff", "adopt", "reject", "rollback", "run", "cost", "help"]


def pack_skill() -> Skill:
    return Skill.parse((ROOT / "SKILL.md").read_text(encoding="utf-8"))


def test_the_packaged_skill_is_the_repository_roots_skill_md() -> None:
    assert pack_skill_text() == (ROOT / "SKILL.md").read_text(encoding="utf-8")
    assert PACK_SKILL_NAME == "skillsleep"


def test_frontmatter_is_a_valid_agent_skill_for_all_three_agents() -> None:
    front = pack_skill().frontmatter
    name = frontmatter_value(front, "name")
    assert name == PACK_SKILL_NAME  # not `sleep`: a skill named sleep would shadow the plugins' /sleep
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and len(name) <= 64
    description = frontmatter_value(front, "description") or ""
    assert 100 <= len(description) <= 1024, len(description)  # what it does and when to use it
    assert "Use it when" in description
    assert frontmatter_value(front, "user-invocable") == "true"  # OpenClaw: `/skillsleep` too (Claude's default)
    metadata = json.loads(frontmatter_value(front, "metadata") or "null")  # YAML flow style is JSON here
    assert metadata == {"openclaw": {"requires": {"bins": ["skillsleep"]}, "emoji": "😴"}}


def test_the_body_names_every_verb_the_never_adopt_rule_and_verbatim_output() -> None:
    body = pack_skill().body
    table = dict(re.findall(r"^\| `(\w+)[^`]*` \| (.+) \|$", body, re.M))
    assert list(table) == VERBS
    assert "--edits" in body and "--detach" in body and "--format md" in body
    assert "Never run `adopt`, `reject`, `rollback` or `run` on your own initiative" in body
    assert "verbatim" in body
    assert len(body.splitlines()) <= 60  # short: it is read into every agent's context


def test_every_verb_the_skill_names_is_a_command_of_the_cli() -> None:
    named = set(re.findall(r"`skillsleep (\w+)", pack_skill().body)) | set(VERBS)
    missing = sorted(named - set(main.commands))
    assert not missing, f"SKILL.md names verbs the CLI does not have: {missing}"


# --- inside the real agents (slow) -------------------------------------------------------------


def install(agent: str, home: Path, env: dict[str, str]) -> Path:
    """`skillsleep install AGENT` (its own installer) into `home`; the pack skill's path."""
    ctx = InstallContext(
        home=home, env=env, skillsleep=Path(sys.executable).with_name("skillsleep"), data_dir=home / "skillsleep-data"
    )
    plan = installer(agent)(ctx)
    Installs(ctx.data_dir, env=env).install(plan)
    (pack,) = [f.path for f in plan.files if f.path.parent.name == PACK_SKILL_NAME]
    return pack


def user_skill(skills_dir: Path) -> Path:
    """The pack skill as a user skill under `skills_dir` (OpenClaw: its plugin ships the same file)."""
    folder = skills_dir / PACK_SKILL_NAME
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(pack_skill_text(), encoding="utf-8")
    return folder / "SKILL.md"


def agent_env(agent_tools: AgentTools, home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": agent_tools.path_env(), "HOME": str(home), "LANG": "C.UTF-8", **extra}


@pytest.mark.slow
def test_claude_code_lists_the_installed_skill_to_the_model(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    config = tmp_path / "home" / ".claude"
    env = agent_env(
        agent_tools,
        tmp_path / "home",
        CLAUDE_CONFIG_DIR=str(config),
        ANTHROPIC_BASE_URL=agent_server.url,
        ANTHROPIC_API_KEY="dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_MAX_RETRIES="0",
    )
    assert install("claude-code", tmp_path / "home", env) == config / "skills" / PACK_SKILL_NAME / "SKILL.md"
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run(
        ["claude", "-p", "--output-format", "json", "--model", "stub-model", "--", "what can you do?"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["result"] == "hello"
    description = frontmatter_value(pack_skill().frontmatter, "description") or ""
    text = agent_server.requests_text()
    assert re.search(rf"{PACK_SKILL_NAME}\W+{re.escape(description[:60])}", text), "the skill is not listed"


@pytest.mark.slow
def test_codex_injects_the_installed_skill_for_its_mention(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "stub-model"\nmodel_provider = "local"\ncheck_for_update_on_startup = false\n'
        "[analytics]\nenabled = false\n[features]\nremote_plugin = false\napps = false\n"
        'unbounded_connection_retries = false\n[model_providers.local]\nname = "local"\n'
        f'base_url = "{agent_server.url}/v1"\nwire_api = "responses"\nenv_key = "K"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = agent_env(agent_tools, home, CODEX_HOME=str(codex_home), TMPDIR=str(tmp), K="dummy")
    installed = install("codex", home, env)
    assert installed == codex_home / "skills" / PACK_SKILL_NAME / "SKILL.md"
    out = subprocess.run(
        [
            "codex",
            "exec",
            "--json",
            "--ephemeral",
            "--skip-git-repo-check",
            "--",
            f"${PACK_SKILL_NAME} what did you learn last night?",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = agent_server.requests_text()
    injected = re.search(r"<skill>\s*<name>(.*?)</name>\s*<path>(.*?)</path>(.*?)</skill>", text, re.S)
    assert injected, "codex did not inject the skill"
    assert injected.group(1) == PACK_SKILL_NAME and Path(injected.group(2)) == installed
    assert "Never run `adopt`" in injected.group(3)


@pytest.mark.slow
def test_openclaw_lists_the_skill_as_eligible_only_with_skillsleep_on_path(
    agent_tools: AgentTools, tmp_path: Path
) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    user_skill(state / "skills")  # ~/.openclaw/skills, OpenClaw's own folder for the user's skills
    with_cli = tmp_path / "bin"
    with_cli.mkdir()
    (with_cli / "skillsleep").symlink_to(Path(sys.executable).with_name("skillsleep"))

    def listed(path: str) -> dict[str, object]:
        env = agent_env(
            agent_tools,
            home,
            OPENCLAW_STATE_DIR=str(state),
            XDG_CACHE_HOME=str(tmp_path / "cache"),
            OPENCLAW_NO_AUTO_UPDATE="1",
            DO_NOT_TRACK="1",
        )
        env["PATH"] = path
        out = subprocess.run(
            ["openclaw", "skills", "list", "--json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        skills = json.loads(out.stdout[out.stdout.index("{") :])["skills"]
        return next(s for s in skills if s["name"] == PACK_SKILL_NAME)

    assert os.access(with_cli / "skillsleep", os.X_OK)
    ready = listed(f"{with_cli}:{agent_tools.path_env()}")
    assert ready["eligible"] is True and ready["missing"]["bins"] == []  # type: ignore[index]
    unset = listed(agent_tools.path_env())
    assert unset["eligible"] is False and unset["missing"]["bins"] == ["skillsleep"]  # type: ignore[index]
