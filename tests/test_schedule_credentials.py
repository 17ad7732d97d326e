"""A password inside `--base-url` never reaches the schedule's line or the night's log: `schedule`
refuses it, as it never copies a key, and names the env file the night reads instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.slash_commands.cli import main


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data"


@pytest.mark.parametrize("via", ["--crontab", "--systemd"])
@pytest.mark.parametrize("url", ["https://me:s3cret-pass@models.example/v1", "https://s3cret-pass@models.example/v1"])
def test_a_base_url_with_a_password_is_refused_and_never_written(data: Path, via: str, url: str) -> None:
    result = CliRunner().invoke(
        main, ["schedule", via, "--at", "03:00", "--print", "--backend", "deepseek", "--base-url", url]
    )
    assert result.exit_code == 2, result.output
    assert "--base-url holds a user name or password" in result.stderr
    assert f"put DEEPSEEK_BASE_URL=<the URL> in {data / 'night.env'} (yours alone: chmod 600)" in result.stderr
    assert "s3cret-pass" not in result.output and not data.exists()


def test_a_base_url_without_credentials_is_still_carried_on_the_line(data: Path) -> None:
    url = "https://models.example:8443/v1"
    args = ["schedule", "--at", "03:00", "--print", "--json", "--backend", "deepseek", "--base-url", url]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert url in json.loads(result.stdout)["preview"]
