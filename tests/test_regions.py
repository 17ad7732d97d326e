"""Protected regions: markers pair up strictly (a stray, unbalanced, nested or duplicated marker is
refused with its line, never widened into a region), a region written into a section of an
AGENTS.md stays inside that section, and nights update it in place. Unit tests on `Skill` and
`SkillTarget`, then whole nights (`run_night`, scripted backend, chat harness) with adopt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from region_kit import Nights, file_target, guidance, rule

from skillsleep.core.document.regions import RegionError
from skillsleep.core.document.sections import find_section
from skillsleep.core.document.skill import Skill, begin_marker, end_marker
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.train.edits import structure_problems
from skillsleep.slash_commands.cli import main

BEGIN, END = begin_marker("slow-update"), end_marker("slow-update")
A_BEGIN, A_END = begin_marker("appendix"), end_marker("appendix")
REGION = f"{BEGIN}\n## Guidance from earlier epochs\n- Old.\n{END}\n"
USER = "# Habits\n\n- Mine.\n\n## Output\n\nBe brief.\n"
AGENTS = "# Project\n\n## Testing\n\nRun pytest.\n\n## Output\n\nBe brief.\n"


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sessions")


# --- markers pair up strictly ----------------------------------------------------------------------


def test_stray_begin_marker_is_not_widened_into_a_region() -> None:
    skill = Skill.parse(f"# Habits\n\n{BEGIN}\n- Mine.\n\n## Output\n\nBe brief.\n\n{REGION}")
    assert skill.region_span("slow-update") is None and skill.region("slow-update") == ""
    with pytest.raises(
        RegionError,
        match=r"line 10: `<!-- skillsleep:slow-update:begin -->` is inside the slow-update region begun on line 3",
    ):
        skill.with_region("slow-update", "- New.")
    assert "- Mine." in skill.editable_lines() and "## Output" in skill.editable_lines()


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        (f"# T\n{BEGIN}\n- Mine.\n", 2, f"`{BEGIN}` has no `{END}` after it"),
        (f"# T\n- Mine.\n{END}\n", 3, f"`{END}` ends no slow-update region begun before it"),
        (
            f"# T\n{BEGIN}\n{A_BEGIN}\n- x\n{A_END}\n{END}\n",
            3,
            f"`{A_BEGIN}` is inside the slow-update region begun on line 2",
        ),
        (f"# T\n{REGION}{REGION}", 6, "begins a second slow-update region (the first begins on line 2)"),
        (f"---\nname: t\n---\n# T\n{A_END}\n", 5, "ends no appendix region"),
    ],
    ids=["unclosed", "end-without-begin", "nested", "duplicated", "after-frontmatter"],
)
def test_markers_that_do_not_pair_up_are_refused_with_their_line(text: str, line: int, why: str) -> None:
    skill = Skill.parse(text)
    assert skill.region_span("slow-update") is None and skill.region_span("appendix") is None
    problems = skill.region_problems()
    assert any(p.startswith(f"line {line}: ") and why in p for p in problems), problems
    with pytest.raises(RegionError, match="delete the stray marker lines"):
        skill.check_regions("SKILL.md")


def test_marker_lines_stay_protected_even_when_they_do_not_pair_up() -> None:
    skill = Skill.parse(f"# T\n{BEGIN}\n- Mine.\n")
    assert skill.protected_line_indexes() == {1} and skill.editable_lines() == ["# T", "- Mine.", ""]


def test_a_marker_quoted_inside_a_line_is_plain_text() -> None:
    skill = Skill.parse(f"# T\nWrite `{BEGIN}` by hand only in pairs.\n")
    assert skill.region_problems() == [] and skill.with_region("slow-update", "- G.").region("slow-update") == "- G."


def test_a_region_is_updated_in_place_keeping_its_title_as_written() -> None:
    skill = Skill.parse(f"# T\n\n{BEGIN}\n#### Guidance from earlier epochs\n- Old.\n{END}\n\n## Next\n")
    new = skill.with_region("slow-update", "- New.")
    assert new.text == f"# T\n\n{BEGIN}\n#### Guidance from earlier epochs\n- New.\n{END}\n\n## Next\n"
    assert new.region("slow-update") == "- New."


def test_an_appended_region_keeps_the_blank_lines_that_ended_the_text() -> None:
    new = Skill.parse("\nRun pytest.\n\n").with_region("slow-update", "- G.")
    assert new.text == f"\nRun pytest.\n\n{BEGIN}\n## Guidance from earlier epochs\n- G.\n{END}\n\n"


# --- a section of an AGENTS.md ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "title"), [(1, "## Guidance"), (2, "### Guidance"), (5, "###### Guidance"), (6, "**Guidance")]
)
def test_a_region_composed_into_a_section_has_its_title_below_the_section(
    tmp_path: Path, level: int, title: str
) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes(f"{'#' * level} Testing\r\n\r\nRun pytest.\r\n\r\n{'#' * level} Output\r\n".encode())
    target = file_target(path, "Testing")
    trained = Skill.parse(target.read()).with_region("slow-update", "- G.").text
    composed = target.compose(trained)
    assert f"\r\n{title} from earlier epochs" in composed and "\n\n" not in composed.replace("\r\n", "")
    section = find_section(composed, "Testing")
    assert BEGIN in section.body and END in section.body and section.body.endswith(f"{END}\r\n\r\n")


def test_a_section_with_a_stray_marker_is_refused_naming_its_line_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text(f"# Project\n\n## Testing\n\nRun pytest.\n{BEGIN}\n\n## Output\n\n{END}\n")
    with pytest.raises(ConfigError, match=r"AGENTS.md § Testing \(lines 4-7\) .*line 6: `<!-- skillsleep:slow"):
        file_target(path, "Testing").read()
    assert file_target(path, "Project").section == "Project"  # the other sections' markers are theirs


# --- whole nights ------------------------------------------------------------------------------------


def test_a_night_refuses_a_skill_with_a_stray_marker_and_leaves_it_as_it_was(tmp_path: Path, template: Path) -> None:
    path = tmp_path / "SKILL.md"
    original = f"# Habits\n\n{BEGIN}\n- Mine.\n\n## Output\n\nBe brief.\n".encode()
    path.write_bytes(original)
    nights = Nights(tmp_path, template)
    with pytest.raises(RegionError, match=r"line 3: `<!-- skillsleep:slow-update:begin -->` has no `<!-- skill"):
        nights.night(1, file_target(path))
    assert path.read_bytes() == original and nights.proposals.list() == []


def test_a_stray_begin_marker_never_lets_a_slow_update_delete_the_users_lines(tmp_path: Path, template: Path) -> None:
    """Defect 1 of issue 24: night 1 appended a real region after a stray begin marker, and night 2's
    slow update replaced everything from the stray marker on — the user's lines and `## Output`."""
    path = tmp_path / "SKILL.md"
    original = f"# Habits\n\n{BEGIN}\n- Mine.\n\n## Output\n\nBe brief.\n"
    path.write_text(original)
    nights = Nights(tmp_path, template)
    for k in (1, 2):
        try:
            result = nights.night(k, file_target(path))
        except ConfigError:
            continue
        if result.proposal:
            nights.adopt(result.proposal)
    text = path.read_text()
    assert "- Mine.\n\n## Output\n\nBe brief.\n" in text and text.count(BEGIN) == 1


