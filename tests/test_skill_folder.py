"""A skill is more than one file: the folder's other files are read-only context for the optimizer
(read within a budget, redacted, shown to the reflection), only SKILL.md is ever written, and the
frontmatter stays as it is unless the user opts in (`[edits] edit_frontmatter`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from sleep_kit import RULE, Recorder, night_env, run_night, write_chat_logs, write_scripts

from skillsleep.core.document.folder import FILE_CHARS, read_folder
from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.records import CompletionRequest, Edit
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.edits import EditLimits, apply_edits
from skillsleep.core.train.folder_context import folder_section, read_context
from skillsleep.core.train.repair import land
from skillsleep.core.train.state import _NOT_SHAPING, config_hash
from tests.test_trainer import write_config

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SEED = "---\nname: replies\ndescription: How to reply to the user's requests.\n---\n\n# Replies\n\nBe helpful.\n"
CITE = f"{RULE} Word it as `references/style.md` says."


def skill_folder(root: Path) -> Path:
    """root/replies: SKILL.md with references/, scripts/, a big example, a binary and folders
    that are never read (.git, .venv, node_modules, a hidden file); returns the SKILL.md path."""
    folder = root / "replies"
    files = {
        "SKILL.md": SEED,
        "references/style.md": f"Keep the answer line short.\nDeploy token: {SECRET}\n",
        "scripts/check.sh": "#!/bin/sh\ngrep -q '^ANSWER: ' \"$1\"\n",
        "examples/big.md": "x" * (FILE_CHARS + 500) + "\n",
        ".git/config": "[core]\n",
        ".venv/lib/site.py": "print('venv')\n",
        "node_modules/pkg/index.js": "module.exports = 1\n",
        ".hidden.md": "hidden\n",
    }
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    (folder / "assets").mkdir()
    (folder / "assets/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    return folder / "SKILL.md"


def config_for(tmp_path: Path, skill: Path, **train: object) -> TrainConfig:
    """A run config (tasks and run folder in `tmp_path`) training `skill`."""
    cfg = write_config(tmp_path)
    data = cfg.data.model_copy(update={"skill": str(skill)})
    return cfg.model_copy(update={"data": data, "train": cfg.train.model_copy(update=train)})


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- what is read -------------------------------------------------------------------------------


def test_the_folder_s_text_files_are_read_with_their_paths_and_sizes_and_the_rest_skipped(tmp_path: Path) -> None:
    skill = skill_folder(tmp_path)
    folder = read_folder(skill, budget=100_000)
    assert folder is not None
    assert [f.path for f in folder.files] == ["references/style.md", "scripts/check.sh", "examples/big.md"]
    style = folder.files[0]
    assert style.size == (skill.parent / "references/style.md").stat().st_size and SECRET in style.text
    assert "assets/logo.png: left out, not a text file" in folder.notes
    assert not any(".git" in n or ".venv" in n or "node_modules" in n or "hidden" in n for n in folder.notes)


def test_a_file_over_its_share_is_cut_and_the_cut_is_said(tmp_path: Path) -> None:
    folder = read_folder(skill_folder(tmp_path), budget=100_000)
    assert folder is not None
    big = next(f for f in folder.files if f.path == "examples/big.md")
    assert big.cut and len(big.text) == FILE_CHARS
    assert f"examples/big.md: cut to its first {FILE_CHARS} characters (the file is {FILE_CHARS + 501} bytes)" in (
        folder.notes
    )


def test_the_total_budget_holds_and_what_it_leaves_out_is_said(tmp_path: Path) -> None:
    skill = skill_folder(tmp_path)
    (skill.parent / "zz.md").write_text("late\n" * 10)  # top level, read first: the budget is spent on it
    folder = read_folder(skill, budget=300)
    assert folder is not None and folder.chars() <= 300
    assert folder.files[0].path == "zz.md"
    assert any(n.startswith("examples/big.md: left out, over the budget of 300") for n in folder.notes)


def test_no_folder_is_shown_for_a_lone_skill_another_file_name_or_a_budget_of_0(tmp_path: Path) -> None:
    lone = tmp_path / "lone" / "SKILL.md"
    lone.parent.mkdir()
    lone.write_text(SEED)
    assert read_folder(lone, budget=1000) is None
    assert folder_section(None) == ""
    skill = skill_folder(tmp_path)
    assert read_folder(skill, budget=0) is None
    agents = skill.parent / "AGENTS.md"
    agents.write_text("# Agents\n")
    assert read_folder(agents, budget=1000) is None


def test_the_section_is_redacted_fenced_and_says_to_point_not_copy(tmp_path: Path) -> None:
    folder = read_context(config_for(tmp_path, skill_folder(tmp_path)), Redactor())
    text = folder_section(folder)
    assert SECRET not in text and "[REDACTED:github_token]" in text
    assert "File `references/style.md`" in text and "<<<FILE\nKeep the answer line short." in text
    assert "by its path relative to the folder" in text and "never copy their text into the skill" in text
    assert f"cut to its first {FILE_CHARS} characters" in text and "assets/logo.png: left out" in text


async def test_the_repair_call_is_shown_the_folder_too_and_its_rewrite_may_cite_a_file(tmp_path: Path) -> None:
    folder = read_context(config_for(tmp_path, skill_folder(tmp_path)), Redactor())
    prompts: list[str] = []

    def optimizer(request: CompletionRequest) -> str:
        prompts.append("\n".join(m.content for m in request.messages))
        return json.dumps({"rewrites": [{"edit": 1, "op": "add", "target": "", "content": CITE}]})

    llm = LLM(ScriptedBackend(BackendSettings(model="opt"), optimizer), ledger=Ledger())
    refused = Edit(op="add", content="x" * 600)  # over the content bound: refused, then repaired
    landed = await land(llm, Skill.parse(SEED), [refused], EditLimits(), redactor=Redactor(), folder=folder)
    [prompt] = prompts
    assert "File `references/style.md`" in prompt and SECRET not in prompt
    assert CITE in landed.skill.text and landed.skill.frontmatter == Skill.parse(SEED).frontmatter


# --- the frontmatter ----------------------------------------------------------------------------


FRONT_EDITS = [
    Edit(op="replace", target="description: How to reply to the user's requests.", content="description: Replies."),
    Edit(op="delete", target="name: replies"),
]


def test_an_edit_of_a_frontmatter_line_is_refused_by_default() -> None:
    result = apply_edits(Skill.parse(SEED), FRONT_EDITS, EditLimits())
    assert result.skill.text == SEED and not result.applied
    assert [r.reason for r in result.skipped] == [
        "the line to replace is in the frontmatter, which the user keeps as it is: "
        "'description: How to reply to the user's requests.'",
        "the line to delete is in the frontmatter, which the user keeps as it is: 'name: replies'",
    ]


def test_with_the_opt_in_a_frontmatter_line_may_be_replaced_or_deleted_but_not_its_fences() -> None:
    fence = Edit(op="replace", target="---", content="title: x")
    two = Edit(op="replace", target="name: replies", content="name: a\nname: b")
    result = apply_edits(Skill.parse(SEED), [*FRONT_EDITS, fence, two], EditLimits(edit_frontmatter=True))
    assert result.skill.text == SEED.replace("name: replies\n", "").replace(
        "How to reply to the user's requests.", "Replies."
    )
    assert result.applied == FRONT_EDITS and len(result.skipped) == 2
    assert "in the frontmatter" in result.skipped[0].reason  # a fence is never a frontmatter line to edit


# --- a night over the folder -----------------------------------------------------------------------


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    night_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    findings = [{"kind": "skill_defect", "diagnosis": "no answer line", "op": "add", "target": "", "content": CITE}]
    write_scripts(tmp_path, findings=findings)
    write_chat_logs(tmp_path / "chats")
    return tmp_path


def test_a_night_shows_the_folder_to_the_reflection_and_writes_only_skill_md(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = skill_folder(root)
    before = snapshot(skill.parent)
    rec = Recorder(monkeypatch)
    summary = run_night(root, "--skill", str(skill), "--auto-adopt")
    assert summary["outcome"] == "accepted" and summary["adopted"] is True
    [prompt, *_] = rec.texts("reflect")
    assert "## The skill folder's other files (read-only)" in prompt
    assert "File `references/style.md`" in prompt and "File `scripts/check.sh`" in prompt
    assert SECRET not in prompt and "[REDACTED:github_token]" in prompt
    assert f"examples/big.md: cut to its first {FILE_CHARS} characters" in prompt
    assert not any(SECRET in text for text in rec.texts())  # no role saw it
    after = snapshot(skill.parent)
    assert {k: v for k, v in after.items() if k != "SKILL.md"} == {k: v for k, v in before.items() if k != "SKILL.md"}
    live = skill.read_text()
    assert CITE in live and live.startswith(SEED.split("\n\n")[0] + "\n")  # the edit cites the file; frontmatter kept


def test_a_night_over_a_lone_skill_shows_no_folder_section(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill = root / "lone" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(SEED)
    rec = Recorder(monkeypatch)
    run_night(root, "--skill", str(skill))
    prompts = rec.texts("reflect")
    assert prompts and not any("skill folder's other files" in p for p in prompts)
    assert json.loads(json.dumps(prompts))  # plain text


def test_the_opt_in_shows_the_frontmatter_to_the_reflection_as_editable(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = skill_folder(root)
    rec = Recorder(monkeypatch)
    run_night(root, "--skill", str(skill), "--edit-frontmatter", "--context-chars", "0")
    [prompt, *_] = rec.texts("reflect")
    assert "<<<FRONTMATTER\nname: replies\ndescription: How to reply" in prompt
    assert "skill folder's other files" not in prompt  # --context-chars 0: none shown
    other = root / "other"
    night_env(monkeypatch, other)
    write_chat_logs(other / "chats")
    rec.seen.clear()
    run_night(root, "--skill", str(skill))
    assert not any("FRONTMATTER" in p for p in rec.texts("reflect"))


def test_the_new_settings_keep_the_hash_of_earlier_runs_and_change_it_when_set(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    earlier = {**_NOT_SHAPING, "train": {"candidates", "context_chars"}, "edits": {"edit_frontmatter"}}
    assert config_hash(cfg) == hashlib.sha256(cfg.model_dump_json(exclude=earlier).encode()).hexdigest()[:16]
    for section, key, value in (("train", "context_chars", 0), ("edits", "edit_frontmatter", True)):
        changed = getattr(cfg, section).model_copy(update={key: value})
        assert config_hash(cfg.model_copy(update={section: changed})) != config_hash(cfg)


def test_a_training_run_shows_its_skill_s_own_folder_but_never_a_project_folder(tmp_path: Path) -> None:
    skill = skill_folder(tmp_path)  # tmp_path/replies/SKILL.md; the run's tasks and runs/ in tmp_path
    assert read_context(config_for(tmp_path, skill, context_chars=0), Redactor()) is None
    folder = read_context(config_for(tmp_path, skill), Redactor())
    assert folder is not None and folder.files[0].path == "references/style.md"
    (tmp_path / "project").mkdir()
    (skill.parent / "work").mkdir()
    project = write_config(tmp_path / "project")  # SKILL.md beside tasks.jsonl and run.toml: a project
    (tmp_path / "project" / "references").mkdir()
    (tmp_path / "project" / "references" / "style.md").write_text("Keep it short.\n")
    assert read_context(project, Redactor()) is None
    inside = config_for(skill.parent / "work", skill)  # the run's tasks inside the skill's folder
    assert read_context(inside, Redactor()) is None


def test_a_file_that_cannot_be_read_is_named_with_why_not_called_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = skill_folder(tmp_path)
    locked = skill.parent / "references" / "style.md"
    real_open = Path.open

    def refusing(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == locked:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing)  # as root, a chmod would not stop the read
    folder = read_folder(skill, budget=100_000)
    assert folder is not None and "references/style.md" not in [f.path for f in folder.files]
    assert "references/style.md: left out, it cannot be read (Permission denied)" in folder.notes
    assert "assets/logo.png: left out, not a text file" in folder.notes
