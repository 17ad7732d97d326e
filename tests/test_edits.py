from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillsleep.core.document.skill import Skill
from skillsleep.core.document.skill_lines import repeated
from skillsleep.core.shared.records import Edit
from skillsleep.core.train.edits import MAX_NOTES, EditLimits, apply_edits, named_fix

FRONT = "---\nname: demo\ndescription: 'a demo: skill'   \n---\n"
DOC = (
    FRONT
    + """# Demo

## Rules
- Always answer briefly.
- Cite the source.

## Output
End with `ANSWER: <n>`.
"""
)

LIMITS = EditLimits()


def skill() -> Skill:
    return Skill.parse(DOC).with_region("slow-update", "- Keep the tone neutral.")


def apply(*edits: Edit, limits: EditLimits = LIMITS, base: Skill | None = None):
    return apply_edits(base or skill(), list(edits), limits)


def only_reason(result) -> str:
    assert len(result.skipped) == 1, result.skipped
    return result.skipped[0].reason


# --- the three operations ----------------------------------------------------------------------


def test_add_without_target_appends_at_end_of_body_before_regions() -> None:
    result = apply(Edit(op="add", content="Show your work."))
    assert result.applied and not result.skipped
    text = result.skill.text
    assert text.index("End with `ANSWER: <n>`.\nShow your work.\n") < text.index("<!-- skillsleep:slow-update:begin")
    assert result.skill.region("slow-update") == skill().region("slow-update")


def test_add_after_target_inserts_right_after_that_line() -> None:
    result = apply(Edit(op="add", target="- Always answer briefly.", content="- Use metric units."))
    assert "- Always answer briefly.\n- Use metric units.\n- Cite the source.\n" in result.skill.text


def test_add_with_unknown_target_falls_back_to_end_of_body() -> None:
    result = apply(Edit(op="add", target="- not in the skill", content="Check the units."))
    assert result.applied
    assert "End with `ANSWER: <n>`.\nCheck the units.\n" in result.skill.text


def test_add_may_write_several_lines() -> None:
    result = apply(Edit(op="add", target="- Cite the source.", content="- one\n- two"))
    assert "- Cite the source.\n- one\n- two\n" in result.skill.text


def test_add_of_a_line_already_present_is_skipped() -> None:
    result = apply(Edit(op="add", content="- Cite the source."))
    assert "already has this line" in only_reason(result)
    assert result.skill == skill()


def test_add_to_a_body_without_editable_text_goes_before_regions() -> None:
    base = Skill.parse(FRONT).with_region("appendix", "- note")
    result = apply(Edit(op="add", content="First rule."), base=base)
    assert result.skill.body.startswith("First rule.\n\n<!-- skillsleep:appendix:begin -->")


def test_delete_removes_exactly_the_matching_line() -> None:
    result = apply(Edit(op="delete", target="- Cite the source."))
    assert "Cite the source" not in result.skill.text
    assert "- Always answer briefly.\n\n## Output" in result.skill.text


def test_delete_does_not_leave_a_double_blank_line() -> None:
    base = Skill.parse("# T\n\nlonely line\n\nnext\n")
    result = apply(Edit(op="delete", target="lonely line"), base=base)
    assert result.skill.text == "# T\n\nnext\n"


def test_replace_swaps_the_matching_line() -> None:
    result = apply(Edit(op="replace", target="- Cite the source.", content="- Cite the source with a link."))
    assert "- Cite the source with a link.\n" in result.skill.text
    assert "- Cite the source.\n" not in result.skill.text


def test_replace_identical_content_is_skipped() -> None:
    result = apply(Edit(op="replace", target="- Cite the source.", content="- Cite the source."))
    assert "identical" in only_reason(result)


def test_replace_without_content_is_skipped_with_a_hint() -> None:
    result = apply(Edit(op="replace", target="- Cite the source."))
    assert "needs content" in only_reason(result)


# --- matching ---------------------------------------------------------------------------------


def test_target_matches_ignoring_trailing_whitespace() -> None:
    result = apply(Edit(op="delete", target="- Cite the source.   "))
    assert result.applied


def test_target_matches_exactly_not_by_substring() -> None:
    result = apply(Edit(op="delete", target="Cite the"))
    assert "was not found in the skill: 'Cite the'" in only_reason(result)


