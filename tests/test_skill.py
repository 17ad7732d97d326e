from __future__ import annotations

from skillsleep.core.document.skill import Skill, begin_marker, end_marker

DOC = """---
name: demo
description: a demo skill
---
# Demo

- Always answer briefly.
- Cite the source.
"""


def test_frontmatter_is_parsed_and_body_follows_it() -> None:
    skill = Skill.parse(DOC)
    assert skill.frontmatter == "---\nname: demo\ndescription: a demo skill\n---\n"
    assert skill.body.startswith("# Demo\n")
    assert skill.frontmatter + skill.body == skill.text


def test_document_without_frontmatter_is_all_body() -> None:
    skill = Skill.parse("# Title\n\ntext\n")
    assert skill.frontmatter == ""
    assert skill.body == "# Title\n\ntext\n"


def test_empty_frontmatter_is_recognised() -> None:
    skill = Skill.parse("---\n---\n# Title\n")
    assert skill.frontmatter == "---\n---\n"
    assert skill.body == "# Title\n"


def test_frontmatter_is_preserved_when_a_region_is_written() -> None:
    skill = Skill.parse(DOC).with_region("appendix", "- check units")
    assert skill.frontmatter == Skill.parse(DOC).frontmatter
    assert skill.text.startswith(DOC.split("# Demo")[0])


def test_missing_final_newline_is_added() -> None:
    assert Skill.parse("# T\ntext").text == "# T\ntext\n"


def test_crlf_line_endings_are_normalised() -> None:
    skill = Skill.parse(DOC.replace("\n", "\r\n"))
    assert "\r" not in skill.text
    assert skill == Skill.parse(DOC)
    assert skill.frontmatter.startswith("---\nname: demo\n")


def test_region_is_created_at_the_end_with_markers_and_title() -> None:
    skill = Skill.parse(DOC).with_region("slow-update", "Prefer tables.")
    assert skill.text.endswith(
        f"{begin_marker('slow-update')}\n## Guidance from earlier epochs\nPrefer tables.\n{end_marker('slow-update')}\n"
    )
    assert skill.region("slow-update") == "Prefer tables."


def test_region_is_replaced_in_place_not_duplicated() -> None:
    skill = Skill.parse(DOC).with_region("appendix", "- one").with_region("appendix", "- two")
    assert skill.region("appendix") == "- two"
    assert skill.text.count(begin_marker("appendix")) == 1
    assert "- one" not in skill.text


def test_absent_region_reads_as_empty() -> None:
    skill = Skill.parse(DOC)
    assert skill.region("appendix") == ""
    assert skill.region_span("appendix") is None


def test_two_regions_are_independent() -> None:
    skill = Skill.parse(DOC).with_region("slow-update", "guide").with_region("appendix", "- note")
    skill = skill.with_region("slow-update", "guide 2")
    assert skill.region("slow-update") == "guide 2"
    assert skill.region("appendix") == "- note"


def test_editable_lines_exclude_protected_regions() -> None:
    skill = Skill.parse(DOC).with_region("appendix", "- secret note")
    editable = skill.editable_lines()
    assert "- Always answer briefly." in editable
    assert "- secret note" not in editable
    assert begin_marker("appendix") not in editable
    assert end_marker("appendix") not in editable


def test_editable_lines_exclude_frontmatter() -> None:
    assert "name: demo" not in Skill.parse(DOC).editable_lines()


def test_without_regions_drops_region_content() -> None:
    skill = Skill.parse(DOC).with_region("appendix", "- secret note").without_regions()
    assert "secret note" not in skill.text
    assert "skillsleep:" not in skill.text
    assert "- Cite the source." in skill.text


def test_hash_changes_with_text_and_is_stable() -> None:
    a = Skill.parse(DOC)
    assert a.hash == Skill.parse(DOC).hash
    assert a.hash != Skill.parse(DOC + "- More.\n").hash
    assert len(a.hash) == 16


def test_skills_with_equal_text_are_equal() -> None:
    assert Skill.parse(DOC) == Skill.parse(DOC)
    assert len({Skill.parse(DOC), Skill.parse(DOC)}) == 1
