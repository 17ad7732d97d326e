"""`skillsleep watch`: a real watchdog observer on real files harvests after a debounced burst."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_harvest import SID, assistant, user

from skillsleep.core.models.store import Store
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.watcher import Report, Watcher, absent_roots, watch_roots
from skillsleep.slash_commands.wiring import data_dir

TIMEOUT = 5.0
CODEX = Path(__file__).parent / "fixtures" / "codex"
ROLLOUTS = [
    "rollout-2026-11-29T09-00-00-22222222-2222-4222-8222-222222222222.jsonl",
    "rollout-2025-12-01T10-00-00-11111111-1111-4111-8111-111111111111.jsonl",
]


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(var, raising=False)
    for var, name in (
        ("HOME", "home"),
        ("SKILLSLEEP_HOME", "skillsleep"),
        ("CLAUDE_CONFIG_DIR", "claude"),
        ("CODEX_HOME", "codex"),
        ("OPENCLAW_STATE_DIR", "openclaw"),
    ):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(var, str(tmp_path / name))
    (tmp_path / "claude" / "projects" / "-home-me-proj").mkdir(parents=True)
    return tmp_path


class Reports:
    def __init__(self) -> None:
        self.items: list[Report] = []
        self.cond = threading.Condition()

    def __call__(self, report: Report) -> None:
        with self.cond:
            self.items.append(report)
            self.cond.notify_all()

    def wait_for(self, n: int, timeout: float = TIMEOUT) -> list[Report]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.items) >= n, timeout), f"{len(self.items)} reports, wanted {n}"
            return list(self.items)


@pytest.fixture()
def watching(env: Path) -> Iterator[tuple[Watcher, Reports, Path]]:
    reports = Reports()
    watcher = Watcher(watch_roots(), 0.2, reports).start()
    yield watcher, reports, env / "claude" / "projects" / "-home-me-proj" / f"{SID}.jsonl"
    watcher.stop()


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def stored(env: Path) -> Callable[[], Any]:
    def get() -> Any:
        store = Store(env / "skillsleep" / "state.db")
        try:
            return store.session("claude-code", SID)
        finally:
            store.close()

    return get


def test_a_new_transcript_is_harvested_and_an_append_reads_only_new_bytes(watching, env: Path) -> None:  # type: ignore[no-untyped-def]
    _watcher, reports, path = watching
    assert watch_roots() == [("claude-code", env / "claude" / "projects")]
    path.write_bytes(user("fix the failing test", 1) + assistant("done", 1))
    [first] = reports.wait_for(1)
    assert first.harness == "claude-code" and first.sessions == {"claude-code": 1}
    assert first.bytes_read == path.stat().st_size and not first.skipped
    assert stored(env)().prompts() == ["fix the failing test"]

    more = user("now add a test", 2) + assistant("added", 2)
    append(path, more)
    second = reports.wait_for(2)[1]
    assert second.bytes_read == len(more) and second.sessions == {"claude-code": 1}
    assert stored(env)().prompts() == ["fix the failing test", "now add a test"]


def test_a_burst_of_quick_writes_is_one_harvest_and_stop_is_prompt(watching, env: Path) -> None:  # type: ignore[no-untyped-def]
    watcher, reports, path = watching
    for n in range(1, 6):
        append(path, user(f"prompt {n}", n) + assistant("ok", n))
        time.sleep(0.02)
    [only] = reports.wait_for(1)
    time.sleep(0.6)  # well past the debounce: no second harvest follows
    assert len(reports.items) == 1
    assert only.bytes_read == path.stat().st_size and len(stored(env)().prompts()) == 5
    worker, observer = watcher._worker, watcher._observer
    watcher.stop()
    assert worker is not None and not worker.is_alive() and not observer.is_alive()


def test_files_the_harvest_does_not_read_are_ignored(watching) -> None:  # type: ignore[no-untyped-def]
    watcher, reports, path = watching
    (path.parent / "notes.txt").write_text("not a transcript")
    time.sleep(0.6)
    assert reports.items == [] and watcher.process_pending() == []


def test_an_agent_folder_that_appears_while_watching_is_watched_from_then_on(env: Path) -> None:
    sessions = env / "codex" / "sessions"  # Codex is installed after the watch started
    reports = Reports()
    watcher = Watcher(watch_roots(), 0.1, reports, later=absent_roots()).start()
    try:
        assert ("codex", sessions) in watcher.later and watcher.look_for_new_roots() == []
        day = sessions / "2026" / "11" / "29"
        day.mkdir(parents=True)
        shutil.copy(CODEX / ROLLOUTS[0], day / ROLLOUTS[0])  # written before the folder is watched
        assert watcher.look_for_new_roots() == [("codex", sessions)] and ("codex", sessions) not in watcher.later
        [first] = reports.wait_for(1)
        assert first.harness == "codex" and first.sessions == {"codex": 1} and first.files_read == 1
        shutil.copy(CODEX / ROLLOUTS[1], day / ROLLOUTS[1])  # seen by the observer now
        second = reports.wait_for(2)[1]
        assert second.harness == "codex" and second.files_read == 1 and second.sessions == {"codex": 1}
    finally:
        watcher.stop()


def test_cli_watch_names_and_harvests_an_agent_folder_that_appears_while_it_runs(env: Path) -> None:
    day = env / "codex" / "sessions" / "2026" / "11" / "29"

    def install_soon() -> None:
        time.sleep(0.3)
        day.mkdir(parents=True)
        shutil.copy(CODEX / ROLLOUTS[0], day / ROLLOUTS[0])

    writer = threading.Thread(target=install_soon)
    writer.start()
    result = CliRunner().invoke(main, ["watch", "--duration", "1.5", "--debounce", "0.1", "--json"])
    writer.join()
    assert result.exit_code == 0, result.output
    assert f"watching codex {env / 'codex' / 'sessions'}" in result.stderr
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [(r["harness"], r["bytes_read"]) for r in lines] == [("codex", (day / ROLLOUTS[0]).stat().st_size)]


def test_cli_watch_runs_for_a_duration_and_exits_zero(env: Path) -> None:
    result = CliRunner().invoke(main, ["watch", "--duration", "1", "--debounce", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    assert "watching claude-code" in result.output


def test_cli_watch_reports_one_json_line_per_harvest(env: Path) -> None:
    path = env / "claude" / "projects" / "-home-me-proj" / f"{SID}.jsonl"

    def write_soon() -> None:
        time.sleep(0.3)
        path.write_bytes(user("fix it", 1) + assistant("done", 1))

    writer = threading.Thread(target=write_soon)
    writer.start()
    result = CliRunner().invoke(main, ["watch", "--duration", "1.5", "--debounce", "0.1", "--json"])
    writer.join()
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [(r["harness"], r["bytes_read"]) for r in lines] == [("claude-code", path.stat().st_size)]


def test_cli_watch_without_any_transcript_folder_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HOME", "SKILLSLEEP_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    result = CliRunner().invoke(main, ["watch", "--duration", "1"])
    assert result.exit_code == 2
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        assert var in result.output


def test_cli_watch_first_catches_up_on_what_was_written_before_it_started(env: Path) -> None:
    path = env / "claude" / "projects" / "-home-me-proj" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(user("written while nobody watched", 1))
    result = CliRunner().invoke(main, ["watch", "--duration", "0.5", "--debounce", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [(r["harness"], r["bytes_read"]) for r in lines] == [("claude-code", path.stat().st_size)]


# --- direct-chat log folders ------------------------------------------------------------------------


def chat_line(cid: str, prompt: str) -> bytes:
    return (
        json.dumps(
            {"id": cid, "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": "ok"}]}
        )
        + "\n"
    ).encode()


def stored_chat(env: Path, cid: str) -> Any:
    store = Store(env / "skillsleep" / "state.db")
    try:
        return store.session("chat", cid)
    finally:
        store.close()


def test_a_chat_log_folder_is_watched_and_harvested_like_a_transcript(env: Path) -> None:
    chats = env / "chats"
    (chats / "2026").mkdir(parents=True)
    reports = Reports()
    watcher = Watcher([*watch_roots(), ("chat", chats)], 0.2, reports).start()
    try:
        log = chats / "2026" / "day.jsonl"
        log.write_bytes(chat_line("c1", "summarise the meeting"))
        [first] = reports.wait_for(1)
        assert first.harness == "chat" and first.sessions == {"chat": 1}
        assert first.bytes_read == log.stat().st_size
        append(log, chat_line("c2", "and draft the email"))
        second = reports.wait_for(2)[1]
        assert second.harness == "chat" and second.bytes_read == len(chat_line("c2", "and draft the email"))
    finally:
        watcher.stop()
    assert stored_chat(env, "c1").prompts() == ["summarise the meeting"]
    assert stored_chat(env, "c2").prompts() == ["and draft the email"]


def test_writes_inside_skillsleeps_own_data_dir_are_ignored(env: Path) -> None:
    own_logs = data_dir() / "chat-logs"
    own_logs.mkdir(parents=True)
    reports = Reports()
    watcher = Watcher([("chat", env)], 0.1, reports, exclude=[data_dir()]).start()  # a chat folder above it
    try:
        (own_logs / "2026-11-29.jsonl").write_bytes(chat_line("mine", "a training episode"))
        time.sleep(0.5)
        assert reports.items == [] and watcher.process_pending() == []
        outside = env / "chats.jsonl"
        outside.write_bytes(chat_line("theirs", "a real chat"))
        [report] = reports.wait_for(1)
    finally:
        watcher.stop()
    assert report.harness == "chat" and report.files_seen == 1 and report.sessions == {"chat": 1}
    assert stored_chat(env, "mine") is None and stored_chat(env, "theirs") is not None


def test_cli_watch_chat_dir_catches_up_and_then_harvests_changes(env: Path) -> None:
    chats = env / "chats"
    chats.mkdir()
    early = chats / "early.jsonl"
    early.write_bytes(chat_line("e1", "written before the watch"))
    late = chats / "late.jsonl"

    def write_soon() -> None:
        time.sleep(0.4)
        late.write_bytes(chat_line("l1", "written while watching"))

    writer = threading.Thread(target=write_soon)
    writer.start()
    result = CliRunner().invoke(
        main, ["watch", "--chat-dir", str(chats), "--duration", "1.5", "--debounce", "0.1", "--json"]
    )
    writer.join()
    assert result.exit_code == 0, result.output
    assert f"chat {chats}" in result.stderr
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert [(r["harness"], r["bytes_read"]) for r in lines] == [
        ("chat", early.stat().st_size),
        ("chat", late.stat().st_size),
    ]
    assert stored_chat(env, "l1").prompts() == ["written while watching"]


def test_cli_watch_takes_chat_dirs_from_the_config_file(env: Path) -> None:
    chats = env / "chats"
    chats.mkdir()
    (chats / "a.jsonl").write_bytes(chat_line("a1", "from the config's folder"))
    (env / "skillsleep" / "config.toml").write_text("[harvest]\nchat_dirs = ['../chats']\n")
    result = CliRunner().invoke(main, ["watch", "--duration", "0.3", "--debounce", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    assert f"chat {chats}" in result.stderr
    assert [json.loads(x)["harness"] for x in result.stdout.splitlines() if x.startswith("{")] == ["chat"]


def test_cli_watch_with_only_a_chat_dir_needs_no_agent_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HOME", "SKILLSLEEP_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    (tmp_path / "chats").mkdir()
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", str(tmp_path / "chats"))
    result = CliRunner().invoke(main, ["watch", "--duration", "0"])
    assert result.exit_code == 0, result.output
    assert f"watching chat {tmp_path / 'chats'}" in result.stderr


def test_cli_watch_a_missing_chat_dir_is_a_usage_error_naming_where_it_was_set(env: Path) -> None:
    result = CliRunner().invoke(main, ["watch", "--chat-dir", str(env / "nope"), "--duration", "0"])
    assert result.exit_code == 2 and f"{env / 'nope'} does not exist (set by --chat-dir)" in result.stderr
    config = env / "skillsleep" / "config.toml"
    config.write_text("[harvest]\nchat_dirs = ['/no/such/chats']\n")
    result = CliRunner().invoke(main, ["watch", "--duration", "0"])
    assert result.exit_code == 2 and f"(set by [harvest] chat_dirs in {config})" in result.stderr
