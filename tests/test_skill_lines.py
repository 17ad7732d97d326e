"""Lines of a skill: their list style and when two of them say the same."""

from __future__ import annotations

from skillsleep.core.document.skill import Skill
from skillsleep.core.document.skill_lines import in_style, key, neighbours, repeated, unstated


def test_key_ignores_marker_spacing_case_and_a_final_full_stop() -> None:
    assert key("- Cite  the source.") == key("3) cite the SOURCE") == key("Cite the source") == "cite the source"
    assert key("Cite the sources.") != key("Cite the source.")


def test_repeated_skips_blank_lines_fences_and_fenced_code() -> None:
    lines = ["# T", "", "- Be brief.", "```", "x = 1", "```", "", "```", "x = 1", "```", "---", "---", "be brief"]
    assert repeated(lines) == ["be brief"]


def test_in_style_follows_the_neighbour_before_then_after() -> None:
    assert in_style(["Be kind."], "- Be brief.", "Plain.") == ["- Be kind."]
    assert in_style(["Be kind."], "Plain.", "* Be brief.") == ["* Be kind."]
    assert in_style(["- Be kind."], "Plain.", None) == ["Be kind."]
    assert in_style(["- Be kind."], None, None) == ["- Be kind."]


def test_in_style_numbers_after_the_item_before_and_from_the_item_after() -> None:
    assert in_style(["a", "b"], "7. x", None) == ["8. a", "9. b"]
    assert in_style(["a"], "Steps:", "1) x") == ["1) a"]


def test_neighbours_stay_inside_the_section_and_outside_protected_lines() -> None:
    lines = ["## A", "- one", "", "## B", "two", "<!-- region -->"]
    assert neighbours(lines, 2, set()) == ("- one", None)
    assert neighbours(lines, 5, {5}) == ("two", None)
    assert neighbours(lines, 1, set()) == (None, "- one")


def test_unstated_drops_guidance_the_body_or_the_reminders_already_say() -> None:
    skill = Skill.parse("# T\n\n- Be brief.\n").with_region("appendix", "- Check units.")
    guidance = "- be brief\n- Check units\n- Keep the answer line."
    assert unstated(skill, guidance, region="slow-update") == "- Keep the answer line."
    old = skill.with_region("slow-update", "- Keep the answer line.")
    assert unstated(old, guidance, region="slow-update") == "- Keep the answer line."  # its own region does not count
