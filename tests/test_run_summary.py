"""`skillsleep run --json` printed byte for byte: the summary's keys, their order and their values
for one scripted chat night, against tests/fixtures/run_summary.json (the night's folder, the
proposal id and the times in it made stable first)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sleep_kit import invoke, night_env, run_args, write_chat_logs, write_scripts

GOLDEN = Path(__file__).parent / "fixtures" / "run_summary.json"


def _stable(out: str, root: Path) -> str:
    """`out` with what differs from run to run replaced: the temporary folder, the proposal id,
    dates and times, durations."""
    out = out.replace(str(root), "<ROOT>")
    out = re.sub(r"\d{8}-\d{6}-[0-9a-f]+", "<PROPOSAL>", out)
    out = re.sub(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( ?UTC|[+-]\d{2}:\d{2}|Z)?", "<TIME>", out)
    out = re.sub(r"\(\d+m \d+s\)", "(<DURATION>)", out)
    return re.sub(r"\d{4}-\d{2}-\d{2}", "<DATE>", out)


def test_run_json_prints_the_summary_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")
    code, out, err = invoke(*run_args(tmp_path, "--json"))
    assert code == 0, err
    assert _stable(out, tmp_path) == GOLDEN.read_text(encoding="utf-8")
