"""The managed block in a user's crontab: replaced in place, removed alone, every other byte kept."""

from __future__ import annotations

import pytest

from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands.cron_table import (
    BEGIN,
    END,
    When,
    cron_line,
    read_block,
    remove_block,
    set_block,
)

USER = "# my jobs\r\nMAILTO=me@example.com\n\n*/5 * * * * /usr/bin/backup --quiet   \n"


def test_a_block_is_appended_after_the_users_lines_and_read_back() -> None:
    text = set_block(USER, ["0 3 * * * /bin/night"])
    assert text == USER + f"{BEGIN}\n0 3 * * * /bin/night\n{END}\n"
    assert read_block(text) == ["0 3 * * * /bin/night"]
    assert read_block(USER) is None


def test_a_second_block_replaces_the_first_in_place_and_keeps_every_other_byte() -> None:
    once = set_block(USER, ["0 3 * * * /bin/night --one"]) + "30 1 * * 0 /bin/weekly\n"
    twice = set_block(once, ["15 4 * * * /bin/night --two"])
    assert twice == USER + f"{BEGIN}\n15 4 * * * /bin/night --two\n{END}\n" + "30 1 * * 0 /bin/weekly\n"
    assert twice.count(BEGIN) == 1


def test_removing_the_block_gives_back_the_users_text_exactly() -> None:
    for original in (USER, "", "0 1 * * * /bin/a", "junk\r\n\r\n"):
        assert remove_block(set_block(original, ["0 3 * * * /bin/night"])) == (
            original + "\n" if original and not original.endswith("\n") else original
        )
    middle = "a\n" + f"{BEGIN}\nx\n{END}\n" + "b without newline"
    assert remove_block(middle) == "a\nb without newline"
    assert remove_block(USER) == USER


def test_a_crontab_without_a_final_newline_gets_one_before_the_block() -> None:
    assert (
        set_block("0 1 * * * /bin/a", ["0 3 * * * /bin/b"]) == f"0 1 * * * /bin/a\n{BEGIN}\n0 3 * * * /bin/b\n{END}\n"
    )


def test_markers_with_crlf_or_trailing_spaces_are_still_found() -> None:
    text = f"keep\r\n{BEGIN}\r\n0 3 * * * /bin/old\r\n{END}  \r\nafter\r\n"
    assert read_block(text) == ["0 3 * * * /bin/old"]
    assert set_block(text, ["0 4 * * * /bin/new"]) == f"keep\r\n{BEGIN}\n0 4 * * * /bin/new\n{END}\nafter\r\n"


def test_a_block_left_open_is_an_error_that_names_the_line_and_the_fix() -> None:
    broken = f"a\n{BEGIN}\n0 3 * * * /bin/night\n"
    for edit in (lambda t: set_block(t, ["x"]), remove_block, read_block):
        with pytest.raises(ConfigError, match=r"line 2 .*without its end line .*crontab -e"):
            edit(broken)
    with pytest.raises(ConfigError, match=r"line 1 .*without"):
        read_block(f"{END}\n")


def test_at_is_a_time_of_day_and_cron_takes_five_fields() -> None:
    assert When.daily("03:00").fields == "0 3 * * *"
    assert When.daily("3:07").fields == "7 3 * * *"
    assert When.daily("23:59").describe() == "23:59 daily"
    assert When.cron("*/30 2-5 * * mon-fri").describe() == "cron `*/30 2-5 * * mon-fri`"
    assert When.cron("@weekly").fields == "@weekly"
    for bad in ("24:00", "12:60", "noon", "3", "03:00:00", "-1:00", ""):
        with pytest.raises(ConfigError, match=r"--at .*HH:MM from 00:00 to 23:59"):
            When.daily(bad)
    for bad in ("0 3 * *", "0 3 * * * *", "@reboot", "0 3 * * ; rm", "0 3 * * %"):
        with pytest.raises(ConfigError, match=r"--cron .*five fields"):
            When.cron(bad)


def test_an_installed_line_is_read_back_as_when_it_runs() -> None:
    assert When.parse("0 3 * * * cd /x && run").describe() == "03:00 daily"
    assert When.parse("5 23 * * 1 run").describe() == "cron `5 23 * * 1`"
    assert When.parse("@daily run").describe() == "cron `@daily`"


def test_a_cron_line_escapes_percent_signs_which_cron_would_turn_into_newlines() -> None:
    line = cron_line(When.daily("03:00"), "run --preferences '100% sure'")
    assert line == "0 3 * * * run --preferences '100\\% sure'"