def test_target_without_list_marker_matches_the_one_bulleted_line() -> None:
    result = apply(Edit(op="replace", target="Cite the source.", content="Cite two sources."))
    assert result.applied
    assert "- Cite two sources.\n" in result.skill.text  # the bullet is kept


def test_not_found_target_is_skipped_with_actionable_reason() -> None:
    result = apply(Edit(op="replace", target="- Never guess.", content="- Guess."))
    reason = only_reason(result)
    assert reason.startswith("the line to replace was not found in the skill: '- Never guess.'")
    assert "copy the target line exactly" in reason
    assert result.skill == skill()


def test_ambiguous_target_is_skipped() -> None:
    base = Skill.parse("# T\n- same\n- other\n- same\n")
    result = apply(Edit(op="delete", target="- same"), base=base)
    assert "appears 2 times" in only_reason(result)
    assert result.skill == base


def test_replace_of_protected_line_is_skipped() -> None:
    result = apply(Edit(op="replace", target="- Keep the tone neutral.", content="- Be playful."))
    assert "protected region" in only_reason(result)
    assert result.skill == skill()


def test_delete_of_region_marker_is_skipped() -> None:
    result = apply(Edit(op="delete", target="<!-- skillsleep:slow-update:begin -->"))
    assert "protected region" in only_reason(result)


def test_frontmatter_line_cannot_be_edited() -> None:
    result = apply(Edit(op="replace", target="name: demo", content="name: other"))
    assert "frontmatter" in only_reason(result)
    assert result.skill == skill()


def test_add_after_a_protected_line_does_not_write_into_the_region() -> None:
    result = apply(Edit(op="add", target="- Keep the tone neutral.", content="- Sneaky."))
    assert result.skill.region("slow-update") == "- Keep the tone neutral."
    assert "Sneaky." in result.skill.editable_lines()  # at the end of the plain Output section, plain


def test_multiline_target_is_skipped() -> None:
    result = apply(Edit(op="delete", target="- Always answer briefly.\n- Cite the source."))
    assert "single line" in only_reason(result)


# --- headings and markers ---------------------------------------------------------------------


def test_content_with_a_heading_is_skipped() -> None:
    result = apply(Edit(op="add", content="## New section\n- rule"))
    assert only_reason(result).startswith("edits may not add sections")


def test_a_bare_heading_line_is_refused_with_how_to_quote_it() -> None:
    reason = only_reason(apply(Edit(op="add", content="## Summary")))
    assert reason.startswith("edits may not add sections")
    assert (
        "write the rule that quotes it in backticks instead: «Every reply must include the heading `## Summary`.»"
        in reason
    )
    assert named_fix(reason) == "Every reply must include the heading `## Summary`."


@pytest.mark.parametrize(
    ("content", "fix"),
    [
        (
            "## Findings\nScore:",
            "Every reply must include the heading `## Findings` and a line starting with `Score:`.",
        ),
        (
            "- Be thorough.\n## Findings\nVerdict: <pass or fail>",
            "- Be thorough.\nEvery reply must include the heading `## Findings` and the line `Verdict: <pass or fail>`.",
        ),
    ],
)
def test_a_refused_heading_names_the_whole_content_quoted_as_its_fix(content: str, fix: str) -> None:
    reason = only_reason(apply(Edit(op="add", content=content)))
    assert named_fix(reason) == fix
    assert not apply(Edit(op="add", content=fix)).skipped  # the named fix lands


def test_a_refusal_that_names_no_fix_gives_none() -> None:
    reason = only_reason(apply(Edit(op="replace", target="- Not in the skill.", content="- Cite.")))
    assert named_fix(reason) is None
    fenced = only_reason(apply(Edit(op="add", content="```\nx\n```\n## Summary")))
    assert "Start every reply with `## Summary`" in fenced and named_fix(fenced) is None


def test_a_heading_quoted_in_backticks_is_literal_text_not_a_section() -> None:
    for content in ("Start every reply with `## Summary`.", "`## Summary`", "- Reply with:\n```\n## Summary\n```"):
        result = apply(Edit(op="add", target="- Cite the source.", content=content))
        assert not result.skipped, (content, result.skipped)
        assert content.split("\n")[-1] in result.skill.text


