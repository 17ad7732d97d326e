"""The pieces the CLI harnesses share: probe, working copy, process group kill on timeout."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Task
from skillsleep.harnesses import agent_cli
from skillsleep.harnesses.agent_cli import (
    FALLBACK_SKILL_NAME,
    AgentCLI,
    AgentSettings,
    probe,
    run_cli,
    skill_document,
    skill_name,
    task_text,
    workdir,
)

CLI = AgentCLI(harness="fake", default_command="fake-agent", package="@example/fake-agent", min_version=(1, 2, 0))


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    agent_cli._STATUS_CACHE.clear()


def test_probe_missing_names_the_install(tmp_path: Path) -> None:
    status = probe(CLI, AgentSettings(), env={"PATH": str(tmp_path)})
    assert not status.installed and not status.usable
    assert "npm install -g @example/fake-agent@1.2.0" in status.reason


def test_probe_reads_version_and_checks_minimum(tmp_path: Path) -> None:
    new = _script(tmp_path / "new", 'echo "fake-agent 1.10.3 (build x)"\n')
    old = _script(tmp_path / "old", 'echo "fake-agent 1.1.9"\n')
    ok = probe(CLI, AgentSettings(command=str(new)))
    assert ok.usable and ok.version == "1.10.3" and ok.command == str(new)  # 1.10 > 1.2: numeric, not text
    too_old = probe(CLI, AgentSettings(command=str(old)))
    assert too_old.installed and not too_old.usable and too_old.version == "1.1.9"
    assert "older than 1.2.0" in too_old.reason and "upgrade" in too_old.reason


def test_probe_unusable_when_version_fails(tmp_path: Path) -> None:
    broken = _script(tmp_path / "broken", 'echo "node:sqlite is unavailable" >&2; exit 1\n')
    status = probe(CLI, AgentSettings(command=str(broken)))
    assert status.installed and not status.usable
    assert "node:sqlite is unavailable" in status.reason


def test_probe_finds_the_default_command_on_path(tmp_path: Path) -> None:
    _script(tmp_path / "fake-agent", 'echo "2.0.0"\n')
    status = probe(CLI, AgentSettings(), env={"PATH": str(tmp_path)})
    assert status.usable and status.command == str(tmp_path / "fake-agent")


def test_workdir_is_a_copy_without_vcs_and_leaves_the_original(tmp_path: Path) -> None:
    src = tmp_path / "project"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("x = 1\n")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: main\n")
    (src / "node_modules").mkdir()
    task = Task(id="t", prompt="p", workdir=str(src))
    with workdir(task) as root:
        assert (root / "pkg" / "a.py").read_text() == "x = 1\n"
        assert not (root / ".git").exists() and not (root / "node_modules").exists()
        (root / "pkg" / "a.py").write_text("changed\n")
        (root / "new.txt").write_text("new\n")
        kept = root
    assert not kept.exists()
    assert (src / "pkg" / "a.py").read_text() == "x = 1\n" and not (src / "new.txt").exists()


def test_workdir_empty_without_task_workdir() -> None:
    with workdir(Task(id="t", prompt="p")) as root:
        assert root.is_dir() and not any(root.iterdir())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it has exited
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_run_cli_kills_the_whole_group_on_timeout(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = _script(tmp_path / "agent", f"sleep 300 & echo $! > {pidfile}; echo started; wait\n")
    result = asyncio.run(run_cli([str(script)], cwd=tmp_path, env=dict(os.environ), timeout_s=1.0))
    assert result.timed_out and result.returncode is None
    child = int(pidfile.read_text())
    for _ in range(50):  # the kernel reaps asynchronously; SIGKILL has been sent already
        if not _alive(child):
            break
        asyncio.run(asyncio.sleep(0.1))
    assert not _alive(child)


def test_run_cli_closes_stdin_and_returns_output(tmp_path: Path) -> None:
    script = _script(tmp_path / "agent", 'cat; echo "out:$PWD"; echo err >&2; exit 3\n')
    result = asyncio.run(run_cli([str(script)], cwd=tmp_path, env=dict(os.environ), timeout_s=30))
    assert not result.timed_out and result.returncode == 3
    assert result.stdout.strip() == f"out:{tmp_path}"  # `cat` read nothing: stdin is closed
    assert result.stderr.strip() == "err"


ANSWER = Skill("---\nname: answer\ndescription: How to answer any question.\n---\nOne word.\n")


def test_skill_name_comes_from_the_frontmatter_or_a_fallback() -> None:
    assert skill_name(ANSWER) == "answer"
    assert skill_name(Skill("Just a body.\n")) == FALLBACK_SKILL_NAME
    assert skill_name(Skill("---\nname: My Skill\n---\nbody\n")) == FALLBACK_SKILL_NAME
    assert skill_name(Skill("---\nname: 'quoted-name'\ndescription: d\n---\nbody\n")) == "quoted-name"


def test_skill_document_keeps_the_body_and_adds_what_agents_need() -> None:
    assert skill_document(ANSWER, "answer") == ANSWER.text
    bare = Skill("Use tabs.\n")
    doc = Skill(skill_document(bare, FALLBACK_SKILL_NAME))
    assert doc.body == bare.body
    assert f"name: {FALLBACK_SKILL_NAME}" in doc.frontmatter and "description:" in doc.frontmatter
    odd = Skill("---\nname: My Skill\nlicense: MIT\n---\nbody\n")
    doc = Skill(skill_document(odd, FALLBACK_SKILL_NAME))
    assert doc.body == "body\n"
    assert "My Skill" not in doc.frontmatter and "license: MIT" in doc.frontmatter
    assert f"name: {FALLBACK_SKILL_NAME}" in doc.frontmatter


def test_task_text_puts_context_first() -> None:
    assert task_text(Task(id="t", prompt="fix it")) == "fix it"
    assert task_text(Task(id="t", prompt="fix it", context="in src/a.py")) == "in src/a.py\n\nfix it"


def test_a_cli_found_through_a_relative_path_entry_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent runs in a run folder, so `bin/fake-agent` found from here would not be found from there."""
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "fake-agent"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert agent_cli.resolve_command(CLI, AgentSettings(), {"PATH": "bin"}) == str(exe)
    assert agent_cli.resolve_command(CLI, AgentSettings(command="bin/fake-agent"), {"PATH": ""}) == str(exe)
