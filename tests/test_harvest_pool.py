"""A large harvest read by worker processes stores exactly what one process stores."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from skillsleep.core.harvest import harvester as harvest
from skillsleep.core.harvest import read as harvest_read
from skillsleep.core.harvest.harvester import Harvester, HarvestReport, Source
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.session import ParseResult
from skillsleep.slash_commands.harvester import PARSERS, WORKERS_ENV, harvest_workers

FIXTURES = Path(__file__).parent / "fixtures"
TRANSCRIPTS = {  # harness → fixture files of that agent, real CLIs' and hand-made (drift, damage)
    "claude-code": ["recorded/claude/config/projects/*/*.jsonl", "claude/*.jsonl", "claude/root/projects/*/*.jsonl"],
    "codex": ["recorded/codex/codex-home/sessions/*/*/*/*.jsonl", "codex/*.jsonl"],
    "openclaw": ["openclaw/*.jsonl"],
}
KEY = "ghp_" + "Zq8Lm2Xv9Rt4Wn6Yp1Bc3Df5Gh7Jk0Ls2Qa"


def corpus(root: Path) -> list[Source]:
    """Every fixture transcript copied under `root`, plus one that leaks a token, one that is a
    folder (unreadable as a file) and one that vanished: in a fixed, mixed order."""
    sources = []
    for harness, patterns in TRANSCRIPTS.items():
        for pattern in patterns:
            for i, path in enumerate(sorted(FIXTURES.glob(pattern))):
                copy = root / harness / f"{i}-{path.parent.name}" / path.name
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copy)
                sources.append(Source(harness=harness, path=copy))
    leak = root / "claude-code" / "leak" / "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee.jsonl"
    leak.parent.mkdir()
    leak.write_text(
        '{"type":"user","sessionId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","timestamp":"2026-11-29T10:00:00Z",'
        f'"message":{{"role":"user","content":"push with {KEY} please"}}}}\n'
    )
    folder = root / "codex" / "rollout-2026-11-29T09-00-00-99999999-9999-4999-8999-999999999999.jsonl"
    folder.mkdir()
    sources[3:3] = [Source(harness="claude-code", path=leak), Source(harness="codex", path=folder)]
    sources.append(Source(harness="codex", path=root / "gone.jsonl"))
    assert len(sources) > 20
    return sources


def state(store: Store) -> tuple[list[Any], list[Any]]:
    db = sqlite3.connect(store.path)
    try:
        sessions = db.execute("SELECT harness, id, source, ended, data FROM sessions ORDER BY harness, id").fetchall()
        cursors = db.execute("SELECT source, cursor FROM harvest_cursors ORDER BY source").fetchall()
    finally:
        db.close()
    return sessions, cursors


def harvest_with(root: Path, sources: list[Source], name: str, workers: int) -> tuple[HarvestReport, Redactor, Store]:
    redactor = Redactor()
    store = Store(root / f"{name}.db")
    return Harvester(store, PARSERS, redactor, workers=workers).harvest(sources), redactor, store


@pytest.fixture()
def pooled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Any harvest with more than one worker uses the pool; counts the pools started."""
    started: list[int] = []
    real = harvest_read.ReadPool.__init__

    def init(self: harvest_read.ReadPool, *args: Any, **kwargs: Any) -> None:
        started.append(args[2])
        real(self, *args, **kwargs)

    monkeypatch.setattr(harvest, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(harvest_read.ReadPool, "__init__", init)
    monkeypatch.setattr(harvest_read, "TASK_BYTES", 64 * 1024)  # several tasks even on the fixtures
    return started


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_workers_store_what_one_process_stores(
    tmp_path: Path, pooled: list[int], monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.setattr(harvest_read, "start_method_here", lambda: method)
    sources = corpus(tmp_path / "home")
    one, one_redactor, one_store = harvest_with(tmp_path, sources, "one", workers=1)
    assert pooled == []  # a single worker reads in this process
    many, many_redactor, many_store = harvest_with(tmp_path, sources, "many", workers=3)
    assert pooled == [3]
    assert many.model_dump() == one.model_dump()
    assert state(many_store) == state(one_store)
    assert many_redactor.counts == one_redactor.counts and many_redactor.counts["github_token"] == 1
    assert sum(one.sessions.values()) > 10 and one.files_read == len(sources) - 2
    assert (
        one.skipped["unreadable_file:IsADirectoryError"] == 1 and one.skipped["unreadable_file:FileNotFoundError"] == 1
    )
    sessions, _ = state(many_store)
    assert not any(KEY in str(row[4]) for row in sessions)  # redacted by the worker before it was stored


def test_an_appended_transcript_is_read_from_its_cursor_and_merged_the_same_way(
    tmp_path: Path, pooled: list[int]
) -> None:
    sources = corpus(tmp_path / "home")
    stores = {}
    for name, workers in (("one", 1), ("many", 2)):
        store = Store(tmp_path / f"{name}.db")
        Harvester(store, PARSERS, Redactor(), workers=workers).harvest(sources)
        stores[name] = store
    grown = [s for s in sources if s.path.is_file() and s.harness == "claude-code"][:3]
    for s in grown:
        last = s.path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1] + b"\n"
        with s.path.open("ab") as fh:
            fh.write(last)
    reports = {
        name: Harvester(st, PARSERS, Redactor(), workers=2 if name == "many" else 1).harvest(sources)
        for name, st in stores.items()
    }
    assert reports["many"].model_dump() == reports["one"].model_dump()
    assert reports["many"].files_read == 3 and reports["many"].files_reset == 0
    assert state(stores["many"]) == state(stores["one"])


def _die(data: bytes, source: str, offset: int) -> ParseResult:
    if "boom" in source:
        os._exit(3)  # a worker killed halfway (the OOM killer, a kill -9)
    return PARSERS["claude-code"](data, source, offset)


def test_a_worker_that_dies_ends_the_harvest_with_what_to_do_and_loses_nothing(
    tmp_path: Path, pooled: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        harvest_read, "start_method_here", lambda: "forkserver"
    )  # a clean start: a fork would copy whatever threads the test run holds
    sources = [s for s in corpus(tmp_path / "home") if s.harness == "claude-code" and s.path.is_file()]
    boom = tmp_path / "home" / "boom.jsonl"
    shutil.copyfile(sources[0].path, boom)
    with_boom = [*sources, Source(harness="claude-code", path=boom)]
    store = Store(tmp_path / "state.db")
    with pytest.raises(ConfigError, match=f"worker process died.*Run the harvest again.*{WORKERS_ENV}=1"):
        Harvester(store, {"claude-code": _die}, Redactor(), workers=2).harvest(with_boom)
    again = Harvester(store, PARSERS, Redactor(), workers=1).harvest(with_boom)
    clean = Store(tmp_path / "clean.db")
    Harvester(clean, PARSERS, Redactor(), workers=1).harvest(with_boom)
    assert state(store) == state(clean)  # no session lost, none stored twice
    assert again.files_read >= 1


def test_a_file_another_harvest_stored_meanwhile_is_not_stored_twice(tmp_path: Path) -> None:
    sources = [s for s in corpus(tmp_path / "home") if s.harness == "codex" and s.path.is_file()]
    store = Store(tmp_path / "state.db")
    ours = Harvester(store, PARSERS, Redactor())
    report = HarvestReport()
    plan = ours._plan(sources[0], report)
    other = Store(tmp_path / "state.db")  # another process harvests the same file first
    Harvester(other, PARSERS, Redactor()).harvest(sources[:1])
    other.close()
    assert isinstance(plan, harvest_read.Job) and plan.cursor is None
    with store.transaction():
        ours._apply(plan, ours._read_here(plan), report, None)
    assert report.files_read == 0 and report.sessions == {}  # read again from its new cursor: nothing new
    clean = Store(tmp_path / "clean.db")
    Harvester(clean, PARSERS, Redactor()).harvest(sources[:1])
    assert state(store)[0] == state(clean)[0]


def test_a_small_harvest_is_read_in_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pool(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a pool was started for a small harvest")

    monkeypatch.setattr(harvest, "ReadPool", no_pool)
    sources = corpus(tmp_path / "home")
    assert sum(s.path.stat().st_size for s in sources if s.path.is_file()) < harvest.POOL_MIN_BYTES
    report, _, _ = harvest_with(tmp_path, sources, "state", workers=4)
    assert sum(report.sessions.values()) > 10


def test_the_worker_count_comes_from_the_environment_or_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert harvest_workers() == harvest_read.default_workers()
    assert 1 <= harvest_read.default_workers() <= 4
    monkeypatch.setenv(WORKERS_ENV, "1")
    assert harvest_workers() == 1
    for bad in ("0", "two", "-3", "65"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(ConfigError, match=f"{WORKERS_ENV}='{bad}': give a whole number from 1 to 64"):
            harvest_workers()


def test_the_harvest_command_reads_with_workers_and_says_what_to_do_with_a_bad_count(
    tmp_path: Path, pooled: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from skillsleep.slash_commands.cli import main

    chats = tmp_path / "chats"
    chats.mkdir()
    for i in range(6):
        (chats / f"log{i}.jsonl").write_text(
            f'{{"created":"2026-11-0{i + 1}T10:00:00Z","messages":[{{"role":"user","content":"task {i} with {KEY}"}},'
            '{"role":"assistant","content":"done"}]}\n'
        )
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    reports = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / f"home{workers}"))
        monkeypatch.setenv(WORKERS_ENV, workers)
        result = CliRunner().invoke(main, ["harvest", "--chat-dir", str(chats), "--json"])
        assert result.exit_code == 0, result.output
        reports[workers] = result.stdout
    assert pooled == [2] and reports["2"] == reports["1"]
    assert '"chat": 6' in reports["2"] and '"github_token": 6' in reports["2"]
    monkeypatch.setenv(WORKERS_ENV, "all")
    bad = CliRunner().invoke(main, ["harvest", "--chat-dir", str(chats)])
    assert bad.exit_code != 0 and f"{WORKERS_ENV}='all': give a whole number from 1 to 64" in bad.output


def test_only_the_bytes_past_the_cursors_count_toward_starting_workers(
    tmp_path: Path, pooled: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = corpus(tmp_path / "home")
    size = sum(s.path.stat().st_size for s in sources if s.path.is_file())
    monkeypatch.setattr(harvest, "POOL_MIN_BYTES", size // 2)
    store = Store(tmp_path / "state.db")
    Harvester(store, PARSERS, Redactor(), workers=2).harvest(sources)
    assert pooled == [2]  # a first harvest reads it all
    for s in [s for s in sources if s.path.is_file()][:4]:
        with s.path.open("ab") as fh:
            fh.write(s.path.read_bytes().splitlines(keepends=True)[-1])
    report = Harvester(store, PARSERS, Redactor(), workers=2).harvest(sources)
    assert pooled == [2] and report.files_read == 4  # four appended lines: read here
