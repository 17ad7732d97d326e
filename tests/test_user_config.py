"""The user's config.toml: where it is, strict validation, and flag > env > file > default."""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs
import pytest
from click.testing import CliRunner

from skillsleep.core.models.store import Store
from skillsleep.core.night.user_config import UserConfig, layer, parse_user_config
from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands import wiring
from skillsleep.slash_commands.cli import main

SECRET = "acme-12345678"
CONVO = {
    "id": "c1",
    "messages": [{"role": "user", "content": f"deploy with {SECRET}"}, {"role": "assistant", "content": "done"}],
}


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SKILLSLEEP_HOME and agent roots in tmp; no config-related variable leaks in from outside."""
    for var in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(var, raising=False)
    for var, name in (
        ("SKILLSLEEP_HOME", "home"),
        ("HOME", "user"),
        ("CLAUDE_CONFIG_DIR", "claude"),
        ("CODEX_HOME", "codex"),
        ("OPENCLAW_STATE_DIR", "openclaw"),
    ):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(var, str(tmp_path / name))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def write_config(home: Path, text: str) -> Path:
    path = home / "config.toml"
    path.write_text(text)
    return path


def chat_log(folder: Path, *records: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# --- where the file is ----------------------------------------------------------------------------


def test_the_config_file_is_found_by_env_then_home_then_platform(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert wiring.config_file().model_dump() == {
        "path": home / "config.toml",
        "exists": False,
        "chosen_by": "SKILLSLEEP_HOME",
    }
    explicit = home.parent / "elsewhere.toml"
    explicit.write_text("")
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(explicit))
    assert wiring.config_file().model_dump() == {"path": explicit, "exists": True, "chosen_by": "SKILLSLEEP_CONFIG"}
    monkeypatch.delenv("SKILLSLEEP_CONFIG")
    monkeypatch.delenv("SKILLSLEEP_HOME")
    monkeypatch.setattr(platformdirs, "user_config_dir", lambda app: str(home.parent / "platform" / app))
    where = wiring.config_file()
    assert (where.path, where.chosen_by) == (home.parent / "platform" / "skillsleep" / "config.toml", "default")


def test_no_file_means_defaults_but_a_missing_explicit_file_is_an_error(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert wiring.user_config() == UserConfig()
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(home / "typo.toml"))
    with pytest.raises(ConfigError, match="SKILLSLEEP_CONFIG=.*typo.toml does not exist: create that file or unset"):
        wiring.user_config()
    result = CliRunner().invoke(main, ["harvest"])
    assert result.exit_code == 2 and "typo.toml" in result.stderr
    shown = CliRunner().invoke(main, ["config", "--json"])  # `config` shows it instead of failing
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["config_file"]["exists"] is False


def test_the_config_file_is_read_by_byte_order_mark_and_a_folder_or_binary_one_is_named(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (home / "config.toml").write_bytes("[sleep]\r\npreferences = 'naïve'\r\n".encode("utf-16"))
    assert wiring.user_config().sleep.preferences == "naïve"
    (home / "config.toml").write_bytes(b"[sleep]\npreferences = 'na\xefve'\n")
    result = CliRunner().invoke(main, ["harvest"])
    assert result.exit_code == 2 and "config.toml is not UTF-8 text: the byte 0xef at line 2" in result.stderr
    folder = home.parent / "settings"
    folder.mkdir()
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(folder))
    result = CliRunner().invoke(main, ["harvest"])
    assert result.exit_code == 2 and f"config file {folder} is a folder, not a file" in result.stderr, result.stderr


# --- strict validation ----------------------------------------------------------------------------


def test_chat_dirs_expand_home_and_resolve_against_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    path = tmp_path / "cfg" / "config.toml"
    cfg = parse_user_config('[harvest]\nchat_dirs = ["~/chats", "exports", "/abs/logs"]\n', path)
    assert cfg.harvest.chat_dirs == [str(tmp_path / "me" / "chats"), str(tmp_path / "cfg" / "exports"), "/abs/logs"]


def test_an_unknown_key_names_the_file_the_key_and_the_known_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as err:
        parse_user_config('[harvest]\nchat_dir = ["x"]\n', path)
    msg = str(err.value)
    assert str(path) in msg and "'chat_dir'" in msg and "did you mean 'chat_dirs'" in msg
    assert "known: chat_dirs, redact_patterns" in msg
    with pytest.raises(
        ConfigError, match=r"unknown table or key 'nightly' \(known: harvest, harness, sleep, executor, prices\)"
    ):
        parse_user_config("[nightly]\nat = 3\n", path)


def test_a_toml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError, match=rf"{path}: invalid TOML: .*line 3"):
        parse_user_config('[harvest]\nchat_dirs = ["a"]\nredact_patterns = ?\n', path)
    with pytest.raises(ConfigError, match=rf"{path}: invalid TOML: .*end of document.*\(line 4\)"):
        parse_user_config('[harvest]\nchat_dirs = ["a"]\nredact_patterns = [\n', path)


def test_a_bad_regex_names_the_pattern_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as err:
        parse_user_config("[harvest]\nredact_patterns = ['ok-[0-9]+', 'key-(unclosed']\n", path)
    msg = str(err.value)
    assert str(path) in msg and "'key-(unclosed'" in msg and "not a valid regular expression" in msg
    assert "ok-[0-9]+" not in msg
    with pytest.raises(ConfigError, match="'x\\*' matches the empty string"):
        parse_user_config("[harvest]\nredact_patterns = ['x*']\n", path)


def test_a_wrong_type_says_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError, match=rf"{path}: \[harvest\] chat_dirs: expected a list, got 'logs'"):
        parse_user_config('[harvest]\nchat_dirs = "logs"\n', path)


# --- layering -------------------------------------------------------------------------------------


def test_layer_replace_takes_the_highest_level_and_extend_combines_them() -> None:
    levels = {"flag": ["f"], "env": ["e", "f"], "file": ["d", "e"]}
    replaced = layer("replace", levels)
    assert (replaced.value, replaced.source) == (["f"], "flag")
    extended = layer("extend", levels)
    assert (extended.value, extended.source) == (["d", "e", "f"], "flag")
    assert layer("replace", {"flag": [], "env": None, "file": ["d"]}).source == "file"
    nothing = layer("extend", {}, default=["x"])
    assert (nothing.value, nothing.source, nothing.layers) == (["x"], "default", {})


def test_flag_beats_env_beats_file_for_chat_dirs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(home, '[harvest]\nchat_dirs = ["from-file"]\n')
    s = wiring.effective_settings().harvest.chat_dirs
    assert (s.value, s.source) == ([str(home / "from-file")], "file")
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", os.pathsep.join(["env-a", "", "~/env-b"]))
    s = wiring.effective_settings().harvest.chat_dirs
    cwd, user = home.parent, home.parent / "user"
    assert (s.value, s.source) == ([str(cwd / "env-a"), str(user / "env-b")], "env")
    s = wiring.effective_settings(chat_dirs=[Path("flagged")]).harvest.chat_dirs
    assert (s.value, s.source) == ([str(cwd / "flagged")], "flag")
    assert s.layers["file"] == [str(home / "from-file")]  # shown by `config`, not used
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", "")  # empty counts as unset
    assert wiring.effective_settings().harvest.chat_dirs.source == "file"


def test_redact_patterns_from_every_level_are_combined(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(home, "[harvest]\nredact_patterns = ['acme-[0-9]{8}']\n")
    monkeypatch.setenv("SKILLSLEEP_REDACT_PATTERNS", "tok:[a-z]+|pw=\\S+\n\nacme-[0-9]{8}\n")
    s = wiring.effective_settings(redact_patterns=["flag-\\d+"]).harvest.redact_patterns
    assert s.value == ["acme-[0-9]{8}", "tok:[a-z]+|pw=\\S+", "flag-\\d+"] and s.source == "flag"


def test_bad_patterns_from_env_or_flag_name_where_they_came_from(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSLEEP_REDACT_PATTERNS", "fine\n(broken")
    with pytest.raises(ConfigError, match="SKILLSLEEP_REDACT_PATTERNS: redaction pattern '\\(broken'"):
        wiring.effective_settings()
    monkeypatch.delenv("SKILLSLEEP_REDACT_PATTERNS")
    with pytest.raises(ConfigError, match="--redact-pattern: redaction pattern '\\[x'"):
        wiring.effective_settings(redact_patterns=["[x"])


# --- the commands ---------------------------------------------------------------------------------


def test_harvest_reads_chat_dirs_and_redacts_with_patterns_from_the_file(home: Path) -> None:
    chat_log(home.parent / "chats", CONVO)
    write_config(home, "[harvest]\nchat_dirs = [\"../chats\"]\nredact_patterns = ['acme-[0-9]{8}']\n")
    result = CliRunner().invoke(main, ["harvest", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["sessions"]["chat"] == 1 and report["redactions"] == {"custom": 1}
    store = Store(home / "state.db")
    try:
        session = store.session("chat", "c1")
    finally:
        store.close()
    assert session is not None and SECRET not in session.prompts()[0] and "[REDACTED:" in session.prompts()[0]


def test_a_chat_dir_flag_replaces_the_files_and_another_harness_reads_no_chat_logs(home: Path) -> None:
    chat_log(home.parent / "chats", CONVO)
    chat_log(home.parent / "other", {"id": "o1", "messages": [{"role": "user", "content": "other"}]})
    write_config(home, '[harvest]\nchat_dirs = ["../chats"]\n')
    only = CliRunner().invoke(main, ["harvest", "--harness", "codex", "--json"])
    assert json.loads(only.stdout)["sessions"] == {"codex": 0} and json.loads(only.stdout)["files_seen"] == 0
    ignored = CliRunner().invoke(main, ["harvest", "--harness", "codex", "--chat-dir", str(home.parent / "other")])
    assert ignored.exit_code == 2 and "--chat-dir has no effect with --harness codex" in ignored.stderr
    flagged = CliRunner().invoke(main, ["harvest", "--chat-dir", str(home.parent / "other"), "--json"])
    report = json.loads(flagged.stdout)
    assert report["sessions"]["chat"] == 1 and report["files_seen"] == 1
    store = Store(home / "state.db")
    try:
        assert store.session("chat", "o1") is not None and store.session("chat", "c1") is None
    finally:
        store.close()


def test_harness_chat_with_chat_dirs_only_in_the_file_works(home: Path) -> None:
    chat_log(home.parent / "chats", CONVO)
    write_config(home, '[harvest]\nchat_dirs = ["../chats"]\n')
    result = CliRunner().invoke(main, ["harvest", "--harness", "chat", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sessions"] == {"chat": 1}


def test_an_invalid_config_file_makes_harvest_a_usage_error_naming_it(home: Path) -> None:
    path = write_config(home, "[harvest]\nredact_pattern = []\n")
    for args in (["harvest"], ["watch", "--duration", "0"], ["config"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert str(path) in result.stderr and "redact_patterns" in result.stderr


def test_config_command_shows_each_setting_with_its_source(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(home, "[harvest]\nchat_dirs = ['/data/chats']\nredact_patterns = ['acme-[0-9]{8}']\n")
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", "/env/chats")
    result = CliRunner().invoke(main, ["config", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config_file"] == {"path": str(path), "exists": True, "chosen_by": "SKILLSLEEP_HOME"}
    assert data["harvest"]["chat_dirs"] == {
        "value": ["/env/chats"],
        "source": "env",
        "merge": "replace",
        "layers": {"env": ["/env/chats"], "file": ["/data/chats"]},
    }
    assert data["harvest"]["redact_patterns"]["value"] == ["acme-[0-9]{8}"]
    assert data["harvest"]["redact_patterns"]["source"] == "file"
    text = CliRunner().invoke(main, ["config"]).stdout
    assert f"config file: {path} (exists" in text
    assert "/env/chats  ← env: SKILLSLEEP_CHAT_DIRS" in text
    assert f"/data/chats  ← file: [harvest] chat_dirs in {path} (overridden, not used)" in text
    path.unlink()
    text = CliRunner().invoke(main, ["config"]).stdout
    assert f"config file: {path} (does not exist" in text and "(none)  ← default" in text


def test_toml_nested_too_deeply_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"x\.toml: invalid TOML: nested too deeply"):
        parse_user_config("a = " + "[" * 50_000, tmp_path / "x.toml")


# --- [harness.<name>] tables ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            '[harness.codex]\nsandbx = "read-only"\n',
            ["[harness.codex]", "unknown key 'sandbx'", "did you mean 'sandbox'"],
        ),
        ('[harness.codex]\nconcurrency = "two"\n', ["[harness.codex]", "concurrency"]),
        ('[harness.cursor]\ncommand = "cursor"\n', ["[harness.cursor] is not a harness with settings", "codex"]),
        ('[harness.openclaw]\nbase_url = "127.0.0.1:8080/v1"\n', ["[harness.openclaw]", "base_url", "no scheme"]),
    ],
)
def test_config_checks_every_harness_table_and_names_the_problem(home: Path, table: str, expected: list[str]) -> None:
    path = write_config(home, table)
    for args in (["config"], ["config", "--json"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == ""
        assert str(path) in result.stderr and "Traceback" not in result.stderr
        assert all(e in result.stderr for e in expected), result.stderr


def test_config_command_shows_the_executor_with_its_source(home: Path) -> None:
    path = write_config(home, '[executor]\nkind = "ray"\naddress = "ray://head:10001"\nresources = {codex = 1}\n')
    data = json.loads(CliRunner().invoke(main, ["config", "--json"]).stdout)
    assert data["executor"]["kind"] == {"value": "ray", "source": "file", "layers": {"file": "ray"}}
    assert data["executor"]["resources"]["value"] == {"codex": 1.0}
    assert data["executor"]["max_retries"] == {"value": 3, "source": "default", "layers": {}}
    text = CliRunner().invoke(main, ["config"]).stdout
    assert f'executor.kind = "ray"  ← file: [executor] kind in {path}' in text
    assert 'executor.resources = {"codex": 1.0}  ← file' in text and "executor.num_cpus = 1.0  ← default" in text
    path.unlink()
    assert 'executor.kind = "local"  ← default' in CliRunner().invoke(main, ["config"]).stdout
