"""Progress on stderr: a live count on a terminal that never damages the result, plain lines elsewhere.

The terminal test runs the real command in a pseudo-terminal (stdout and stderr on the same tty,
as in a shell) and renders what it wrote with a terminal emulator (pyte), so it checks what a
person sees, escape sequences and all.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyte
import pytest
from click.testing import CliRunner
from sleep_kit import pty_run

from skillsleep.core.shared.events import HarvestDone, HarvestStarted, Mining
from skillsleep.slash_commands.cli import main
from skillsleep.slash_commands.progress import STAGE_CHARS, event_line, plain_lines, read_event

COLUMNS, ROWS = 300, 60  # wide: the lines name long temporary paths
SKILL = "---\nname: s\n---\n# S\n- rule\n"


@pytest.fixture()
def eval_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The issue's setup: a skill, a scripted target that always answers `ANSWER: 42`, five tasks."""
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "home"))
    (tmp_path / "SKILL.md").write_text(SKILL)
    (tmp_path / "t.json").write_text(json.dumps([{"match": "[\\s\\S]", "reply": "ANSWER: 42"}]))
    tasks = [
        {"id": f"q{i}", "prompt": f"What is {i}?", "answer": "42", "answer_pattern": r"ANSWER:\s*(.+)"}
        for i in range(1, 6)
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return tmp_path


def eval_args(root: Path) -> list[str]:
    return [
        "eval",
        "--skill",
        str(root / "SKILL.md"),
        "--tasks",
        str(root / "tasks.jsonl"),
        "--target",
        f"scripted:{root / 't.json'}",
    ]


def run_in_terminal(args: list[str], cwd: Path) -> bytes:
    """Everything `skillsleep ARGS` wrote to a pseudo-terminal of COLUMNS × ROWS (stdout and stderr both)."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    out, code = pty_run(args, cwd=cwd, env=env, size=(COLUMNS, ROWS))
    assert code == 0, out.decode(errors="replace")
    return out


def screen_lines(raw: bytes) -> list[str]:
    """The lines a terminal shows after `raw`, trailing blanks dropped."""
    screen = pyte.Screen(COLUMNS, ROWS)
    pyte.ByteStream(screen).feed(raw)
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def test_on_a_terminal_the_live_count_is_cleared_before_the_result(eval_files: Path) -> None:
    raw = run_in_terminal(eval_args(eval_files), eval_files)
    assert b"rollouts scored" in raw, "no live count was shown on the terminal"
    lines = screen_lines(raw)
    result = [
        f"{eval_files / 'SKILL.md'} on {eval_files / 'tasks.jsonl'} (5 tasks, metric hard): 1.000",
        *(f"  1.00  q{i}" for i in range(1, 6)),
        "mean 1.000, 95% interval [1.00, 1.00] over 5 tasks (every task scored the same: nothing to resample)",
    ]
    assert lines[-len(result) :] == result, "\n".join(lines)
    assert not [line for line in lines if "rollouts scored" in line], "the live count was left on the screen"
    assert lines[0] == f"· scoring {eval_files / 'SKILL.md'} on 5 tasks × 1 with scripted:{eval_files / 't.json'}"


def test_off_a_terminal_progress_is_plain_lines(eval_files: Path) -> None:
    result = CliRunner().invoke(main, eval_args(eval_files))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"· scoring {eval_files / 'SKILL.md'} on 5 tasks × 1 with scripted:{eval_files / 't.json'}"
    ]
    assert result.stdout.splitlines()[0].endswith("(5 tasks, metric hard): 1.000")


def test_on_a_terminal_the_live_display_shows_the_stage_beside_the_count(eval_files: Path) -> None:
    raw = run_in_terminal(eval_args(eval_files), eval_files)
    last = raw.rfind(b"rollouts scored")
    assert last >= 0, "no live count was shown on the terminal"
    shown = screen_lines(raw[: raw.find(b"\n", last)])  # the screen while the live display was up
    live = [line for line in shown if "rollouts scored" in line]
    assert live, "\n".join(shown)
    stage = f"scoring {eval_files / 'SKILL.md'} on 5 tasks × 1 with scripted:{eval_files / 't.json'}"
    if len(stage) > STAGE_CHARS:  # cut to the display's width
        stage = stage[: STAGE_CHARS - 1] + "…"
    assert re.search(r"\d rollouts scored", live[-1]) and stage in live[-1], live[-1]


def test_json_lines_are_read_back_as_the_plain_lines() -> None:
    events = [HarvestStarted(), HarvestDone(sessions={"chat": 2}, errors=0), Mining(sessions=2)]
    log = [event_line(e) for e in events] + ["Error: the model server is down", '{"kind": "nope"}']
    assert [read_event(line) for line in log[:3]] == events
    assert plain_lines(log) == [
        "· harvesting new sessions",
        "· mining 2 sessions for recurring tasks",
        "Error: the model server is down",
        '{"kind": "nope"}',
    ]