def test_content_that_leaves_a_code_fence_open_is_refused() -> None:
    reason = only_reason(apply(Edit(op="add", content="Reply with:\n```\n## Summary")))
    assert "opens a code fence" in reason and "close it" in reason


def test_a_heading_line_inside_a_code_block_of_the_skill_is_an_ordinary_line() -> None:
    base = Skill.parse("# Demo\n\n## Output\nReply with:\n```\n## Summary\n```\n")
    result = apply(Edit(op="replace", target="## Summary", content="Summary:"), base=base)
    assert not result.skipped and "```\nSummary:\n```" in result.skill.text
    assert not apply(Edit(op="delete", target="## Summary"), base=base).skipped


def test_a_fence_that_would_hide_a_later_heading_is_refused() -> None:
    base = Skill.parse("# Demo\n\n## Output\nReply with:\n```\nfirst\n```\n\n## After\n- a rule\n")
    result = apply(Edit(op="add", target="first", content="```\n~~~\n```"), base=base)
    assert "would change the skill's sections" in only_reason(result)


def test_replacing_the_whole_skill_is_refused_with_a_call_for_one_line() -> None:
    whole = DOC.split("---\n")[-1].replace("briefly", "in one line")
    for edit in (
        Edit(op="replace", target="SKILL", content="- Answer in one line."),
        Edit(op="add", content="# Demo\n- Answer in one line."),
        Edit(op="replace", target="- Always answer briefly.", content=whole[:400]),
    ):
        reason = only_reason(apply(edit, limits=EditLimits(max_content_lines=20)))
        assert "never the whole skill; propose one line instead" in reason, (edit, reason)


def test_deleting_a_heading_is_refused() -> None:
    result = apply(Edit(op="delete", target="## Rules"))
    assert "edits may not delete whole sections" in only_reason(result)


def test_replacing_a_heading_is_refused() -> None:
    result = apply(Edit(op="replace", target="## Rules", content="Rules, loosely"))
    assert "headings" in only_reason(result)


def test_content_with_a_region_marker_is_skipped() -> None:
    result = apply(Edit(op="add", content="<!-- skillsleep:appendix:end -->"))
    assert "region markers" in only_reason(result)


# --- limits -----------------------------------------------------------------------------------


def test_edits_past_max_edits_are_skipped() -> None:
    edits = [Edit(op="add", content=f"Rule {i}.") for i in range(4)]
    result = apply(*edits, limits=EditLimits(max_edits=2))
    assert [e.content for e in result.applied] == ["Rule 0.", "Rule 1."]
    assert [r.reason for r in result.skipped] == ["only the first 2 edits of a step are applied"] * 2


def test_content_over_char_limit_is_skipped() -> None:
    result = apply(Edit(op="add", content="x" * 51), limits=EditLimits(max_content_chars=50))
    assert "51 characters" in only_reason(result)


def test_content_over_line_limit_is_skipped() -> None:
    result = apply(Edit(op="add", content="a\nb\nc"), limits=EditLimits(max_content_lines=2))
    assert "3 lines" in only_reason(result)


def test_growth_past_max_skill_chars_is_skipped_but_shrinking_is_allowed() -> None:
    cap = len(skill().text)
    result = apply(
        Edit(op="add", content="One more rule."),
        Edit(op="delete", target="- Cite the source."),
        limits=EditLimits(max_skill_chars=cap),
    )
    assert "over its cap" in result.skipped[0].reason
    assert [e.op for e in result.applied] == ["delete"]


# --- execution-lapse notes --------------------------------------------------------------------


def test_execution_lapse_goes_to_appendix_and_leaves_body_unchanged() -> None:
    base = skill()
    result = apply(Edit(op="add", content="Re-read the question before answering.", kind="execution_lapse"))
    assert result.applied
    assert result.skill.region("appendix") == "- Re-read the question before answering."
    assert result.skill.without_regions().text.rstrip() == base.without_regions().text.rstrip()
    assert result.skill.region("slow-update") == base.region("slow-update")


def test_execution_lapse_notes_are_deduplicated() -> None:
    note = Edit(op="add", content="Check units.", kind="execution_lapse")
    same = Edit(op="add", content="- check   UNITS.", kind="execution_lapse")
    result = apply(note, same)
    assert result.skill.region("appendix") == "- Check units."
    assert "already hold this note" in only_reason(result)


