"""bench/harvest.py end to end on a tiny corpus built from the test fixtures: it finishes and prints
its figures, whatever the number of workers."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from bench_script import load_bench

FIXTURES = Path(__file__).parent / "fixtures"
CODEX = "rollout-2026-11-29T09-00-00-22222222-2222-4222-8222-222222222222.jsonl"


def test_one_worker_harvests_again_into_the_store_of_its_last_first_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_bench("harvest")
    data = tmp_path / "transcripts"
    (data / "claude_code").mkdir(parents=True)
    (data / "codex").mkdir()
    shutil.copy(FIXTURES / "claude" / "split_reply.jsonl", data / "claude_code" / "split_reply.jsonl")
    shutil.copy(FIXTURES / "codex" / CODEX, data / "codex" / CODEX)
    monkeypatch.setattr(bench, "DATA", data)
    monkeypatch.setattr(sys, "argv", ["harvest.py", "--mb", "0.05", "--workers", "1", "--repeats", "2"])
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    bench.main()
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["workers"] == 1 and out["sessions_stored"] > 0
    assert out["second_pass_bytes_read"] == 0
    assert out["append_bytes_read"] == out["append_bytes_written"] > 0