def test_a_region_in_a_section_stays_inside_it_and_nights_update_it_in_place(tmp_path: Path, template: Path) -> None:
    """Defect 2 of issue 24: `--skill AGENTS.md#Testing` over three nights nested three regions."""
    path = tmp_path / "AGENTS.md"
    path.write_text(AGENTS)
    nights = Nights(tmp_path, template)
    for k in (1, 2, 3):
        result = nights.night(k, file_target(path, "Testing"))
        assert result.outcome == "accepted" and result.proposal, result.reason
        nights.adopt(result.proposal)
    text = path.read_text()
    rules = "".join(f"{rule(k)}\n" for k in (1, 2, 3))
    region = f"{BEGIN}\n### Guidance from earlier epochs\n- {guidance(3)}\n{END}\n"
    assert text == f"# Project\n\n## Testing\n\nRun pytest.\n{rules}\n{region}\n## Output\n\nBe brief.\n"


def test_skillsleep_train_refuses_a_seed_skill_whose_markers_do_not_pair_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    (tmp_path / "SKILL.md").write_text(f"# Answers\n\n{REGION}- Mine.\n{END}\n")
    task = {"id": "q0", "prompt": "What is 2+2?", "checks": [{"type": "contains", "value": "4"}]}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    (tmp_path / "t.json").write_text(json.dumps([{"match": "[\\s\\S]", "reply": "4"}]))
    (tmp_path / "run.toml").write_text(
        '[run]\nname = "r"\n[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'
        f'[target]\nbackend = "scripted:{tmp_path / "t.json"}"\n[optimizer]\nbackend = "scripted:{tmp_path / "t.json"}"\n'
    )
    result = CliRunner().invoke(main, ["train", "--config", str(tmp_path / "run.toml")])
    assert (
        result.exit_code == 2 and "line 8: `<!-- skillsleep:slow-update:end -->` ends no slow-update" in result.stderr
    )
    assert not (tmp_path / "runs").exists()


def test_a_partial_adopt_that_would_split_a_region_is_refused() -> None:
    base = "# T\n\n- Mine.\n"
    candidate = Skill.parse(base).with_region("slow-update", "- G.").text
    assert structure_problems(base, candidate, candidate) == []
    half = base + f"\n{BEGIN}\n## Guidance from earlier epochs\n- G.\n"
    assert any("lose its pair" in p and "line 5" in p for p in structure_problems(base, candidate, half))


def test_markers_quoted_in_a_code_block_are_plain_text_and_not_the_nights_region() -> None:
    example = f"# T\n\nRegions look like this:\n\n```\n{BEGIN}\n- example\n{END}\n```\n"
    skill = Skill.parse(example)
    assert skill.region_problems() == [] and skill.region_span("slow-update") is None
    new = skill.with_region("slow-update", "- G.")
    assert new.text.startswith(example) and new.region("slow-update") == "- G."
    assert Skill.parse(f"# T\n```\n{BEGIN}\n```\n").region_problems() == []  # half an example is text too


def test_a_fence_left_open_hides_no_marker() -> None:
    skill = Skill.parse("# T\n```\nnever closed\n").with_region("slow-update", "- G.")
    assert skill.region("slow-update") == "- G." and skill.with_region("slow-update", "- H.").text.count(BEGIN) == 1


def test_a_section_heading_on_the_first_line_after_a_byte_order_mark_is_found(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_bytes("\ufeff## Testing\r\n\r\nRun pytest.\r\n## Output\r\n".encode())
    target = file_target(path, "Testing")
    assert target.read() == "\r\nRun pytest.\r\n"
    composed = target.compose(Skill.parse(target.read()).with_region("slow-update", "- G.").text)
    assert composed.startswith("\ufeff## Testing\r\n\r\nRun pytest.\r\n\r\n<!--") and composed.endswith(
        "\r\n## Output\r\n"
    )