def test_execution_lapse_notes_keep_only_the_newest() -> None:
    edits = [Edit(op="add", content=f"note {i}", kind="execution_lapse") for i in range(MAX_NOTES + 3)]
    result = apply(*edits, limits=EditLimits(max_edits=100))
    notes = result.skill.region("appendix").split("\n")
    assert len(notes) == MAX_NOTES
    assert notes[0] == "- note 3" and notes[-1] == f"- note {MAX_NOTES + 2}"


# --- whole-application properties -------------------------------------------------------------


def test_frontmatter_is_byte_identical_after_edits() -> None:
    result = apply(
        Edit(op="add", content="New rule."),
        Edit(op="delete", target="- Cite the source."),
        Edit(op="replace", target="- Always answer briefly.", content="- Answer in one line."),
        Edit(op="add", content="note", kind="execution_lapse"),
    )
    assert len(result.applied) == 4
    assert result.skill.frontmatter == FRONT
    assert result.skill.text.startswith(FRONT)


def test_later_edit_sees_earlier_results() -> None:
    result = apply(
        Edit(op="replace", target="- Cite the source.", content="- Cite two sources."),
        Edit(op="delete", target="- Cite two sources."),
    )
    assert len(result.applied) == 2
    assert "Cite" not in result.skill.text


def test_edit_on_a_line_removed_earlier_is_skipped() -> None:
    result = apply(
        Edit(op="delete", target="- Cite the source."),
        Edit(op="replace", target="- Cite the source.", content="- Cite more."),
    )
    assert [e.op for e in result.applied] == ["delete"]
    assert "was not found" in only_reason(result)


def test_input_skill_is_not_mutated() -> None:
    base = skill()
    before = base.text
    apply(Edit(op="delete", target="- Cite the source."), base=base)
    assert base.text == before


def test_a_skipped_edit_is_refused_at_stage_apply_with_the_edit_and_the_reason() -> None:
    edit = Edit(op="delete", target="- Missing line.")
    (refused,) = apply(edit).skipped
    assert refused.stage == "apply" and refused.edit is edit
    assert refused.reason.startswith("the line to delete was not found in the skill: '- Missing line.'")


# --- new lines read like the skill ------------------------------------------------------------


def test_a_plain_line_added_among_bullets_becomes_a_bullet() -> None:
    result = apply(Edit(op="add", target="- Always answer briefly.", content="Use metric units."))
    assert "- Always answer briefly.\n- Use metric units.\n- Cite the source.\n" in result.skill.text


def test_a_bullet_added_to_a_plain_section_loses_its_marker() -> None:
    result = apply(Edit(op="add", target="End with `ANSWER: <n>`.", content="* Show your work."))
    assert "End with `ANSWER: <n>`.\nShow your work.\n" in result.skill.text


def test_an_added_line_takes_the_neighbours_bullet_character_and_indent() -> None:
    base = Skill.parse("# T\n\n## Steps\n  * Read the task.\n  * Answer it.\n")
    result = apply(Edit(op="add", target="* Read the task.", content="- Check the units."), base=base)
    assert "  * Read the task.\n  * Check the units.\n  * Answer it.\n" in result.skill.text


def test_a_line_added_to_a_numbered_list_gets_the_next_number() -> None:
    base = Skill.parse("# T\n\n## Steps\n1. Read the task.\n2) Answer it.\n")
    result = apply(Edit(op="add", target="2) Answer it.", content="Check the answer.\n- Reply."), base=base)
    assert "2) Answer it.\n3) Check the answer.\n4) Reply.\n" in result.skill.text


def test_a_line_added_before_a_list_takes_the_list_style() -> None:
    base = Skill.parse("# T\n\nFollow these rules:\n\n- Be brief.\n")
    result = apply(Edit(op="add", target="Follow these rules:", content="Be kind."), base=base)
    assert "Follow these rules:\n- Be kind.\n\n- Be brief.\n" in result.skill.text


