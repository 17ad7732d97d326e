"""skillsleep's own direct-chat episodes are logged in the chat-log format, and never harvested."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.records import Task
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.chat_logs import parse_chat_log
from skillsleep.slash_commands.cli import main

SKILL = Skill.parse("---\nname: s\n---\n# Rules\n\n- Be brief.\n")


def harness(log_dir: Path | None, reply: str = "fine", **kw: object) -> ChatHarness:
    backend = ScriptedBackend(BackendSettings(model="m"), lambda request: reply)
    return ChatHarness(LLM(backend, ledger=Ledger()), log_dir=log_dir, **kw)  # type: ignore[arg-type]


def log_lines(log_dir: Path) -> list[dict[str, object]]:
    return [json.loads(x) for f in sorted(log_dir.glob("*.jsonl")) for x in f.read_text().splitlines()]


async def test_each_episode_is_one_line_the_chat_log_reader_reads_back(tmp_path: Path) -> None:
    log_dir = tmp_path / "chat-logs"
    h = harness(log_dir)
    tasks = [Task(id=f"t{i}", prompt=f"Q{i}?", context="ctx" if i == 0 else None) for i in range(12)]
    runs = await asyncio.gather(*(h.run(t, SKILL, sample=i % 2) for i, t in enumerate(tasks)))
    assert all(r.response == "fine" for r in runs)
    [day] = list(log_dir.iterdir())
    records = log_lines(log_dir)
    assert sorted(r["task_id"] for r in records) == sorted(t.id for t in tasks)  # type: ignore[type-var]
    first = next(r for r in records if r["task_id"] == "t0")
    assert first["messages"] == [
        {"role": "system", "content": "# Rules\n\n- Be brief."},
        {"role": "user", "content": "ctx\n\nQ0?"},
        {"role": "assistant", "content": "fine"},
    ]
    assert (first["harness"], first["model"], first["provider"], first["sample"]) == ("chat", "m", "scripted", 0)
    when = datetime.fromisoformat(str(first["time"]))
    assert when.utcoffset() is not None and when.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert day.name == f"{when:%Y-%m-%d}.jsonl"  # the UTC day of the episode
    assert first["usage"]["prompt_tokens"] > 0 and first["usage"]["completion_tokens"] > 0  # type: ignore[index]

    parsed = parse_chat_log(day.read_bytes(), source=str(day))
    assert parsed.bytes_read == day.stat().st_size and not parsed.skipped
    assert sorted(s.prompts()[0] for s in parsed.sessions) == sorted(
        ("ctx\n\n" if t.context else "") + t.prompt for t in tasks
    )
    session = parsed.sessions[0]
    assert session.harness == "chat" and session.models == ["m"] and session.usage.input_tokens > 0
    assert [t.kind for t in session.turns] == ["user", "assistant"]  # the skill (system) is not a prompt
    assert session.started is not None and session.started.date() == when.date()


async def test_without_a_log_dir_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    await harness(None).run(Task(id="t", prompt="Q?"), SKILL)
    assert list(tmp_path.rglob("*")) == []


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    """Threads with their own event loops append long lines to one file at once (O_APPEND)."""
    log_dir = tmp_path / "chat-logs"
    big = "x" * 200_000

    def worker(n: int) -> None:
        h = harness(log_dir, reply=f"{n}:{big}")

        async def episodes() -> None:
            await asyncio.gather(*(h.run(Task(id=f"w{n}-{i}", prompt="Q?"), SKILL) for i in range(5)))

        asyncio.run(episodes())

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = log_lines(log_dir)  # json.loads fails on any torn or interleaved line
    assert len(records) == 30
    for r in records:
        assert r["messages"][-1]["content"] == f"{str(r['task_id']).split('-')[0][1:]}:{big}"  # type: ignore[index]


async def test_a_log_that_cannot_be_written_is_reported_once_and_never_fails_an_episode(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the log folder should be")
    messages: list[str] = []
    h = harness(blocked, on_log_error=messages.append)
    runs = [await h.run(Task(id=f"t{i}", prompt="Q?"), SKILL) for i in range(3)]
    assert [r.response for r in runs] == ["fine"] * 3 and all(r.error is None for r in runs)
    assert h.log_failures == 3 and len(messages) == 1
    assert str(blocked) in messages[0] and "permissions and free space" in messages[0]


async def test_by_default_the_log_failure_is_a_runtime_warning(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    h = harness(blocked)
    with pytest.warns(RuntimeWarning, match="could not append to the chat log") as caught:
        await h.run(Task(id="a", prompt="Q?"), SKILL)
        await h.run(Task(id="b", prompt="Q?"), SKILL)
    assert len(caught) == 1


# --- the eval command logs to <data dir>/chat-logs; harvest never reads it -----------------------------


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("SKILLSLEEP_CONFIG", "SKILLSLEEP_CHAT_DIRS", "SKILLSLEEP_REDACT_PATTERNS"):
        monkeypatch.delenv(var, raising=False)
    for var, name in (
        ("SKILLSLEEP_HOME", "home"),
        ("CLAUDE_CONFIG_DIR", "claude"),
        ("CODEX_HOME", "codex"),
        ("OPENCLAW_STATE_DIR", "openclaw"),
    ):
        monkeypatch.setenv(var, str(tmp_path / name))
    (tmp_path / "target.json").write_text(json.dumps([{"match": "What", "reply": "ANSWER: 4"}]))
    (tmp_path / "SKILL.md").write_text("---\nname: s\n---\n# Sums\n\n- Answer last.\n")
    (tmp_path / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "prompt": f"What is {i}+4?", "answer": "4"}) + "\n" for i in range(3))
    )
    return tmp_path


def test_eval_logs_its_episodes_and_harvest_skips_them_even_when_asked(project: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "eval",
            "--skill",
            str(project / "SKILL.md"),
            "--tasks",
            str(project / "tasks.jsonl"),
            "--target",
            f"scripted:{project / 'target.json'}",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    logs = project / "home" / "chat-logs"
    [day] = list(logs.glob("*.jsonl"))
    parsed = parse_chat_log(day.read_bytes(), source=str(day))
    assert sorted(s.prompts()[0] for s in parsed.sessions) == [f"What is {i}+4?" for i in range(3)]
    assert {r["task_id"] for r in log_lines(logs)} == {"q0", "q1", "q2"}

    by_flag = runner.invoke(main, ["harvest", "--chat-dir", str(logs), "--chat-dir", str(project / "home"), "--json"])
    assert by_flag.exit_code == 0, by_flag.output
    report = json.loads(by_flag.stdout)
    assert report["sessions"]["chat"] == 0 and report["files_seen"] == 0

    (project / "home" / "config.toml").write_text(f"[harvest]\nchat_dirs = [{str(project / 'home')!r}, 'chat-logs']\n")
    by_file = runner.invoke(main, ["harvest", "--harness", "chat", "--json"])
    assert by_file.exit_code == 0, by_file.output
    assert json.loads(by_file.stdout)["sessions"] == {"chat": 0} and json.loads(by_file.stdout)["files_seen"] == 0
    assert json.loads(runner.invoke(main, ["config", "--json"]).stdout)["harvest"]["chat_dirs"]["value"] == [
        str(project / "home"),
        str(project / "home" / "chat-logs"),
    ]
