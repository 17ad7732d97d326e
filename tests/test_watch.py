"""`skillsleep watch`: a real watchdog observer on real files harvests after a debounced burst."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_harvest import SID, assistant, user

from skillsleep.core.store import Store
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.watch_cmd import Watcher, watch_roots

TIMEOUT = 5.0


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var, name in (("HOME", "home"), ("SKILLSLEEP_HOME", "skillsleep"), ("CLAUDE_CONFIG_DIR", "claude"),
                      ("CODEX_HOME", "codex"), ("OPENCLAW_STATE_DIR", "openclaw")):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(var, str(tmp_path / name))
    (tmp_path / "claude" / "projects" / "-home-me-proj").mkdir(parents=True)
    return tmp_path


class Reports:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.cond = threading.Condition()

    def __call__(self, report: dict[str, Any]) -> None:
        with self.cond:
            self.items.append(report)
            self.cond.notify_all()

    def wait_for(self, n: int, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
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
    watcher, reports, path = watching
    assert watch_roots() == [("claude-code", env / "claude" / "projects")]
    path.write_bytes(user("fix the failing test", 1) + assistant("done", 1))
    [first] = reports.wait_for(1)
    assert first["harness"] == "claude-code" and first["sessions"] == {"claude-code": 1}
    assert first["bytes_read"] == path.stat().st_size and not first["skipped"]
    assert stored(env)().prompts() == ["fix the failing test"]

    more = user("now add a test", 2) + assistant("added", 2)
    append(path, more)
    second = reports.wait_for(2)[1]
    assert second["bytes_read"] == len(more) and second["sessions"] == {"claude-code": 1}
    assert stored(env)().prompts() == ["fix the failing test", "now add a test"]


def test_a_burst_of_quick_writes_is_one_harvest_and_stop_is_prompt(watching, env: Path) -> None:  # type: ignore[no-untyped-def]
    watcher, reports, path = watching
    for n in range(1, 6):
        append(path, user(f"prompt {n}", n) + assistant("ok", n))
        time.sleep(0.02)
    [only] = reports.wait_for(1)
    time.sleep(0.6)  # well past the debounce: no second harvest follows
    assert len(reports.items) == 1
    assert only["bytes_read"] == path.stat().st_size and len(stored(env)().prompts()) == 5
    worker, observer = watcher._worker, watcher._observer
    watcher.stop()
    assert worker is not None and not worker.is_alive() and not observer.is_alive()


def test_files_the_harvest_does_not_read_are_ignored(watching) -> None:  # type: ignore[no-untyped-def]
    watcher, reports, path = watching
    (path.parent / "notes.txt").write_text("not a transcript")
    time.sleep(0.6)
    assert reports.items == [] and watcher.process_pending() == []


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


def test_cli_watch_without_any_transcript_folder_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
