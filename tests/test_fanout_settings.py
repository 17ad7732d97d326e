"""`[sleep] skills` (`--skills`, `SKILLSLEEP_SKILLS`): "used", "managed" or names, layered flag > env >
file > default like every `[sleep]` setting; a bad value names where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest
from sleep_kit import invoke, write_script

from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands.wiring import sleep_settings


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def test_skills_is_used_by_default_and_layers_flag_over_env_over_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sleep_settings().values.skills == "used"
    (home / "config.toml").write_text('[sleep]\nskills = ["review-pr", "release-notes"]\n')
    s = sleep_settings()
    assert (s.values.skills, s.settings["skills"].source) == (["review-pr", "release-notes"], "file")
    monkeypatch.setenv("SKILLSLEEP_SKILLS", "managed")
    assert (sleep_settings().values.skills, sleep_settings().settings["skills"].source) == ("managed", "env")
    s = sleep_settings({"skills": "review-pr, fmt"})
    assert (s.values.skills, s.settings["skills"].source) == (["review-pr", "fmt"], "flag")
    assert s.settings["skills"].layers == {
        "flag": ["review-pr", "fmt"],
        "env": "managed",
        "file": ["review-pr", "release-notes"],
    }


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('skills = "some"', "expected 'used', 'managed' or a list of skill names"),
        ("skills = []", "name one skill or more, none empty (`skillsleep skills` lists them)"),
        ('skills = ["ok", " "]', "name one skill or more, none empty"),
        ("skills = 3", "expected 'used', 'managed' or a list of skill names"),
    ],
)
def test_a_bad_skills_value_in_the_file_names_the_file_once(home: Path, text: str, words: str) -> None:
    (home / "config.toml").write_text(f"[sleep]\n{text}\n")
    with pytest.raises(ConfigError) as err:
        sleep_settings()
    assert str(err.value).count("[sleep] skills:") == 1 and words in str(err.value)


def test_an_empty_name_in_the_flag_is_refused() -> None:
    with pytest.raises(ConfigError, match="--skills 'a,,b': expected 'used', 'managed' or skill names separated"):
        sleep_settings({"skills": "a,,b"})


def test_skills_naming_a_skill_on_the_chat_harness_says_it_has_no_skill_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", "")
    script = write_script(tmp_path)
    code, _, err = invoke("run", "--harness", "chat", "--backend", f"scripted:{script}", "--skills", "review-pr")
    assert code == 2 and "the chat harness has no skill folders" in err and "`skillsleep skills`" in err
