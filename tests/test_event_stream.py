"""`--json` streams the run's events as JSON lines on stderr (one object a line: `kind`, `ts`, the
event's fields) while stdout keeps the one JSON document it always printed; without `--json` the
same events are the `· line` text. Retries heard from a real local server are events too."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from servers import Action, FaultServer
from test_cli import invoke, project

from skillsleep.slash_commands.progress import plain_lines, read_event

__all__ = ["project"]  # the fixture, shared with test_cli

TRAIN_KINDS = {
    "plan",
    "seed_scoring",
    "step_started",
    "rollout_done",
    "reflecting",
    "gate_started",
    "gate_decided",
    "saturated",
    "epoch_end",
    "notice",
    "final_scoring",
}


def json_lines(err: str) -> list[dict[str, Any]]:
    """Every stderr line as a JSON object (fails on a line that is not one)."""
    return [json.loads(line) for line in err.splitlines()]


def train(project: Path, *extra: str) -> tuple[int, str, str]:
    return invoke("train", "--config", str(project / "run.toml"), *extra)


def test_train_json_streams_events_on_stderr_and_keeps_its_summary_on_stdout(project: Path) -> None:
    code, out, err = train(project, "--json")
    assert code == 0, err
    summary = json.loads(out)  # stdout is the summary document and nothing else
    run = project / "runs" / "cli"
    assert summary == json.loads((run / "summary.json").read_text())
    events = json_lines(err)
    assert {e["kind"] for e in events} == TRAIN_KINDS
    assert all(
        list(e)[:2] == ["kind", "ts"] and datetime.fromisoformat(e["ts"]).utcoffset() == timedelta(0) for e in events
    )
    assert all(read_event(line) is not None for line in err.splitlines())  # each one a known event
    stages = [e for e in events if e["kind"] != "rollout_done"]
    assert stages[0]["kind"] == "plan" and stages[-1] == {**stages[-1], "kind": "final_scoring", "tasks": 2}
    rollouts = [e for e in events if e["kind"] == "rollout_done"]
    assert len(rollouts) == len((run / "rollouts.jsonl").read_text().splitlines())
    decided = [e for e in events if e["kind"] == "gate_decided"]
    assert len(decided) == summary["accepted"] + summary["rejected"] and decided[0]["accepted"] is True
    assert decided[0]["at"] == {"epoch": 0, "epochs": 2, "step": 0, "steps": 1, "night": None}


def test_the_json_events_read_back_are_the_lines_printed_without_json(project: Path) -> None:
    code, _, streamed = train(project, "--json")
    assert code == 0, streamed
    code, out, plain = train(project, "--fresh")
    assert code == 0, plain
    assert out.startswith("run: ")  # the text summary, as without events
    lines = plain.splitlines()
    assert lines == plain_lines(streamed.splitlines())
    assert lines[0].startswith("· plan: 2 epoch(s) × 1 step(s)")
    assert (
        "· epoch 1/2 step 1/1: accepted: " in plain
        and lines[-1] == "· scoring seed, best and final skill on 2 test tasks"
    )


def test_eval_json_streams_events_too(project: Path) -> None:
    args = ["--skill", str(project / "SKILL.md"), "--tasks", str(project / "tasks.jsonl")]
    code, out, err = invoke("eval", *args, "--target", f"scripted:{project / 'target.json'}", "--json")
    assert code == 0, err
    assert json.loads(out)["n"] == 10
    events = json_lines(err)
    assert events[0]["kind"] == "eval_started" and events[0]["tasks"] == 10
    assert [e["kind"] for e in events[1:]] == ["rollout_done"] * 10


def test_a_429_then_200_from_a_local_server_is_a_retry_event_naming_its_role(
    project: Path, fault_server: FaultServer
) -> None:
    fault_server.push(Action(kind="status", status=429))
    fault_server.default = Action(kind="ok", text="It is 4.")
    overrides = [
        "target.backend=openai:m",
        f"target.base_url={fault_server.url}/v1",
        "target.retry.base_delay_s=0",
        "cache.enabled=false",
    ]
    code, out, err = train(project, *overrides, "train.epochs=1", "--json")
    assert code == 0, err
    retries = [e for e in json_lines(err) if e["kind"] == "retry"]
    assert len(retries) == 1, err
    retry = retries[0]
    assert (retry["role"], retry["backend"], retry["attempt"], retry["delay_s"]) == ("target", "openai:m", 1, 0)
    assert "429" in retry["error"] and json.loads(out)["done"]
    fault_server.push(Action(kind="status", status=429))
    code, _, plain = train(project, *overrides, "train.epochs=1", "--fresh")
    assert code == 0, plain
    said = [line for line in plain.splitlines() if "attempt 1 of" in line]
    assert len(said) == 1 and said[0].startswith("· target openai:m attempt 1 of ") and "429" in said[0]
    assert said[0].endswith("; retrying in 0 s")
