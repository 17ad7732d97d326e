"""SKILLSLEEP_LOCAL_THREADS: the embedded model's llama.cpp threads, from the environment only; the
demo's night keeps it (a setting of the machine), and a bad value names the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands.demo_runner import Scratch
from skillsleep.slash_commands.local_threads import LOCAL_THREADS_ENV
from skillsleep.slash_commands.wiring import backend_settings


def test_the_local_backend_takes_its_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCAL_THREADS_ENV, "1")
    assert backend_settings("local", "qwen2.5-coder-0.5b").options["threads"] == 1
    assert "threads" not in backend_settings("openai", "m").options  # no other backend has threads
    monkeypatch.delenv(LOCAL_THREADS_ENV)
    assert "threads" not in backend_settings("local", "qwen2.5-coder-0.5b").options  # one per core


@pytest.mark.parametrize("raw", ["0", "two", "-1", "65"])
def test_a_bad_thread_count_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(LOCAL_THREADS_ENV, raw)
    with pytest.raises(ConfigError, match=f"SKILLSLEEP_LOCAL_THREADS={raw!r}: give a whole number from 1 to 64"):
        backend_settings("local", "qwen2.5-coder-0.5b")


def test_the_demos_night_keeps_the_thread_count_and_drops_every_other_setting(tmp_path: Path) -> None:
    env = Scratch.at(tmp_path).env({LOCAL_THREADS_ENV: "1", "SKILLSLEEP_ROLLOUTS_K": "3", "PATH": "/bin"})
    assert env[LOCAL_THREADS_ENV] == "1" and "SKILLSLEEP_ROLLOUTS_K" not in env and env["PATH"] == "/bin"
