"""`skillsleep redact FILE|-`: what harvest would redact in a file, shown before anything is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.slash_commands.cli import main

TOKEN = "gh" + "p_" + "Zq8rT2vK9mW4xL7pN3bJ6cH1dF5gS0aY8eU2"  # built by concatenation: no literal token here
TEXT = f"export GITHUB_TOKEN={TOKEN}\nhello\ncurl -u admin:Pw9xK2mQ7vL4 https://ci.example.com\n"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    (tmp_path / "config.toml").write_text("")
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("SKILLSLEEP_REDACT_PATTERNS", raising=False)


def test_redact_prints_the_redacted_file_and_says_what_on_which_line(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text(TEXT)
    result = CliRunner().invoke(main, ["redact", str(f)])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "export GITHUB_TOKEN=[REDACTED:github_token]\nhello\n"
        "curl -u admin:[REDACTED:curl_password] https://ci.example.com\n"
    )
    assert result.stderr.strip() == f"{f}: redacted curl_password 1, github_token 1 (line 1, 3)"
    assert f.read_text() == TEXT  # the file is only read
    assert not (tmp_path / "home").exists()  # nothing stored


def test_redact_reads_standard_input_and_reports_json() -> None:
    result = CliRunner().invoke(main, ["redact", "-", "--json"], input=TEXT)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["source"] == "-"
    assert report["redactions"] == {"curl_password": 1, "github_token": 1}
    assert report["lines"] == [{"line": 1, "kinds": ["github_token"]}, {"line": 3, "kinds": ["curl_password"]}]
    assert TOKEN not in report["text"]


def test_redact_applies_the_users_own_patterns() -> None:
    result = CliRunner().invoke(main, ["redact", "-", "--redact-pattern", r"ACME-\d{6}"], input="ticket ACME-123456\n")
    assert result.stdout == "ticket [REDACTED:custom]\n"


def test_redact_of_a_clean_file_changes_nothing(tmp_path: Path) -> None:
    f = tmp_path / "clean.txt"
    f.write_text("max_tokens: 4096\ncommit 3f2a9c1e7b4d8a6f0e5c2b9d1a7e4f3c8b6d2a90\n")
    result = CliRunner().invoke(main, ["redact", str(f)])
    assert result.stdout == f.read_text()
    assert "nothing to redact" in result.stderr


@pytest.mark.parametrize(
    ("make", "message"),
    [(lambda p: p / "missing.txt", "no such file"), (lambda p: p, "is a folder")],
)
def test_redact_names_the_fix_for_a_bad_file(tmp_path: Path, make: object, message: str) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    result = CliRunner().invoke(main, ["redact", str(target)])
    assert result.exit_code == 2
    assert message in result.output


def test_redact_numbers_the_lines_of_the_file_after_a_multi_line_private_key(tmp_path: Path) -> None:
    body = "\n".join("MIIEow" + "Ab9xK2mQ7vL4" * 5 for _ in range(4))
    key = f"-----BEGIN RSA {'PRIVATE'} KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    f = tmp_path / "notes.txt"
    f.write_text(f"key:\n{key}\nhello\n[REDACTED:jwt] seen before\nexport GITHUB_TOKEN={TOKEN}\n")
    result = CliRunner().invoke(main, ["redact", str(f), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["lines"] == [{"line": 2, "kinds": ["private_key"]}, {"line": 10, "kinds": ["github_token"]}]
    assert f.read_text().splitlines()[9].startswith("export GITHUB_TOKEN=")
    plain = CliRunner().invoke(main, ["redact", str(f)])
    assert plain.stderr.strip().endswith("(line 2, 10)")
