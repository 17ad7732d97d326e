from __future__ import annotations

from click.testing import CliRunner

from skillsleep.slash_commands.cli import VERBS, main
from skillsleep.slash_commands.verb_group import Verbs


def test_short_help_from_source_is_the_commands_own() -> None:
    lazy = Verbs(VERBS)
    for name in VERBS:
        for limit in (45, 60):
            assert lazy.short_help(name, limit) == main.commands[name].get_short_help_str(limit), name


def test_group_help_is_the_same_before_and_after_the_verbs_are_imported() -> None:
    before = CliRunner().invoke(main, ["--help"]).output
    for name in main.commands:
        assert main.commands[name].name == name
    assert CliRunner().invoke(main, ["--help"]).output == before


def test_every_verb_is_listed_and_found() -> None:
    assert sorted(main.commands) == sorted(VERBS)
    assert len(main.commands) == len(VERBS)
    assert main.commands.get("nosuch") is None
