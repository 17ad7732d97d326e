"""`schedule --cron EXPR`: the five fields are checked as crontab(5) reads them; a bad one is named
(exit 2) and nothing is installed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.cron_fields import check_cron


@pytest.mark.parametrize(
    ("expr", "named"),
    [
        ("61 3 * * *", "the minute field '61' holds a value out of range: it takes 0-59"),
        ("a b c d e", "the minute field 'a' holds 'a', which is neither a number nor a name"),
        ("0 24 * * *", "the hour field '24' holds a value out of range: it takes 0-23"),
        ("0 3 0 * *", "the day-of-month field '0' holds a value out of range: it takes 1-31"),
        ("0 3 * 13 *", "the month field '13' holds a value out of range: it takes 1-12 or jan-dec"),
        ("0 3 * * 8", "the day-of-week field '8' holds a value out of range: it takes 0-7 or sun-sat"),
        ("0 3 * * mon-fry", "the day-of-week field 'mon-fry' holds 'fry'"),
        ("5-1 3 * * *", "the minute field '5-1' holds the range '5-1', which runs backwards"),
        ("*/0 3 * * *", "the minute field '*/0' holds the step 0, which must be from 1 to 60"),
        ("5/10 3 * * *", "the minute field '5/10' puts a step after a single value"),
        ("0 3 * * 1,,2", "the day-of-week field '1,,2' is not a number, a range a-b, * or a step"),
        ("@reboot", "'@reboot' is not a cron macro"),
        ("0 3 * *", "it has 4 fields"),
    ],
)
def test_a_cron_field_cron_would_refuse_or_never_run_is_named(expr: str, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_cron(expr)
    assert named in str(caught.value) and "five fields" in str(caught.value)


def test_what_crontab_accepts_passes_single_spaced() -> None:
    for expr in ("0 3 * * *", "*/30 2-5 * * mon-fri", "0,30 1,2 1-31/2 JAN-Mar 0,7", "59 23 31 12 sun", "* * * * *"):
        assert check_cron(expr) == expr
    assert check_cron("  0   3 * *  1-5 ") == "0 3 * * 1-5"
    assert check_cron("@weekly") == "@weekly" and check_cron("@Daily") == "@daily"


def test_schedule_refuses_an_out_of_range_cron_field_with_exit_2_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    for expr, field in (("61 3 * * *", "minute field '61'"), ("a b c d e", "minute field 'a'")):
        result = CliRunner().invoke(main, ["schedule", "--cron", expr, "--print", "--backend", "local"])
        assert result.exit_code == 2, result.output
        assert f"--cron '{expr}': the {field}" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "data").exists()
