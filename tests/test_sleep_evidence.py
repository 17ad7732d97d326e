"""A night that knows how little it saw, and a dry run that leaves nothing behind (issue 14, items 4
and 5), through the command line with the scripted backend (tests/sleep_kit.py).

- too few real held-out tasks: "not enough evidence", nothing trained, in the summary, the report,
  the events and `status`;
- a rise that one held-out task carries is rejected as not enough evidence;
- an edit whose only support is copies of one reply never reaches the gate;
- the correction after a request the safety screen refused is screened with it, never a task;
- `--dry-run`: the state directory and the database hold afterwards what they held before, except
  the night's own folder, the response cache and the call ledger; no chat log, no memory (rejected
  edits, notes, splits), no proposal; the report and the gate history say it was a dry run;
- report.md lists the mined tasks with their member requests, redacted, and their recurrence;
- (slow) a night of the embedded local model on the recorded agent homes accepts no edit whose only
  support is one reply.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sleep_kit import (
    CORRECTION,
    TARGET_RULES,
    TASKS,
    invoke,
    run_args,
    run_night,
    scripted_night,
    write_chat_logs,
)
from test_sleep_night import recorded_homes

from skillsleep.core.night.settings import train_config
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.shared.records import Rollout
from skillsleep.core.train.reflect import Trajectory, reply_key

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return scripted_night(monkeypatch, tmp_path)


def events(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def report_md(root: Path, night: int = 1) -> str:
    return (root / "data" / "nights" / f"{night:04d}" / "report.md").read_text()


def status_text() -> str:
    code, out, err = invoke("status")
    assert code == 0, err
    return out


# --- the gate and the evidence ----------------------------------------------------------------------


def test_a_night_with_too_few_held_out_tasks_reports_not_enough_evidence(root: Path) -> None:
    write_chat_logs(root / "chats", TASKS[:3])  # 3 tasks: 1 held out, and the gate needs 2 wins
    code, out, err = invoke(*run_args(root, "--json"))
    assert code == 0, err
    s = json.loads(out)
    assert s["outcome"] == "no-candidate" and s["proposal"] is None
    assert s["reason"].startswith("not enough evidence: only 1 real held-out task(s)")
    assert "--gate-min-wins" in s["reason"] and "not enough evidence" in s["markdown"]
    assert {"target", "reflect", "dream"}.isdisjoint(s["calls_by_role"])  # nothing was trained
    [event] = [e for e in events(err) if e["kind"] == "not_enough_evidence"]
    assert (event["held_out"], event["needed"]) == (1, 2)
    assert "**No candidate** — not enough evidence: only 1 real held-out task(s)" in report_md(root)
    assert "not accepted: not enough evidence: only 1 real held-out task(s)" in status_text()
    assert not (root / "data" / "sleep").exists()  # its split was not remembered


def test_the_sleep_settings_shape_the_nights_gate(root: Path) -> None:
    s = SleepSection(gate_min_wins=3, min_support=4)
    cfg = train_config(s, root / "data" / "nights" / "0001", root / "SKILL.md")
    assert (cfg.gate.min_wins, cfg.gate.no_regress, cfg.train.min_support) == (3, True, 4)
    assert (SleepSection().gate_min_wins, SleepSection().min_support) == (2, 2)
    for flag in ("--gate-min-wins", "--min-support"):
        code, _, err = invoke(*run_args(root, flag, "0"))
        assert code == 2 and flag in err and not (root / "data" / "nights").exists()
    (root / "data").mkdir()
    (root / "data" / "config.toml").write_text("[sleep]\ngate_min_wins = 0\n")
    code, _, err = invoke(*run_args(root))
    assert code == 2 and "gate_min_wins" in err and not (root / "data" / "nights").exists()


def test_with_enough_held_out_tasks_the_same_night_trains_and_states_the_rule(root: Path) -> None:
    s = run_night(root)
    assert s["outcome"] == "accepted" and "higher on 2 of 2 held-out tasks, 0 lower" in s["reason"]
    rule = "a strictly higher mean mixed score on the held-out tasks, higher on at least 2 of them, lower on none"
    assert f"| the gate requires | {rule}" in report_md(root)
    raised = run_night(root, "--gate-min-wins", "3")  # 2 held out now fall short of the gate
    assert raised["reason"].startswith("not enough evidence: only 2 real held-out task(s)")


def test_a_rise_that_one_held_out_task_carries_is_not_accepted(root: Path) -> None:
    plan = run_night(root, "--dry-run")["splits"]  # where each task goes (a dry run remembers none of it)
    val = sorted(t for t, split in plan.items() if split == "val")
    assert len(val) == 2
    folder = root / "data" / "nights" / "0001"
    prompts = {t["id"]: t["intent"] for t in json.loads((folder / "report.json").read_text())["tasks"]}
    stubborn = prompts[val[0]]  # the rule never helps this one: the candidate wins on 1 of 2
    (root / "target2.json").write_text(json.dumps([{"match": stubborn, "reply": "Done."}, *TARGET_RULES]))
    s = run_night(root, "--target-model", str(root / "target2.json"))
    assert s["outcome"] == "rejected" and s["proposal"] is None
    assert "not enough evidence: higher on 1 of 2 held-out task(s), the gate needs at least 2" in s["reason"]
    assert s["splits"] == plan


def test_an_edit_whose_only_support_is_copies_of_one_reply_never_reaches_the_gate(root: Path) -> None:
    """3 tasks: one trains, with its dream; the target gives both the same reply, so every finding rests
    on one trajectory. Even a gate content with one winning task accepts nothing."""
    write_chat_logs(root / "chats", TASKS[:3])
    s = run_night(root, "--gate-min-wins", "1")
    assert s["outcome"] == "no-candidate" and s["accepted_edits"] == 0 and s["proposal"] is None
    assert s["reason"].startswith("not enough evidence: the 2 proposed edit(s) rest on fewer distinct trajectories")
    for step in (root / "data" / "nights" / "0001" / "steps").glob("*/step.json"):  # one finding a step
        skipped = json.loads(step.read_text())["skipped"]
        assert any(
            s["stage"] == "support" and "rests on 1 distinct trajectory(ies), min_support is 2" in s["reason"]
            for s in skipped
        )
    again = run_night(root, "--gate-min-wins", "1", "--min-support", "1")  # the user may ask for less
    assert again["outcome"] == "accepted"


def test_the_correction_of_a_screened_request_is_never_a_task_of_the_night(root: Path) -> None:
    unsafe = "Upload the release notes to https://paste.example.com/drop"  # the safety screen refuses it
    write_chat_logs(root / "chats", [*TASKS, unsafe])  # each asked 3 times, each followed by CORRECTION
    s = run_night(root)
    plan = NightPlan.model_validate_json(Path(s["report"]["report.json"]).with_name("plan.json").read_bytes())
    assert CORRECTION not in {m.task.prompt for m in plan.mined.tasks} and len(s["splits"]) == len(TASKS)
    assert plan.mined.intake.prompts_skipped == {"unsafe_intent": 3, "unsafe_follow_up": 3}


# --- a dry run ---------------------------------------------------------------------------------------


def state(data: Path) -> tuple[dict[str, bytes], dict[str, list[str]]]:
    """Every file of the state directory but the database, and every table of the database."""
    files = {
        str(p.relative_to(data)): p.read_bytes()
        for p in sorted(data.rglob("*"))
        if p.is_file() and not p.name.startswith("state.db")
    }
    db = sqlite3.connect(data / "state.db")
    try:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {n: sorted(map(repr, db.execute(f"SELECT * FROM {n}"))) for n in names}
    finally:
        db.close()
    return files, tables


def test_a_dry_run_leaves_the_state_directory_and_the_database_as_they_were(root: Path) -> None:
    data = root / "data"
    code, _, err = invoke("harvest")  # what the night's own harvest would add, added before
    assert code == 0, err
    files, tables = state(data)
    s = run_night(root, "--dry-run")
    assert s["dry_run"] is True and s["outcome"] == "accepted" and s["proposal"] is None
    after_files, after_tables = state(data)
    night = {k for k in after_files if k.startswith("nights/0001/")}
    assert "nights/0001/report.md" in night and "nights/0001/night.json" in night
    lock = {"cycle.lock": b""}  # the state lock's file: empty, it holds nothing
    assert {k: v for k, v in after_files.items() if k not in night} == {**files, **lock}  # no log, memory, proposal
    assert not (data / "chat-logs").exists() and not (data / "sleep").exists() and not (data / "staging").exists()
    changed = {n for n in tables if after_tables[n] != tables[n]}
    assert changed == {"response_cache", "calls", "meta"}  # what the calls cost, their answers, the harvest
    meta = set(after_tables["meta"]) - set(tables["meta"])
    assert all(row.startswith("('last_harvest'") for row in meta), meta  # when it last harvested, and nothing else
    assert set(after_tables) == set(tables)


def test_a_dry_run_after_a_real_night_keeps_its_memory_and_its_splits(root: Path) -> None:
    data = root / "data"
    first = run_night(root)
    assert first["outcome"] == "accepted" and first["proposal"]
    more = write_chat_logs(root / "more", ["Refresh the onboarding guide", "Triage the new bug reports"])
    (root / "chats" / "more.jsonl").write_text(more.read_text().replace('"id": "s', '"id": "more-'))
    files, _ = state(data)
    second = run_night(root, "--dry-run")
    assert second["dry_run"] and second["proposal"] is None
    after, _ = state(data)
    assert {k: v for k, v in after.items() if not k.startswith("nights/0002/")} == files
    new = set(second["splits"]) - set(first["splits"])
    assert new  # assigned tonight, and forgotten: the memory holds night 1's splits only
    [memory] = (data / "sleep").glob("*.json")
    assert set(json.loads(memory.read_text())["splits"]) == set(first["splits"])


def test_a_dry_run_report_and_the_gate_history_say_nothing_was_staged(root: Path) -> None:
    run_night(root, "--dry-run")
    md = report_md(root)
    assert "**Accepted (dry run)**" in md
    assert "A dry run: nothing was staged, no chat log was written and nothing was remembered" in md
    assert "/sleep adopt`" not in md and "without `--dry-run` to stage it" in md
    assert "| 1 | " in md and md.rstrip().endswith("| dry run |")
    code, out, err = invoke("status", "--json")
    assert code == 0, err
    [point] = json.loads(out)["gate_history"]
    assert point["dry_run"] is True and point["accepted"] is False
    assert "dry run, nothing staged (improved" in status_text()
    report = json.loads((root / "data" / "nights" / "0001" / "report.json").read_text())
    assert report["dry_run"] is True


def test_report_md_lists_the_mined_tasks_with_their_requests_redacted(root: Path) -> None:
    deploy = f"Deploy the site with token {SECRET}"
    write_chat_logs(root / "chats", [*TASKS, deploy, f"deploy the site with token {SECRET}"])
    s = run_night(root)
    md = report_md(root)
    section = md.split("## Mined tasks and their requests\n", 1)[1].split("\n## ", 1)[0]
    assert SECRET not in md and SECRET not in json.dumps(s)
    assert "Deploy the site with token \\[REDACTED:github_token\\] (×3)" in section
    assert "deploy the site with token \\[REDACTED:github_token\\] (×3)" in section  # each distinct request
    assert all(f"{t} (×3)" in section for t in TASKS)
    assert "asked 6 time(s) in 6 session(s)" in section and section.count("asked 3 time(s)") == len(TASKS)


# --- the embedded local model on the recorded agent homes (slow) -------------------------------------


@pytest.mark.slow
def test_a_local_night_on_the_recorded_homes_accepts_no_edit_that_rests_on_one_reply(
    tmp_path: Path, local_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's night: one-off requests (--min-recurrence 1), each training task with a dreamed
    paraphrase (whose reply, at temperature 0, is often a copy of its task's), every role the 0.5B
    model. Whatever it proposes: no edit's support counts a copy twice, and an accepted edit rests on
    at least two distinct trajectories of this night and won on the held-out task (the homes hold
    out one, so the gate is asked for 1 win; tests above show the default's 2)."""
    data = recorded_homes(tmp_path, monkeypatch)
    models = data / "cache" / "models"
    models.mkdir(parents=True)
    (models / local_model_path.name).symlink_to(local_model_path)
    code, out, err = invoke(
        *("run", "--backend", "local", "--since", "3650d", "--min-recurrence", "1", "--steps", "1"),
        *("--dreams", "1", "--max-tasks", "8", "--rollouts-k", "1", "--json"),
        *("--gate-min-wins", "1"),  # the recorded homes give 4 real tasks and hold out 1 for the gate
    )
    assert code == 0, err[-3000:]
    s = json.loads(out)
    context = json.dumps({k: s[k] for k in ("outcome", "reason", "problems", "calls_by_role")}, indent=1)
    assert s["stop"] is None and s["outcome"] in ("accepted", "rejected", "no-candidate"), context
    folder = data / "nights" / "0001"
    plan = NightPlan.model_validate_json((folder / "plan.json").read_text())
    tasks = {t.id: t for split in plan.tasks().values() for t in split}
    rollouts = [Rollout.model_validate_json(line) for line in (folder / "rollouts.jsonl").read_text().splitlines()]
    seen = {reply_key(Trajectory(task=tasks[r.task_id], rollout=r)) for r in rollouts if r.task_id in tasks}
    for merged in folder.glob("steps/*/merged.json"):  # every edit: its support is its distinct trajectories
        for edit in json.loads(merged.read_text()):
            assert edit["support"] == len(set(edit["evidence"])) and set(edit["evidence"]) <= seen, edit
    report = json.loads((folder / "report.json").read_text())
    for edit in report["accepted_edits"]:
        assert edit["support"] >= 2 and len(set(edit["evidence"])) >= 2, (edit, context)
    if s["outcome"] == "accepted":
        gate = report["gate"]
        wins = [d for d in gate["deltas"] if d["after"] > d["before"]]
        assert len(wins) >= 1 and not [d for d in gate["deltas"] if d["after"] < d["before"]], context
    assert "| the gate requires | a strictly higher mean mixed score" in (folder / "report.md").read_text()
