"""The verbs that read what nights left — status, cost, diff, adopt, reject, rollback, doctor — in each
of their formats, byte for byte against tests/fixtures/verbs/ (tests/golden.py): after one real
scripted night and three recorded ones (stopped early, died, running), through adopts, rollbacks and
rejects, and a state database damaged and repaired."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from golden import check
from sleep_kit import OLD, dead_pid, invoke, run_night, save_night, scripted_night, spend

from skillsleep.core.models.rundir import RunDir
from skillsleep.core.night.nights import Nights, month_start
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.result import StopReason
from skillsleep.core.shared.records import LedgerEntry, Usage

NEW_TWICE = "---\nname: fmt\n---\n- first\n- answer briefly — kurz\n- two\n"  # two changes of OLD
FORMATS = {"json": ("--json",), "md": ("--format", "md"), "text": ("--format", "text")}


def _recorded_nights(data: Path, skill: str, dead: int) -> None:
    """Night 2 stopped early last month, night 3 died (one of its calls had no price), night 4 is
    running (this process)."""
    this_month, last_month = month_start(), month_start() - timedelta(days=2)
    stop = StopReason(kind="budget", message="the token budget 1000 would be crossed", advice="raise the budget")
    save_night(
        data,
        2,
        last_month,
        skill,
        finished=last_month,
        status="stopped",
        outcome="stopped-early",
        reason="budget reached",
        baseline=0.3,
        stop=stop,
        tokens=1000,
        cost_usd=0.5,
        harness="claude-code",
    )
    save_night(data, 3, this_month, skill, status="running", pid=dead, tokens=0, cost_usd=0.0)
    save_night(data, 4, this_month, skill, status="running", pid=os.getpid(), harness="chat", steps=2)
    folder = Nights(data).folder(4)
    (folder / "plan.json").write_text("{}")
    (folder / "state.json").write_text('{"epoch": 0, "step": 1, "done": false}')
    for night, tokens, usd, when in ((2, 1000, 0.5, last_month), (3, 20, 0.01, this_month), (4, 7, 0.0, this_month)):
        spend(data, night, "reflect", tokens, usd, when, output_tokens=tokens // 10)
    unpriced = LedgerEntry(
        ts=this_month,
        role="target",
        provider="openai",
        model="my-model",
        usage=Usage(input_tokens=50, output_tokens=5),
        cost_usd=0.0,
        latency_s=1.0,
        unpriced=True,
    )
    RunDir(Nights(data).folder(3)).append_ledger(unpriced)  # a model without a price: cost "at least"


def _names(root: Path, dead: int) -> dict[str, str]:
    pid = os.getpid()
    return {
        str(root): "<ROOT>",
        f'"pid": {pid}': '"pid": "<PID>"',
        f"pid {pid}": "pid <PID>",
        f'"pid": {dead}': '"pid": "<DEAD>"',
    }


def _each_format(verb: str, names: dict[str, str], *args: str) -> None:
    for fmt, flags in FORMATS.items():
        code, out, err = invoke(verb, *args, *flags)
        assert code == 0, err
        check(f"{verb}.{fmt}", out, names)


def _adopt_and_roll_back(data: Path, skill: Path, first: str, names: dict[str, str]) -> None:
    """adopt and rollback in each format: the night's proposal (a new file), then staged ones over a
    file the user wrote (one not accepted, adopted in part)."""
    props = Proposals(data)
    for fmt in FORMATS:
        if fmt == "json":
            pid = first
        elif fmt == "md":
            skill.write_text(OLD)
            pid = props.stage(skill, OLD + "- say when you are unsure\n", accepted=True, reason="0.40 → 0.70").id
        else:
            pid = props.stage(skill, NEW_TWICE, accepted=False, reason="0.50 → 0.50: no strict gain").id
        extra = ("--force", "--edits", "2") if fmt == "text" else ()
        code, out, err = invoke("adopt", pid, *extra, *FORMATS[fmt])
        assert code == 0, err
        check(f"adopt.{fmt}", out, names)
        code, out, err = invoke("rollback", *FORMATS[fmt])
        assert code == 0, err
        check(f"rollback.{fmt}", out, names)


def _reject(data: Path, skill: Path, names: dict[str, str]) -> None:
    props = Proposals(data)
    for fmt, flags in FORMATS.items():
        p = props.stage(skill, skill.read_text() + f"- a rule for {fmt}\n", accepted=True, reason="0.40 → 0.70")
        code, out, err = invoke("reject", p.id, *flags)
        assert code == 0, err
        check(f"reject.{fmt}", out, names)


def test_the_verbs_on_what_nights_left_print_their_golden_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_night(monkeypatch, tmp_path)
    summary = run_night(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no crontab, systemctl or openclaw: nothing scheduled
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    data, skill, dead = tmp_path / "data", Path(summary["skill"]["path"]), dead_pid()
    _recorded_nights(data, str(skill), dead)
    names = _names(tmp_path, dead)
    for verb in ("status", "cost", "diff"):
        _each_format(verb, names)
    code, out, err = invoke("diff", summary["proposal"])
    assert code == 0, err
    check("diff.patch", out + "--- stderr\n" + err, names)
    _adopt_and_roll_back(data, skill, summary["proposal"], names)
    _reject(data, skill, names)
    code, out, err = invoke("status", "--json")
    check("status-after.json", out, names)


def test_doctor_prints_its_golden_outputs_before_and_after_a_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_night(monkeypatch, tmp_path)
    run_night(tmp_path)
    data, names = tmp_path / "data", {str(tmp_path): "<ROOT>"}
    for fmt, flags in (("json", ("--json",)), ("text", ())):
        code, out, err = invoke("doctor", *flags)
        assert code == 0, err
        check(f"doctor-healthy.{fmt}", out, names)
    (data / "nights" / "0001" / "night.json").write_bytes(b"\xff not json")
    for fmt, flags in (("json", ("--json",)), ("text", ())):
        code, out, _ = invoke("doctor", *flags)
        assert code == 1
        check(f"doctor-damaged.{fmt}", out, names)
    for fmt, flags in (("json", ("--json",)), ("text", ())):
        (data / "state.db").write_bytes(b"not a database" * 100)
        code, out, err = invoke("doctor", "--repair", *flags)
        assert code == 0, out + err
        check(f"doctor-repaired.{fmt}", out, names)