def test_a_line_under_a_bare_heading_is_kept_as_written() -> None:
    base = Skill.parse("# T\n\n## Rules\n")
    result = apply(Edit(op="add", target="## Rules", content="- Be brief."), base=base)
    assert "## Rules\n- Be brief.\n" in result.skill.text


def test_content_with_code_is_kept_as_written() -> None:
    result = apply(Edit(op="add", target="- Cite the source.", content="Reply like:\n```\nVerdict: yes\n```"))
    assert "- Cite the source.\nReply like:\n```\nVerdict: yes\n```\n" in result.skill.text


def test_a_replacement_takes_the_style_of_the_line_it_replaces() -> None:
    bulleted = apply(Edit(op="replace", target="- Cite the source.", content="Cite two sources."))
    assert "- Cite two sources.\n" in bulleted.skill.text
    plain = apply(Edit(op="replace", target="End with `ANSWER: <n>`.", content="- End with `ANSWER: n`."))
    assert "\nEnd with `ANSWER: n`.\n" in plain.skill.text


# --- no line said twice -----------------------------------------------------------------------


def test_a_line_already_present_in_another_form_is_refused_with_the_line_to_edit() -> None:
    result = apply(Edit(op="add", target="End with `ANSWER: <n>`.", content="cite   the SOURCE"))
    assert only_reason(result) == (
        "the skill already has this line: '- Cite the source.'; edit that line instead of writing it again"
    )
    assert result.skill == skill()


def test_one_repeated_line_refuses_the_whole_edit() -> None:
    result = apply(Edit(op="add", content="Show your work.\n- Always answer briefly."))
    assert "already has this line: '- Always answer briefly.'" in only_reason(result)
    assert result.skill == skill()


def test_content_that_repeats_itself_is_refused() -> None:
    result = apply(Edit(op="add", content="Show your work.\n- show your work"))
    assert "says the same line twice" in only_reason(result)


def test_a_line_of_the_guidance_region_is_not_written_into_the_body() -> None:
    result = apply(Edit(op="add", content="Keep the tone neutral."))
    assert "already has this line: '- Keep the tone neutral.'" in only_reason(result)


def test_a_replacement_may_restate_the_line_it_replaces_in_other_words() -> None:
    result = apply(Edit(op="replace", target="- Cite the source.", content="- Cite the source, always."))
    assert result.applied and "- Cite the source, always.\n" in result.skill.text


def test_a_reminder_of_a_rule_the_body_states_is_refused() -> None:
    result = apply(Edit(op="add", content="- always answer briefly", kind="execution_lapse"))
    assert only_reason(result).startswith("the skill already states this as a rule: '- Always answer briefly.'")
    assert result.skill.region("appendix") == ""


def test_a_rule_written_into_the_body_takes_its_reminder_out_of_the_appendix() -> None:
    base = skill().with_region("appendix", "- Show your work.\n- Check units.")
    result = apply(Edit(op="add", target="- Cite the source.", content="Show your work."), base=base)
    assert "- Cite the source.\n- Show your work.\n" in result.skill.text
    assert result.skill.region("appendix") == "- Check units."


def test_in_one_step_a_body_rule_and_its_reminder_land_once() -> None:
    note = Edit(op="add", content="Show your work.", kind="execution_lapse")
    rule = Edit(op="add", content="Show your work.")
    for edits in ((note, rule), (rule, note)):
        result = apply(*edits)
        assert result.skill.text.count("Show your work.") == 1
        assert not repeated(result.skill.body.split("\n"))


_LINES = ["Cite the source.", "- cite the source", "Show your work.", "1. Show your work", "Be brief.", "* be BRIEF."]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "replace", "delete", "note"]),
            st.sampled_from(["", "- Always answer briefly.", "- Cite the source.", "End with `ANSWER: <n>`."]),
            st.sampled_from(_LINES),
        ),
        max_size=8,
    )
)
def test_no_sequence_of_edits_leaves_a_line_said_twice(plan: list[tuple[str, str, str]]) -> None:
    edits = [
        Edit(op="add", content=content, kind="execution_lapse")
        if op == "note"
        else Edit(op=op, target=target or None, content=None if op == "delete" else content)  # type: ignore[arg-type]
        for op, target, content in plan
    ]
    result = apply_edits(skill(), edits, EditLimits(max_edits=8))
    assert not repeated(result.skill.body.split("\n"))
