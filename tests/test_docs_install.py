"""docs/agents.md names the files `skillsleep install` really writes into each agent's folder, in its
"Inside your agent" summary and in the agent's own Install section, and no file it does not write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skillsleep.harnesses.install import installer
from skillsleep.harnesses.install_plan import InstallContext

PAGE = Path(__file__).resolve().parents[1] / "docs" / "agents.md"


def between(text: str, start: str, end: str) -> str:
    """The text from the line `start` up to the next line that begins with `end` (or the page's end)."""
    head = text.index(start)
    rest = text[head + len(start) :]
    match = re.search(rf"^{re.escape(end)}", rest, re.M)
    return rest[: match.start()] if match else rest


def written(tmp_path: Path, agent: str, folder: str) -> set[str]:
    """The files installing into `agent` writes, relative to its folder under the home `tmp_path`."""
    ctx = InstallContext(home=tmp_path, env={}, skillsleep=tmp_path / "bin" / "skillsleep", data_dir=tmp_path / "d")
    return {f.path.relative_to(tmp_path / folder).as_posix() for f in installer(agent)(ctx).files}


@pytest.mark.parametrize(
    ("agent", "title", "folder"), [("claude-code", "Claude Code", ".claude"), ("codex", "Codex", ".codex")]
)
def test_inside_your_agent_names_the_files_install_writes_and_no_other(
    tmp_path: Path, agent: str, title: str, folder: str
) -> None:
    files = written(tmp_path, agent, folder)
    summary = between(
        between(PAGE.read_text(encoding="utf-8"), "## Inside your agent\n", "## "), f"- **{title}**", "- **"
    )
    named = set(re.findall(r"`(skills/[^`\s]*)`", summary))
    assert files <= named, f"not named under 'Inside your agent': {sorted(files - named)}"
    folders = {p.as_posix() + "/" for f in files for p in Path(f).parents if p.as_posix() != "."}
    assert named <= files | folders, f"named but not written: {sorted(named - files - folders)}"


@pytest.mark.parametrize(
    ("agent", "title", "folder"), [("claude-code", "Claude Code", ".claude"), ("codex", "Codex", ".codex")]
)
def test_the_install_section_lists_every_file_install_writes(
    tmp_path: Path, agent: str, title: str, folder: str
) -> None:
    section = between(between(PAGE.read_text(encoding="utf-8"), f"## {title}\n", "## "), "### Install\n", "### ")
    listed = {line.split()[0] for line in section.splitlines() if line.startswith("    skills/")}
    assert listed == written(tmp_path, agent, folder)
