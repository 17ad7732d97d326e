"""The wheel carries everything the engine needs at run time (the reference forgot its prompts)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_ships_every_prompt_and_module(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr
    wheel = next(tmp_path.glob("skillsleep-*.whl"))
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    for prompt in (ROOT / "core" / "prompts").glob("*.md"):
        assert f"skillsleep/core/prompts/{prompt.name}" in names
    for layer in ("core", "harnesses", "slash_commands"):
        for module in (ROOT / layer).rglob("*.py"):
            assert f"skillsleep/{module.relative_to(ROOT).as_posix()}" in names
    assert not any(n.startswith(("tests/", "bench/", "core/")) for n in names)
    # this pack's own skill, for `skillsleep install`: the root SKILL.md's bytes, not a link to it
    assert archive.read("skillsleep/harnesses/pack/SKILL.md") == (ROOT / "SKILL.md").read_bytes()
    samples = [p for p in (ROOT / "slash_commands" / "demo").rglob("*") if p.is_file()]  # `skillsleep demo`'s
    assert len(samples) > 10
    for sample in samples:
        assert f"skillsleep/{sample.relative_to(ROOT).as_posix()}" in names


def test_prompt_templates_load_from_the_package() -> None:
    from importlib import resources

    folder = resources.files("skillsleep.core") / "prompts"
    names = {p.name for p in folder.iterdir()}
    assert {"reflect_system.md", "reflect_user.md", "merge_system.md", "rank_system.md"} <= names
