from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.errors import ConfigError
from skillsleep.harnesses.agent_cli import frontmatter_value, skill_name
from skillsleep.harnesses.skills import (
    MANAGED_NAME,
    SkillTarget,
    known_skills,
    managed_path,
    managed_seed,
    resolve_skill,
    skill_dirs,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    return project


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _skill(folder: Path, name: str | None = None, body: str = "# Skill\n\nDo it.\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    head = f"---\nname: {name}\ndescription: test skill\n---\n" if name else ""
    path = folder / "SKILL.md"
    path.write_text(head + body)
    return path


def _resolve(
    spec: str, harness: str, home: Path, cwd: Path, data_dir: Path, env: dict[str, str] | None = None
) -> SkillTarget:
    return resolve_skill(spec, harness=harness, home=home, cwd=cwd, data_dir=data_dir, env=env or {})


# --- the managed skill -------------------------------------------------------------------------


def test_managed_seed_is_a_valid_agent_skill() -> None:
    seed = Skill.parse(managed_seed(MANAGED_NAME))
    assert skill_name(seed) == MANAGED_NAME
    description = frontmatter_value(seed.frontmatter, "description") or ""
    assert "skillsleep" in description and "sessions" in description and "recurring tasks" in description
    assert seed.body.lstrip().startswith("# ")
    assert len(seed.text) < 400


@pytest.mark.parametrize(
    ("harness", "where"),
    [
        ("claude-code", "home/.claude/skills/skillsleep-learned/SKILL.md"),
        ("codex", "home/.agents/skills/skillsleep-learned/SKILL.md"),
        ("openclaw", "home/.openclaw/skills/skillsleep-learned/SKILL.md"),
        ("chat", "data/skills/skillsleep-learned/SKILL.md"),
    ],
)
def test_managed_path_per_harness(tmp_path: Path, harness: str, where: str) -> None:
    assert managed_path(harness, home=tmp_path / "home", data_dir=tmp_path / "data") == tmp_path / where


def test_empty_spec_is_the_managed_skill_which_may_not_exist_yet(home: Path, cwd: Path, data_dir: Path) -> None:
    target = _resolve("", "claude-code", home, cwd, data_dir)
    assert target.managed and target.section is None and target.name == MANAGED_NAME
    assert target.path == home / ".claude/skills/skillsleep-learned/SKILL.md"
    assert not target.exists()
    assert target.read() == managed_seed(MANAGED_NAME)
    assert target.compose(target.read()) == managed_seed(MANAGED_NAME)
    assert target.label() == "~/.claude/skills/skillsleep-learned/SKILL.md"


def test_existing_managed_skill_is_read_from_disk(home: Path, cwd: Path, data_dir: Path) -> None:
    path = _skill(home / ".agents/skills/skillsleep-learned", MANAGED_NAME, "# Learned habits\n\n- one\n")
    target = _resolve("  ", "codex", home, cwd, data_dir)
    assert target.managed and target.exists()
    assert target.read() == path.read_text()


def test_chat_managed_skill_lives_in_the_data_dir(home: Path, cwd: Path, data_dir: Path) -> None:
    target = _resolve("", "chat", home, cwd, data_dir)
    assert target.path == data_dir / "skills/skillsleep-learned/SKILL.md"
    assert target.harness == "chat"


# --- skill folders and names -------------------------------------------------------------------


def test_claude_code_personal_skills_win_over_project_skills(home: Path, cwd: Path, data_dir: Path) -> None:
    personal = _skill(home / ".claude/skills/review", "review")
    _skill(cwd / ".claude/skills/review", "review")
    project = _skill(cwd / ".claude/skills/deploy", "deploy")
    assert skill_dirs("claude-code", home=home, cwd=cwd, env={}) == [home / ".claude/skills", cwd / ".claude/skills"]
    assert known_skills("claude-code", home=home, cwd=cwd, env={}) == {"review": personal, "deploy": project}
    target = _resolve("deploy", "claude-code", home, cwd, data_dir)
    assert target.path == project.resolve() and target.name == "deploy" and not target.managed
    assert target.label() == ".claude/skills/deploy/SKILL.md"


def test_claude_config_dir_moves_the_personal_skills(home: Path, cwd: Path, tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config")}
    assert skill_dirs("claude-code", home=home, cwd=cwd, env=env)[0] == tmp_path / "claude-config/skills"


def test_project_skill_dirs_reach_up_to_the_repository_root(home: Path, cwd: Path, data_dir: Path) -> None:
    sub = cwd / "pkg" / "mod"
    sub.mkdir(parents=True)
    root_skill = _skill(cwd / ".agents/skills/lint", "lint")
    dirs = skill_dirs("codex", home=home, cwd=sub, env={})
    assert dirs[:3] == [sub / ".agents/skills", cwd / "pkg/.agents/skills", cwd / ".agents/skills"]
    assert cwd.parent / ".agents/skills" not in dirs  # not above the repository root
    assert _resolve("lint", "codex", home, sub, data_dir).path == root_skill.resolve()


def test_codex_lookup_order_and_codex_home(home: Path, cwd: Path, data_dir: Path, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    env = {"CODEX_HOME": str(codex_home)}
    assert skill_dirs("codex", home=home, cwd=cwd, env=env) == [
        cwd / ".agents/skills",
        home / ".agents/skills",
        codex_home / "skills",
    ]
    assert skill_dirs("codex", home=home, cwd=cwd, env={})[-1] == home / ".codex/skills"
    in_codex_home = _skill(codex_home / "skills/fmt", "fmt")
    _skill(home / ".codex/skills/only-default-home", "only-default-home")
    user = _skill(home / ".agents/skills/tests", "tests")
    _skill(codex_home / "skills/tests", "tests")
    project = _skill(cwd / ".agents/skills/docs", "docs")
    _skill(home / ".agents/skills/docs", "docs")
    known = known_skills("codex", home=home, cwd=cwd, env=env)
    assert known == {"docs": project, "tests": user, "fmt": in_codex_home}
    assert _resolve("fmt", "codex", home, cwd, data_dir, env).path == in_codex_home.resolve()


def test_openclaw_workspace_then_personal_then_state_dir(home: Path, cwd: Path, data_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "oc-state"
    env = {"OPENCLAW_STATE_DIR": str(state)}
    dirs = skill_dirs("openclaw", home=home, cwd=cwd, env=env)
    assert dirs == [
        cwd / "skills",
        cwd / ".agents/skills",
        home / ".openclaw/workspace/skills",
        home / ".openclaw/workspace/.agents/skills",
        home / ".agents/skills",
        state / "skills",
    ]
    assert skill_dirs("openclaw", home=home, cwd=cwd, env={})[-1] == home / ".openclaw/skills"
    workspace = _skill(cwd / "skills/summarise", "summarise")
    _skill(state / "skills/summarise", "summarise")
    shared = _skill(state / "skills/weather", "weather")
    default_ws = _skill(home / ".openclaw/workspace/skills/notes", "notes")
    assert known_skills("openclaw", home=home, cwd=cwd, env=env) == {
        "summarise": workspace,
        "weather": shared,
        "notes": default_ws,
    }
    assert _resolve("weather", "openclaw", home, cwd, data_dir, env).path == shared.resolve()


def test_name_comes_from_frontmatter_else_the_folder(home: Path, cwd: Path, data_dir: Path) -> None:
    named = _skill(home / ".claude/skills/folder-a", "pretty-name")
    bare = _skill(home / ".claude/skills/folder-b")
    _skill(home / ".claude/skills/.hidden", "hidden")
    (home / ".claude/skills/no-skill-file").mkdir()
    assert known_skills("claude-code", home=home, cwd=cwd, env={}) == {"pretty-name": named, "folder-b": bare}
    assert _resolve("folder-b", "claude-code", home, cwd, data_dir).name == "folder-b"


def test_chat_has_no_skill_folders(home: Path, cwd: Path) -> None:
    assert skill_dirs("chat", home=home, cwd=cwd, env={}) == []
    assert known_skills("chat", home=home, cwd=cwd, env={}) == {}


# --- PATH and PATH#Heading ---------------------------------------------------------------------


def test_path_relative_to_cwd_round_trips_byte_for_byte(home: Path, cwd: Path, data_dir: Path) -> None:
    path = cwd / "notes" / "SKILL.md"
    path.parent.mkdir()
    original = b"---\nname: my-notes\ndescription: d\n---\r\n# Notes\r\n\r\n- keep\r\n"
    path.write_bytes(original)
    target = _resolve("notes/SKILL.md", "codex", home, cwd, data_dir)
    assert target.path == path.resolve() and target.name == "my-notes" and target.section is None
    assert target.compose(target.read()).encode() == original
    assert target.label() == "notes/SKILL.md"


def test_whole_crlf_file_keeps_crlf_when_trained_text_has_plain_newlines(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "AGENTS.md").write_bytes(b"# Rules\r\n\r\n- one\r\n")
    target = _resolve("AGENTS.md", "codex", home, cwd, data_dir)
    trained = Skill.parse(target.read()).text + "- two\n"
    assert target.compose(trained) == "# Rules\r\n\r\n- one\r\n- two\r\n"


def test_tilde_path_expands_against_the_given_home(home: Path, cwd: Path, data_dir: Path) -> None:
    path = _skill(home / "dotfiles/writing")
    target = _resolve("~/dotfiles/writing/SKILL.md", "claude-code", home, cwd, data_dir)
    assert target.path == path.resolve()
    assert target.name == "writing"  # no frontmatter: the folder's name
    assert target.label() == "~/dotfiles/writing/SKILL.md"


def test_a_skill_folder_stands_for_its_skill_file(home: Path, cwd: Path, data_dir: Path) -> None:
    path = _skill(cwd / "skills/x", "x-skill")
    assert _resolve("./skills/x", "openclaw", home, cwd, data_dir).path == path.resolve()


def test_section_target_trains_only_the_section(home: Path, cwd: Path, data_dir: Path) -> None:
    original = b"# Agents\r\n\r\n## Testing\r\n\r\nRun pytest.\r\n\r\n## Style\r\n\r\nShort lines."
    agents = cwd / "AGENTS.md"
    agents.write_bytes(original)
    target = _resolve("AGENTS.md#testing", "codex", home, cwd, data_dir)
    assert target.section == "testing" and target.name == "Testing"
    assert target.path == agents.resolve()
    assert target.read() == "\r\nRun pytest.\r\n\r\n"
    assert target.compose(target.read()).encode() == original
    assert target.label() == "AGENTS.md § Testing"
    new = target.compose("\nRun pytest -q.\nThen ruff.\n\n")
    assert new.encode() == original.replace(b"Run pytest.\r\n", b"Run pytest -q.\r\nThen ruff.\r\n")


def test_section_heading_may_carry_its_hashes(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "AGENTS.md").write_text("# Testing\nintro\n## Testing\ndetail\n")
    target = _resolve("AGENTS.md### Testing", "claude-code", home, cwd, data_dir)  # `#` + `## Testing`
    assert target.section == "## Testing"
    assert target.read() == "detail\n"
    assert target.label() == "AGENTS.md § Testing"
    assert _resolve("AGENTS.md## Testing", "claude-code", home, cwd, data_dir).read() == "intro\n## Testing\ndetail\n"


def test_section_heading_must_exist_now(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "AGENTS.md").write_text("# Agents\n## Testing\nx\n")
    with pytest.raises(ConfigError) as err:
        _resolve("AGENTS.md#Deploy", "codex", home, cwd, data_dir)
    assert "AGENTS.md has no heading 'Deploy'" in str(err.value)
    assert "## Testing" in str(err.value)


def test_section_of_a_missing_file_is_an_error(home: Path, cwd: Path, data_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"AGENTS\.md does not exist"):
        _resolve("AGENTS.md#Testing", "codex", home, cwd, data_dir)


def test_a_file_with_a_hash_in_its_name_is_a_whole_file(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "c#-notes.md").write_text("# C#\n")
    target = _resolve("c#-notes.md", "codex", home, cwd, data_dir)
    assert target.section is None and target.path.name == "c#-notes.md"


def test_hash_without_a_file_asks_for_the_file(home: Path, cwd: Path, data_dir: Path) -> None:
    with pytest.raises(ConfigError, match="name the file before the #"):
        _resolve("#Testing", "codex", home, cwd, data_dir)


def test_missing_path_says_what_to_pass_instead(home: Path, cwd: Path, data_dir: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _resolve("docs/SKILL.md", "claude-code", home, cwd, data_dir)
    message = str(err.value)
    assert "docs/SKILL.md does not exist" in message
    assert "PATH#Heading" in message and "leave --skill empty" in message


def test_binary_file_is_refused(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(ConfigError, match="not a UTF-8 text file"):
        _resolve("blob.md", "codex", home, cwd, data_dir)
    (cwd / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not a UTF-8 text file"):
        _resolve("./latin1.md", "codex", home, cwd, data_dir)


def test_folder_without_skill_file_is_refused(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "empty").mkdir()
    with pytest.raises(ConfigError, match="empty is a folder without a SKILL.md in it; pass --skill PATH"):
        _resolve("./empty", "codex", home, cwd, data_dir)


def test_a_pipe_or_device_is_refused_as_not_a_regular_file(home: Path, cwd: Path, data_dir: Path) -> None:
    os.mkfifo(cwd / "pipe.md")
    with pytest.raises(ConfigError, match="pipe.md is not a regular file .a pipe or a device.; pass --skill PATH"):
        _resolve("pipe.md", "codex", home, cwd, data_dir)
    with pytest.raises(ConfigError, match="/dev/null is not a regular file"):
        _resolve("/dev/null", "codex", home, cwd, data_dir)


def test_compose_rereads_the_file_and_fails_when_the_section_was_removed(home: Path, cwd: Path, data_dir: Path) -> None:
    agents = cwd / "AGENTS.md"
    agents.write_text("# A\n## Testing\nx\n")
    target = _resolve("AGENTS.md#Testing", "codex", home, cwd, data_dir)
    agents.write_text("# A\n## Tests\nx\n")
    with pytest.raises(ConfigError, match="no heading 'Testing'"):
        target.compose("y\n")


# --- NAME errors -------------------------------------------------------------------------------


def test_unknown_name_lists_the_known_ones(home: Path, cwd: Path, data_dir: Path) -> None:
    _skill(home / ".claude/skills/review", "review")
    _skill(cwd / ".claude/skills/deploy", "deploy")
    with pytest.raises(ConfigError) as err:
        _resolve("reveiw", "claude-code", home, cwd, data_dir)
    message = str(err.value)
    assert "no skill by that name" in message
    assert "Did you mean 'review'?" in message
    assert "Known: deploy, review" in message
    assert "leave --skill empty" in message


def test_harness_without_skills_suggests_a_path_or_the_managed_skill(home: Path, cwd: Path, data_dir: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _resolve("review", "openclaw", home, cwd, data_dir)
    message = str(err.value)
    assert "openclaw has no skills yet" in message
    assert "--skill PATH" in message and "leave --skill empty" in message


def test_a_name_for_direct_chat_explains_there_are_no_skill_folders(home: Path, cwd: Path, data_dir: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _resolve("review", "chat", home, cwd, data_dir)
    message = str(err.value)
    assert "no skill folders" in message
    assert "--skill PATH" in message and "leave --skill empty" in message


def test_vanished_file_is_an_error_that_says_what_to_do(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "AGENTS.md").write_text("# A\n")
    target = _resolve("AGENTS.md", "codex", home, cwd, data_dir)
    (cwd / "AGENTS.md").unlink()
    assert not target.exists()
    with pytest.raises(ConfigError, match="AGENTS.md does not exist any more; restore it"):
        target.read()


def test_path_works_for_direct_chat(home: Path, cwd: Path, data_dir: Path) -> None:
    (cwd / "prompt.md").write_text("You are terse.\n")
    target = _resolve("prompt.md", "chat", home, cwd, data_dir)
    assert target.read() == "You are terse.\n" and target.name == "prompt"
