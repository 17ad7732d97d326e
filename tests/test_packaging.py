"""The wheel carries everything the engine needs at run time (the reference forgot its prompts)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    """The wheel `pip wheel` builds from this checkout (once for this file's slow tests)."""
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    with zipfile.ZipFile(next(out.glob("skillsleep-*.whl"))) as built:
        yield built


@pytest.mark.slow
def test_wheel_ships_every_prompt_and_module(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for prompt in (ROOT / "core" / "models" / "prompts").glob("*.md"):
        assert f"skillsleep/core/models/prompts/{prompt.name}" in names
    styles = list((ROOT / "core" / "report" / "styles").glob("*.css"))  # report.html's style sheet
    assert styles and all(f"skillsleep/core/report/styles/{style.name}" in names for style in styles)
    for layer in ("core", "harnesses", "slash_commands"):
        for module in (ROOT / layer).rglob("*.py"):
            assert f"skillsleep/{module.relative_to(ROOT).as_posix()}" in names
    assert not any(n.startswith(("tests/", "bench/", "core/", "cron/")) for n in names)
    # this pack's own skill, for `skillsleep install`: the root SKILL.md's bytes, not a link to it
    assert wheel.read("skillsleep/harnesses/pack/SKILL.md") == (ROOT / "SKILL.md").read_bytes()
    samples = [p for p in (ROOT / "slash_commands" / "demo").rglob("*") if p.is_file()]  # `skillsleep demo`'s
    assert len(samples) > 10
    for sample in samples:
        assert f"skillsleep/{sample.relative_to(ROOT).as_posix()}" in names


@pytest.mark.slow
def test_wheel_ships_the_cron_script_executable_and_its_templates(wheel: zipfile.ZipFile) -> None:
    for path in (p for p in (ROOT / "cron").iterdir() if p.is_file()):
        info = wheel.getinfo(f"skillsleep/cron/{path.name}")
        assert wheel.read(info) == path.read_bytes()
    script = wheel.getinfo("skillsleep/cron/run_sleep_cron.sh")
    assert (script.external_attr >> 16) & 0o111 == 0o111  # pip installs it executable


def test_prompt_templates_load_from_the_package() -> None:
    from importlib import resources

    folder = resources.files("skillsleep.core.models") / "prompts"
    names = {p.name for p in folder.iterdir()}
    assert {"reflect_system.md", "reflect_user.md", "merge_system.md", "rank_system.md"} <= names


def test_the_report_style_sheet_loads_from_the_package() -> None:
    from importlib import resources

    css = (resources.files("skillsleep.core.report") / "styles" / "report.css").read_text(encoding="utf-8")
    assert css.startswith("body{") and "svg.chart" in css


def test_the_cron_script_is_found_in_the_package() -> None:
    from importlib import resources

    script = resources.files("skillsleep.cron") / "run_sleep_cron.sh"
    assert script.read_text(encoding="utf-8").startswith("#!/bin/sh\n")


@pytest.mark.slow
def test_wheel_ships_every_file_of_the_agent_plugins(wheel: zipfile.ZipFile) -> None:
    """plugins/claude-code and plugins/codex, hidden folders (.claude-plugin, .codex-plugin) included."""
    bundled = [p for agent in ("claude-code", "codex") for p in (ROOT / "plugins" / agent).rglob("*") if p.is_file()]
    assert any(".claude-plugin" in p.parts for p in bundled) and any(".codex-plugin" in p.parts for p in bundled)
    for path in bundled:
        assert wheel.read(f"skillsleep/{path.relative_to(ROOT).as_posix()}") == path.read_bytes()


def test_the_agent_plugins_are_found_in_the_package() -> None:
    from importlib import resources

    root = resources.files("skillsleep.plugins")
    assert json.loads((root / "claude-code" / ".claude-plugin" / "plugin.json").read_text())["name"] == "skillsleep"
    assert (
        (root / "codex" / "skills" / "sleep" / "SKILL.md").read_text(encoding="utf-8").startswith("---\nname: sleep\n")
    )


@pytest.mark.slow
def test_wheel_ships_the_openclaw_plugin_byte_for_byte(wheel: zipfile.ZipFile) -> None:
    folder = ROOT / "plugins" / "openclaw"
    files = [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert {"index.js", "openclaw.plugin.json", "config.json", "SKILL.md"} <= {p.name for p in files}
    for path in files:
        assert wheel.read(f"skillsleep/plugins/{path.relative_to(ROOT / 'plugins').as_posix()}") == path.read_bytes()
