"""Direct-chat logs: OpenAI-shaped conversations, one per JSONL line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.harnesses.chat_logs import chat_log_files, parse_chat_log
from skillsleep.slash_commands.cli import main

CONVO = {
    "id": "conv-1",
    "model": "gpt-x",
    "created": 1_790_000_000,
    "usage": {"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 100}},
    "metadata": {"project": "/home/me/proj"},
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "text", "text": "what is in"}, {"type": "text", "text": "README?"}]},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "# Title"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "no match"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It has a title."}]},
    ],
}


def line(rec: object) -> bytes:
    return (json.dumps(rec) + "\n").encode()


def test_a_conversation_becomes_one_session() -> None:
    data = line(CONVO)
    result = parse_chat_log(data, source="/logs/chats.jsonl")
    assert result.bytes_read == len(data) and not result.skipped
    [s] = result.sessions
    assert (s.harness, s.id, s.project, s.models) == ("chat", "conv-1", "/home/me/proj", ["gpt-x"])
    assert s.prompts() == ["what is in\nREADME?"]  # the system message is not a prompt
    assert [t.kind for t in s.turns] == [
        "user",
        "assistant",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "assistant",
    ]
    call1, call2, res1, res2 = s.turns[2:6]
    assert (call1.tool, call1.call_id, call1.arguments) == ("read_file", "call_1", {"path": "README.md"})
    assert call2.arguments == {"raw": "not json"}
    assert (res1.tool, res1.call_id, res1.text) == ("read_file", "call_1", "# Title")
    assert (res2.tool, res2.text) == ("grep", "no match")
    assert s.turns[-1].text == "It has a title."
    assert (s.usage.input_tokens, s.usage.cached_tokens, s.usage.output_tokens) == (120, 100, 30)
    assert s.started == s.ended == datetime.fromtimestamp(1_790_000_000, tz=UTC)
    assert (s.byte_start, s.byte_end) == (0, len(data))


def test_ids_fall_back_to_file_stem_and_offset_and_timestamps_are_utc() -> None:
    first = line({"messages": [{"role": "user", "content": "hi"}], "timestamp": "2026-11-28T22:00:00+01:00"})
    data = first + line({"messages": [{"role": "user", "content": "again"}]})
    result = parse_chat_log(data, source="/logs/day1.jsonl", base_offset=50)
    a, b = result.sessions
    assert (a.id, b.id) == ("day1:50", f"day1:{50 + len(first)}")
    assert a.started == datetime(2026, 11, 28, 21, 0, tzinfo=UTC) and b.started is None
    assert result.bytes_read == len(data)  # relative to data, not to base_offset


def test_bad_lines_are_counted_and_a_half_written_line_waits() -> None:
    good = line({"messages": [{"role": "user", "content": "ok"}]})
    data = (
        b"{not json\n"
        + line({"prompt": "no messages"})
        + line({"messages": "nope"})
        + b"[1, 2]\n"
        + good
        + b'{"messages": [{"role": "user", "content": "half'
    )
    result = parse_chat_log(data, source="c.jsonl")
    assert [s.prompts() for s in result.sessions] == [["ok"]]
    assert result.skipped == {"malformed_json": 1, "not_a_chat_log": 2, "not_an_object": 1}
    assert result.bytes_read == len(data) - len(b'{"messages": [{"role": "user", "content": "half')


def test_chat_log_files_skip_the_data_dir(tmp_path: Path) -> None:
    (tmp_path / "chats" / "sub").mkdir(parents=True)
    (tmp_path / "chats" / "a.jsonl").write_text("")
    (tmp_path / "chats" / "sub" / "b.jsonl").write_text("")
    (tmp_path / "chats" / "notes.txt").write_text("")
    own = tmp_path / "chats" / "skillsleep"
    (own / "replays").mkdir(parents=True)
    (own / "replays" / "r.jsonl").write_text("")
    found = chat_log_files([tmp_path / "chats", tmp_path / "missing"], exclude=[own])
    assert found.files == [tmp_path / "chats" / "a.jsonl", tmp_path / "chats" / "sub" / "b.jsonl"]
    assert not found.unreadable and not found.skipped


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var, name in (
        ("SKILLSLEEP_HOME", "home"),
        ("CLAUDE_CONFIG_DIR", "claude"),
        ("CODEX_HOME", "codex"),
        ("OPENCLAW_STATE_DIR", "openclaw"),
    ):
        monkeypatch.setenv(var, str(tmp_path / name))
    (tmp_path / "home").mkdir()
    return tmp_path


def test_harvest_with_chat_dir_stores_sessions_incrementally(env: Path) -> None:
    chats = env / "chats"
    chats.mkdir()
    (chats / "log.jsonl").write_bytes(line(CONVO) + line({"messages": [{"role": "user", "content": "second"}]}))
    (env / "home" / "replays").mkdir()
    (env / "home" / "replays" / "r.jsonl").write_bytes(line(CONVO))  # skillsleep's own data: never harvested
    runner = CliRunner()
    first = runner.invoke(main, ["harvest", "--chat-dir", str(chats), "--chat-dir", str(env / "home"), "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert (
        report["sessions"]["chat"] == 2 and report["files_seen"] == 1 and report["tools"] == {"read_file": 1, "grep": 1}
    )
    second = json.loads(
        runner.invoke(main, ["harvest", "--harness", "chat", "--chat-dir", str(chats), "--json"]).output
    )
    assert second["bytes_read"] == 0 and second["sessions"] == {"chat": 0}
    plain = json.loads(runner.invoke(main, ["harvest", "--json"]).output)
    assert "chat" not in plain["sessions"]


def test_harness_chat_without_chat_dir_is_a_config_error(env: Path) -> None:
    result = CliRunner().invoke(main, ["harvest", "--harness", "chat"])
    assert result.exit_code == 2 and "--chat-dir" in result.output


# --- a chat-log folder that cannot be read is the same usage error for harvest, watch and run --------


@pytest.mark.parametrize("verb", ["harvest", "watch", "run"])
@pytest.mark.parametrize("origin", ["flag", "env", "file"])
@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_an_unusable_chat_dir_is_a_usage_error_naming_where_it_was_set(
    verb: str,
    origin: str,
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sleep_kit import night_env, run_args, write_scripts

    data = night_env(monkeypatch, tmp_path)
    monkeypatch.delenv("SKILLSLEEP_CHAT_DIRS")
    write_scripts(tmp_path)
    folder = tmp_path / "chats-typo"
    if kind == "a file":
        folder.write_text('{"messages": []}\n')
    config = data / "config.toml"
    flags = ["--chat-dir", str(folder)] if origin == "flag" else []
    if origin == "env":
        monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", str(folder))
    if origin == "file":
        data.mkdir()
        config.write_text(f"[harvest]\nchat_dirs = ['{folder}']\n")
    args = {
        "harvest": ["harvest", *flags],
        "watch": ["watch", "--duration", "0", *flags],
        "run": [*run_args(tmp_path), *flags],
    }[verb]
    result = CliRunner().invoke(main, args)
    where = {"flag": "--chat-dir", "env": "SKILLSLEEP_CHAT_DIRS", "file": f"[harvest] chat_dirs in {config}"}[origin]
    problem = "does not exist" if kind == "missing" else "is a file, not a folder"
    assert result.exit_code == 2, result.output
    assert f"chat-log folder {folder} {problem} (set by {where})" in result.stderr
    assert "Traceback" not in result.output and not (data / "nights").exists()


def test_run_chat_dir_replaces_the_folders_of_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sleep_kit import TASKS, night_env, run_night, write_chat_logs, write_scripts

    night_env(monkeypatch, tmp_path)
    (tmp_path / "chats").mkdir(exist_ok=True)  # SKILLSLEEP_CHAT_DIRS: an empty folder
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "elsewhere")
    summary = run_night(tmp_path, "--chat-dir", str(tmp_path / "elsewhere"))
    assert summary["harvest"]["sessions"]["chat"] == 3 * len(TASKS) and summary["recurring_tasks"] == len(TASKS)
