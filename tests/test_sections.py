from __future__ import annotations

import pytest

from skillsleep.core.document.sections import find_section, headings, replace_section
from skillsleep.core.shared.errors import ConfigError

AGENTS = """# Project

Intro text.

## Testing

Run `pytest -q` before every commit.

```bash
# not a heading: a shell comment
## nor this
```

### Fixtures

Use tmp_path.

## Style

Keep lines short.
"""


def test_section_body_runs_to_the_next_heading_of_the_same_level() -> None:
    sec = find_section(AGENTS, "Testing")
    assert sec.level == 2
    assert sec.heading == "## Testing"
    assert sec.title == "Testing"
    assert sec.body.startswith("\nRun `pytest -q`")
    assert "### Fixtures\n\nUse tmp_path.\n\n" in sec.body  # a deeper heading stays inside
    assert "## Style" not in sec.body
    lines = AGENTS.splitlines(keepends=True)
    assert lines[sec.line] == "## Testing\n"
    assert "".join(lines[sec.start : sec.end]) == sec.body


def test_headings_inside_fenced_code_blocks_do_not_count() -> None:
    titles = [t for _, _, t in headings(AGENTS)]
    assert titles == ["Project", "Testing", "Fixtures", "Style"]
    with pytest.raises(ConfigError, match="no heading 'nor this'"):
        find_section(AGENTS, "nor this")


def test_tilde_fences_hide_headings_until_closed_by_the_same_fence() -> None:
    text = "# A\n~~~~\n# inside\n```\n# still inside\n~~~~\n# B\nb\n"
    assert [t for _, _, t in headings(text)] == ["A", "B"]


def test_top_level_section_includes_its_subsections_up_to_eof() -> None:
    sec = find_section(AGENTS, "project")
    assert sec.level == 1
    assert sec.end == len(AGENTS.splitlines())
    assert "## Style\n\nKeep lines short.\n" in sec.body


def test_heading_match_ignores_case_whitespace_leading_hashes_and_closing_hashes() -> None:
    text = "#  Code   Review ##\nbody\n"
    assert find_section(text, "code review").body == "body\n"
    assert find_section(text, "# CODE REVIEW").body == "body\n"
    assert find_section(text, "  ##  Code Review  ").title == "Code Review"


def test_a_title_that_itself_starts_with_a_hash_is_found() -> None:
    assert find_section("# #1 rule\nbe kind\n", "#1 rule").body == "be kind\n"


def test_missing_heading_lists_the_headings_that_exist() -> None:
    with pytest.raises(ConfigError) as err:
        find_section(AGENTS, "Deploy", source="AGENTS.md")
    message = str(err.value)
    assert "AGENTS.md has no heading 'Deploy'" in message
    assert "# Project, ## Testing, ### Fixtures, ## Style" in message


def test_empty_heading_says_to_write_one() -> None:
    with pytest.raises(ConfigError, match="no heading given"):
        find_section(AGENTS, "  ")


def test_duplicate_heading_names_the_lines_and_asks_for_a_more_specific_one() -> None:
    text = "# Notes\n\n## Testing\na\n\n## Testing\nb\n"
    with pytest.raises(ConfigError) as err:
        find_section(text, "Testing", source="AGENTS.md")
    message = str(err.value)
    assert "2 times (lines 3, 6)" in message
    assert "more specific heading" in message
    assert "rename one" in message


def test_leading_hashes_pick_one_of_several_levels() -> None:
    text = "# Testing\nintro\n## Testing\ndetail\n"
    with pytest.raises(ConfigError, match="include the #'s"):
        find_section(text, "Testing")
    assert find_section(text, "## Testing").body == "detail\n"
    assert find_section(text, "# Testing").body == "intro\n## Testing\ndetail\n"


def test_replace_changes_only_the_body() -> None:
    out = replace_section(AGENTS, "Testing", "\nRun `make test`.\n\n")
    before, after = AGENTS.split("## Testing\n", 1)
    assert out.startswith(before + "## Testing\n\nRun `make test`.\n\n## Style\n")
    assert out.endswith(after.split("## Style", 1)[1])
    assert find_section(out, "Testing").body == "\nRun `make test`.\n\n"


def test_replace_adds_a_trailing_newline_so_the_next_heading_keeps_its_line() -> None:
    out = replace_section("# A\nold\n# B\nb\n", "A", "new")
    assert out == "# A\nnew\n# B\nb\n"


def test_replace_with_an_empty_body_keeps_the_headings() -> None:
    assert replace_section("# A\nold\n# B\nb\n", "A", "") == "# A\n# B\nb\n"


def test_crlf_file_keeps_crlf_everywhere_and_round_trips() -> None:
    text = AGENTS.replace("\n", "\r\n")
    sec = find_section(text, "Testing")
    assert sec.body.startswith("\r\nRun")
    assert replace_section(text, "Testing", sec.body) == text
    out = replace_section(text, "Style", "one\ntwo\n")
    assert out == text.replace("Keep lines short.", "one\r\ntwo").replace("## Style\r\n\r\n", "## Style\r\n")
    assert "\n" not in out.replace("\r\n", "")


def test_untouched_parts_keep_mixed_line_endings() -> None:
    text = "# A\r\nold\n# B\r\nb\n"
    out = replace_section(text, "B", "new\n")
    assert out == "# A\r\nold\n# B\r\nnew\r\n"


def test_missing_final_newline_stays_missing() -> None:
    text = "# A\na\n## Last\nno newline at the end"
    assert replace_section(text, "Last", find_section(text, "Last").body) == text
    assert replace_section(text, "Last", "changed\n") == "# A\na\n## Last\nchanged"
    assert replace_section(text, "A", "x") == "# A\nx"  # `# A` holds `## Last`: all of it is replaced
    two = "# A\na\n# B\nb"
    assert replace_section(two, "A", "x") == "# A\nx\n# B\nb"


def test_heading_on_the_last_line_without_newline_gets_one_before_a_new_body() -> None:
    assert replace_section("# A\na\n# B", "B", "b") == "# A\na\n# B\nb"
    assert replace_section("# A\na\n# B", "B", "") == "# A\na\n# B"


def test_every_section_round_trips_byte_for_byte() -> None:
    for text in (AGENTS, AGENTS.replace("\n", "\r\n"), AGENTS.rstrip("\n")):
        for _, _, title in headings(text):
            assert replace_section(text, title, find_section(text, title).body) == text
