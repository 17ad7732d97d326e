"""The proposal verbs on the command line: status, diff, adopt, reject, rollback."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from sleep_kit import ACCEPTED, HOSTILE, NEW, OLD, data, dead_pid, invoke, live, save_night, spend  # noqa: F401  (fixtures)

from skillsleep.core.night.lock import StateLock
from skillsleep.core.night.nights import Nights, month_start
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.result import StopReason
from skillsleep.slash_commands.cli import main

DIED = "died (the next `skillsleep run` resumes it, or starts a new night if the skill or settings changed)"


# --- status -------------------------------------------------------------------------------------


def test_status_on_an_empty_data_dir_needs_no_config_and_writes_nothing(
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(tmp_path / "missing.toml"))  # other verbs would refuse this
    code, out, err = invoke("status")
    assert code == 0, err
    assert "no nights yet; run `skillsleep run`" in out
    assert "last harvest: never" in out and "Pending proposals (0)" in out
    code, out, _ = invoke("status", "--json")
    s = json.loads(out)
    assert code == 0
    assert s["nights"] == {"count": 0, "recent": []} and s["pending"] == [] and s["actions"] == []
    assert s["last_harvest"] is None and s["spend"]["night"] is None and s["spend"]["month"]["tokens"] == 0
    assert s["problems"] == []
    assert not data.exists()  # looking did not create the data directory or a database


def test_status_shows_nights_gate_history_pending_actions_and_spend(data: Path, live: Path) -> None:
    p = Proposals(data).stage(
        live,
        NEW,
        accepted=True,
        reason="0.40 → 0.70",
        baseline_score=0.4,
        candidate_score=0.7,
        test_before=0.5,
        test_after=0.8,
        night=2,
    )
    this_month, last_month = month_start(), month_start() - timedelta(days=2)
    save_night(
        data,
        1,
        last_month,
        live,
        finished=last_month,
        status="stopped",
        harness="claude-code",
        outcome="stopped-early",
        reason="budget reached",
        baseline=0.3,
        stop=StopReason(kind="budget", message="the token budget 1000 would be crossed", advice="raise the budget"),
        tokens=1000,
        cost_usd=0.5,
    )
    save_night(
        data,
        2,
        this_month,
        live,
        finished=this_month,
        **ACCEPTED,
        test_before=0.5,
        test_after=0.8,
        proposal_id=p.id,
        tokens=300,
        cost_usd=0.25,
    )
    # a night whose process died never wrote its spend into its record: its ledger has it
    save_night(data, 3, this_month, live, status="running", pid=dead_pid(), tokens=0, cost_usd=0.0)
    save_night(data, 4, this_month, live, status="running", pid=os.getpid(), tokens=7, cost_usd=0.0)
    for night, tokens, usd, when in (
        (1, 1000, 0.5, last_month),
        (2, 300, 0.25, this_month),
        (3, 20, 0.01, this_month),
        (4, 7, 0.0, this_month),
    ):
        spend(data, night, "reflect", tokens, usd, when)

    code, out, err = invoke("status")
    assert code == 0, err
    lines = out.splitlines()
    night = {n: next(x for x in lines if x.startswith(f"- night {n} · ")) for n in (1, 2, 3, 4)}
    assert "stopped-early" in night[1] and "claude-code" in night[1]
    assert "stopped (budget): the token budget 1000 would be crossed — raise the budget" in out
    assert "accepted" in night[2] and "0.40 → 0.70" in night[2] and "test 0.50 → 0.80" in night[2]
    assert f"proposal {p.id}" in night[2] and this_month.date().isoformat() in night[2]
    assert night[3].endswith(DIED) and "running" not in night[3]
    assert night[4].endswith(f"running (pid {os.getpid()})")
    gate = out.split("### Gate history")[1].split("###")[0]
    assert "night 1" in gate and "0.30 → —" in gate and "not accepted: budget reached" in gate
    assert "night 2" in gate and "0.40 → 0.70 accepted" in gate
    assert "night 3" not in gate and "night 4" not in gate  # never reached a gate
    pending = out.split("### Pending proposals (1)")[1].split("###")[0]
    assert p.id in pending and str(live) in pending and "accepted" in pending
    assert f"`skillsleep adopt {p.id}`" in pending and f"`skillsleep diff {p.id}`" in pending
    assert f"`skillsleep reject {p.id}`" in pending
    assert "stage " + p.id in out.split("### Recent actions")[1]
    assert "spend: night 4 7 tokens $0.0000; this month 327 tokens $0.2600" in out  # night 1 is last month's

    s = json.loads(invoke("status", "--json")[1])
    assert s["nights"]["count"] == 4
    assert [n["status"] for n in s["nights"]["recent"]] == ["stopped", "finished", "died", "running"]
    assert s["spend"]["month"]["tokens"] == 327 and s["spend"]["month"]["cost_usd"] == pytest.approx(0.26)
    assert s["spend"]["night"] == {"night": 4, "tokens": 7, "cost_usd": 0.0}
    assert [x["id"] for x in s["pending"]] == [p.id] and s["pending"][0]["live_changed"] is False
    assert [a["kind"] for a in s["actions"]] == ["stage"]


def test_status_shows_the_held_out_evidence_beside_the_gate_history_and_pending_proposals(
    data: Path, live: Path
) -> None:
    """Night 2 recorded its paired difference and label (the gate was off: accepted, yet only a
    suggestion); night 1 was recorded before either was kept: its entries say nothing of them."""
    props = Proposals(data)
    old = props.stage(live, NEW, accepted=True, reason="0.40 → 0.70", baseline_score=0.4, candidate_score=0.7, night=1)
    new = props.stage(live, NEW + "- one more\n", accepted=True, reason="gate off", night=2)
    when = month_start()
    save_night(data, 1, when, live, finished=when, **ACCEPTED, proposal_id=old.id)
    paired = "+0.50 [0.17, 0.83], p = 0.031, 6 tasks × 3 samples"
    why = "suggestion — not validated: the gate was off, so it was accepted without a check on held-out tasks"
    evidence = {"paired": paired, "validated": False, "validation": why}
    save_night(data, 2, when, live, finished=when, **{**ACCEPTED, "reason": "gate off"}, proposal_id=new.id, **evidence)

    code, out, err = invoke("status")
    assert code == 0, err
    gate = [x for x in out.split("### Gate history")[1].split("###")[0].splitlines() if x.startswith("- night")]
    assert gate == [
        f"- night 1 · {when.date()} · fmt: 0.40 → 0.70 accepted (0.40 → 0.70)",  # recorded before: nothing shown
        f"- night 2 · {when.date()} · fmt: 0.40 → 0.70 (paired {paired}) accepted (gate off); {why}",
    ]
    pending = out.split("### Pending proposals (2)")[1].split("###")[0]
    line = {pid: next(x for x in pending.splitlines() if x.startswith(f"- {pid} ")) for pid in (old.id, new.id)}
    assert line[new.id].endswith(f"held-out — → — (paired {paired}); {why}")
    assert line[old.id].endswith("held-out 0.40 → 0.70") and "paired" not in line[old.id]

    s = json.loads(invoke("status", "--json")[1])
    shown = [(g["night"], g["paired"], g["validated"], g["validation"]) for g in s["gate_history"]]
    assert shown == [(1, "", None, ""), (2, paired, False, why)]
    by_id = {x["id"]: (x["paired"], x["validated"], x["validation"]) for x in s["pending"]}
    assert by_id == {old.id: ("", None, ""), new.id: (paired, False, why)}
    assert all("label" not in x for x in s["pending"] + s["gate_history"])  # the text's; JSON has the two above

    md = invoke("status", "--format", "md")[1]
    [entry] = [x for x in md.splitlines() if f"`{new.id}`" in x]
    assert f"held-out — → — (paired {paired}), accepted, {why}. Next:" in entry


def test_status_names_unreadable_records_and_a_changed_live_file(data: Path, live: Path) -> None:
    props = Proposals(data)
    p = props.stage(live, NEW, accepted=False, reason="0.50 is not above 0.50")
    bad = props.stage(live, NEW, accepted=True, reason="torn later")
    (data / "staging" / bad.id / "proposal.json").write_text("{torn")
    (data / "nights" / "0001").mkdir(parents=True)
    (data / "nights" / "0001" / "night.json").write_text("{torn")
    live.write_text(OLD + "- my own rule\n")
    code, out, err = invoke("status")
    assert code == 0, err
    problems = out.split("### Problems (2)")[1]
    assert "0001" in problems and "unreadable night record" in problems and bad.id in problems
    assert "adopt will refuse unless --force" in out
    assert f"`skillsleep adopt {p.id} --force`" in out  # not accepted: the command says so
    assert "not accepted: 0.50 is not above 0.50" in out


def test_status_shows_the_last_harvest_of_a_real_harvest(data: Path, tmp_path: Path) -> None:
    sample = max((Path(__file__).parent / "fixtures" / "codex").glob("rollout-*.jsonl"))
    sessions = tmp_path / "user" / ".codex" / "sessions" / "2026" / "11" / "29"
    sessions.mkdir(parents=True)
    shutil.copy(sample, sessions / sample.name)
    before = datetime.now(UTC)
    code, out, err = invoke("harvest", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["sessions"]["codex"] == 1
    s = json.loads(invoke("status", "--json")[1])
    h = s["last_harvest"]
    assert h["sessions"] == {"claude-code": 0, "codex": 1, "openclaw": 0} and h["errors"] == report["errors"]
    assert before <= datetime.fromisoformat(h["time"]) <= datetime.now(UTC)
    code, out, _ = invoke("status")
    assert "last harvest: " + datetime.fromisoformat(h["time"]).strftime("%Y-%m-%d %H:%M UTC") in out
    assert f"new sessions: claude-code 0, codex 1, openclaw 0; errors {report['errors']}" in out


# --- diff ---------------------------------------------------------------------------------------


def test_diff_is_against_the_live_file_as_it_is_now(data: Path, live: Path) -> None:
    p = Proposals(data).stage(live, NEW, accepted=False, reason="no gain")
    live.write_text(OLD + "- my own rule\n")
    code, out, err = invoke("diff")  # default: the newest pending one, accepted or not
    assert code == 0, err
    assert out.startswith("--- a/SKILL.md (live)\n+++ b/SKILL.md (proposal ")
    assert "+- end with `Answer: <value>`\n" in out and "-- my own rule\n" in out
    assert p.id in err
    code, out, _ = invoke("diff", p.id[:17], "--json")
    d = json.loads(out)
    assert code == 0 and d["id"] == p.id and d["skill_path"] == str(live) and "-- my own rule" in d["diff"]
    live.write_text(NEW)
    code, out, err = invoke("diff", p.id)
    assert code == 0 and out == "" and "no difference" in err
    code, _, err = invoke("diff", "nope")
    assert code == 2 and "'nope' is not a staged proposal" in err


# --- adopt --------------------------------------------------------------------------------------


def test_adopt_default_picks_the_newest_accepted(data: Path, live: Path) -> None:
    props = Proposals(data)
    v2, v3, v4 = OLD + "- two\n", OLD + "- three\n", OLD + "- four\n"
    older = props.stage(live, v2, accepted=True, reason="better")
    newest_accepted = props.stage(live, v3, accepted=True, reason="better still")
    unaccepted = props.stage(live, v4, accepted=False, reason="no gain")  # newer, but not accepted
    code, out, err = invoke("adopt")
    assert code == 0, err
    assert live.read_text() == v3
    assert f"adopted proposal {newest_accepted.id}: wrote {live}" in out
    assert "undo with `skillsleep rollback`" in out
    backup = Path(out.split("the previous file is backed up at ")[1].splitlines()[0])
    assert backup.read_text() == OLD
    assert f"superseded (older proposals of this skill, staged before this adopt): {older.id}" in out
    pending = [p["id"] for p in json.loads(invoke("status", "--json")[1])["pending"]]
    assert pending == [unaccepted.id]  # the older one was staged against the file before: superseded
    code, _, err = invoke("adopt", newest_accepted.id)
    assert code == 2 and "already adopted" in err


def test_adopt_conflict_exits_2_shows_both_diffs_and_leaves_the_file(data: Path, live: Path) -> None:
    Proposals(data).stage(live, NEW, accepted=True, reason="better")
    edited = OLD + "- my own rule\n"
    live.write_text(edited)
    code, out, err = invoke("adopt")
    assert code == 2 and out == ""
    assert "changed since proposal" in err
    assert "+- my own rule" in err  # the user's edit
    assert "+- end with `Answer: <value>`" in err  # the proposal's edit
    assert "--force" in err
    assert live.read_text() == edited
    code, out, err = invoke("adopt", "--force", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["forced"] is True and r["proposal"]["status"] == "adopted" and r["undo"] == "skillsleep rollback"
    assert live.read_text() == NEW
    assert Path(r["previous_file"]).read_text() == edited  # the user's edits are kept in the backup


def test_adopt_an_unaccepted_proposal_needs_force(data: Path, live: Path) -> None:
    p = Proposals(data).stage(live, NEW, accepted=False, reason="0.50 is not above 0.50")
    code, _, err = invoke("adopt")
    assert code == 2 and "no pending accepted proposal" in err
    code, _, err = invoke("adopt", p.id)
    assert code == 2 and "not accepted by the gate (0.50 is not above 0.50)" in err and "--force" in err
    assert live.read_text() == OLD
    code, out, err = invoke("adopt", p.id, "--force")
    assert code == 0, err
    assert live.read_text() == NEW and f"adopted proposal {p.id}" in out


def test_adopt_of_a_new_skill_says_there_was_no_file(data: Path, tmp_path: Path) -> None:
    target = tmp_path / "learned" / "SKILL.md"
    Proposals(data).stage(target, NEW, accepted=True, reason="first")
    code, out, err = invoke("adopt")
    assert code == 0, err
    assert target.read_text() == NEW and "there was no file before" in out
    code, out, err = invoke("rollback")
    assert code == 0, err
    assert not target.exists() and "removed it" in out


# --- reject, rollback ---------------------------------------------------------------------------


def test_reject(data: Path, live: Path) -> None:
    p = Proposals(data).stage(live, NEW, accepted=True, reason="better")
    code, out, err = invoke("reject", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["proposal"]["id"] == p.id and r["proposal"]["status"] == "rejected"
    assert live.read_text() == OLD
    s = json.loads(invoke("status", "--json")[1])
    assert s["pending"] == [] and [a["kind"] for a in s["actions"]] == ["stage", "reject"]
    code, _, err = invoke("adopt", p.id)
    assert code == 2 and "already rejected" in err
    code, _, err = invoke("reject")
    assert code == 2 and "no pending proposal" in err


def test_rollback_restores_the_previous_bytes_and_can_be_undone(data: Path, live: Path) -> None:
    original = live.read_bytes()
    p = Proposals(data).stage(live, NEW, accepted=True, reason="better")
    assert invoke("adopt")[0] == 0 and live.read_text() == NEW
    code, out, err = invoke("rollback", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert live.read_bytes() == original
    assert r["skill_path"] == str(live) and r["steps"] == 1 and p.id in r["restored"] and r["removed"] is False
    assert (Path(r["backup"]) / "SKILL.md").read_text() == NEW
    code, out, err = invoke("rollback")  # undo the rollback
    assert code == 0, err
    assert live.read_text() == NEW and "`skillsleep rollback` again undoes this rollback" in out
    code, _, err = invoke("rollback", "9")
    assert code == 2 and "roll back at most" in err
    assert live.read_text() == NEW


# --- the lock -----------------------------------------------------------------------------------


def test_writing_verbs_refuse_while_a_night_holds_the_lock(data: Path, live: Path) -> None:
    p = Proposals(data).stage(live, NEW, accepted=True, reason="better")
    with StateLock(data, "night"):  # a second flock, even in this process, is refused
        for args in (("adopt",), ("adopt", p.id, "--force"), ("reject",), ("rollback",)):
            code, out, err = invoke(*args)
            assert code == 1, args
            assert "another skillsleep cycle is running" in err and "night since" in err, err
        code, out, err = invoke("status")  # reading needs no lock
        assert code == 0 and p.id in out
    assert live.read_text() == OLD
    assert Proposals(data).get(p.id).status == "staged"
    assert invoke("adopt")[0] == 0 and live.read_text() == NEW  # the lock was the only obstacle


def test_store_meta_round_trip(tmp_path: Path) -> None:
    from skillsleep.core.models.store import Store

    store = Store(tmp_path / "state.db")
    try:
        assert store.meta("last_harvest") is None
        store.set_meta("last_harvest", '{"errors": 1}')
        store.set_meta("last_harvest", '{"errors": 2}')
        assert store.meta("last_harvest") == '{"errors": 2}'
        with pytest.raises(ValueError, match="schema_version"):
            store.set_meta("schema_version", "99")
    finally:
        store.close()
    from skillsleep.core.models.store_schema import SCHEMA_VERSION

    reopened = Store(tmp_path / "state.db")
    assert reopened.meta("last_harvest") == '{"errors": 2}' and reopened.meta("schema_version") == str(SCHEMA_VERSION)
    reopened.close()


def test_diff_shows_and_names_a_change_of_line_endings(data: Path, live: Path) -> None:
    Proposals(data).stage(live, NEW, accepted=True, reason="better")
    live.write_bytes(OLD.replace("\n", "\r\n").encode())  # the user's editor saved it with CRLF
    result = CliRunner().invoke(main, ["diff"])  # .stdout would turn CRLF into LF
    assert result.exit_code == 0, result.stderr
    patch = result.stdout_bytes.decode()
    assert "-- answer briefly — kurz\r\n" in patch and "+- answer briefly — kurz\n" in patch
    assert "line endings differ: the live file has CRLF, the proposal LF" in result.stderr
    code, out, _ = invoke("diff", "--json")
    assert json.loads(out)["line_endings"] == {"live": "CRLF", "proposal": "LF"}
    code, _, err = invoke("adopt")  # the conflict message says it too
    assert code == 2 and "line endings differ: the file when staged has LF, the live file CRLF" in err


# --- a history that cannot be read; edits made after an adopt ------------------------------------

TORN_HISTORY = (
    b'{"time": "2026-11-30T10:00:00Z", "kind": "adopt", "detail": "caf\xe9"}\n'  # Latin-1, not UTF-8
    b"\x00\x9c garbage \xff\n"
    b'{"time": "2026-11-30T10:00:00Z", "kind": "teleport"}\n'  # JSON, but not an action
    b'{"time": "2026-11-30T1'  # torn by a kill
)


def test_status_names_unreadable_history_lines_and_rollback_refuses_to_act_on_them(data: Path, live: Path) -> None:
    props = Proposals(data)
    p = props.stage(live, NEW, accepted=True, reason="better")
    props.adopt(p.id)
    history = data / "history.jsonl"
    history.write_bytes(history.read_bytes() + TORN_HISTORY)
    code, out, err = invoke("status")
    assert code == 0, err
    problems = out.split("### Problems (4)")[1]
    for n in (3, 4, 5, 6):
        assert f"{history} line {n}" in problems
    assert "not UTF-8" in problems and "torn" in problems
    s = json.loads(invoke("status", "--json")[1])
    assert [a["kind"] for a in s["actions"]] == ["stage", "adopt"]
    assert len(s["problems"]) == 4

    code, out, err = invoke("rollback")
    assert code == 2 and out == ""
    assert f"{history}" in err and "lines 3, 4, 5, 6" in err and "skillsleep doctor --repair" in err
    assert live.read_text() == NEW  # nothing was rolled back
    assert history.read_bytes().endswith(TORN_HISTORY)  # and the history was not touched


def test_rollback_refuses_to_drop_edits_made_after_the_adopt_unless_forced(data: Path, live: Path) -> None:
    Proposals(data).stage(live, NEW, accepted=True, reason="better")
    assert invoke("adopt")[0] == 0
    edited = NEW + "- my own rule\n"
    live.write_text(edited)
    code, out, err = invoke("rollback")
    assert code == 2 and out == ""
    assert "changed since" in err and "+- my own rule" in err and "--force" in err
    assert live.read_text() == edited
    code, out, err = invoke("rollback", "--force", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert live.read_text() == OLD and r["forced"] is True
    assert (Path(r["backup"]) / "SKILL.md").read_text() == edited  # the edits are kept in the backup
    # the forced rollback is itself undoable, and undoing it brings the edits back
    code, out, err = invoke("rollback")
    assert code == 0, err
    assert live.read_text() == edited and "forced" not in out
    # a rollback that restored "no file" refuses when a file has appeared since
    target = live.parent.parent / "learned" / "SKILL.md"
    Proposals(data).stage(target, NEW, accepted=True, reason="first")
    assert invoke("adopt")[0] == 0 and invoke("rollback")[0] == 0 and not target.exists()
    target.write_text("# mine\n")
    code, _, err = invoke("rollback")
    assert code == 2 and "+# mine" in err
    code, out, err = invoke("rollback", "--force")
    assert code == 0 and target.read_text() == NEW and "forced over edits" in out


def test_status_names_records_with_bad_bytes(data: Path, live: Path) -> None:
    props = Proposals(data)
    bad = props.stage(live, NEW, accepted=True, reason="better")
    (data / "staging" / bad.id / "proposal.json").write_bytes(b'{"id": "caf\xe9"}\n')
    (data / "nights" / "0001").mkdir(parents=True)
    (data / "nights" / "0001" / "night.json").write_bytes(b'{"night": 1, "harness": "\xff\xfe"}')
    memory = Nights(data).memory_path(str(live))
    memory.parent.mkdir(parents=True)
    memory.write_bytes(b'{"skill_path": "\x9c"}')
    code, out, err = invoke("status")
    assert code == 0, err
    problems = out.split("### Problems (3)")[1]
    assert bad.id in problems and "0001" in problems and memory.name in problems
    assert json.loads(invoke("status", "--json")[1])["pending"] == []


# --- untrusted text: markdown for an agent, plain on a terminal, never an escape sequence --------


def test_status_escapes_markdown_for_an_agent_and_shows_text_plainly_on_a_terminal(data: Path, live: Path) -> None:
    from sleep_kit import in_terminal

    Proposals(data).stage(live, NEW, accepted=True, reason=HOSTILE)
    code, out, err = invoke("status")  # not a terminal: the markdown an agent shows
    assert code == 0, err
    line = next(x for x in out.splitlines() if "accepted (" in x)
    assert "\\[the docs\\](http://evil.example) and \\`rm -rf ~\\`" in line
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "␛\\[31mred␛\\[0m␛\\]0;pwned␇ \\<U+202E>evil" in line
    screen = in_terminal("status")
    line = next(x for x in screen.splitlines() if "accepted (" in x)
    assert "see [the docs](http://evil.example) and `rm -rf ~` ␛[31mred␛[0m␛]0;pwned␇ <U+202E>evil" in line
    assert "\\" not in screen and "\x1b" not in screen and "\x07" not in screen and "\u202e" not in screen


def test_diff_on_a_terminal_shows_carriage_returns_and_no_escape_sequence(data: Path, live: Path) -> None:
    from sleep_kit import in_terminal

    Proposals(data).stage(live, OLD + "- \x1b[2Jcleared\n", accepted=True, reason="r")
    live.write_bytes(OLD.replace("\n", "\r\n").encode())
    screen = in_terminal("diff")
    assert "-- answer briefly — kurz␍" in screen and "+- ␛[2Jcleared" in screen and "\x1b" not in screen
    result = CliRunner().invoke(main, ["diff"])  # piped: the patch, byte for byte
    assert b"\x1b[2Jcleared" in result.stdout_bytes and b"kurz\r\n" in result.stdout_bytes


def test_error_messages_never_carry_escape_sequences(data: Path, live: Path) -> None:
    Proposals(data).stage(live, NEW, accepted=True, reason="better")
    live.write_text(OLD + "- \x1b]0;pwned\x07 mine\n")
    code, _, err = invoke("adopt")
    assert code == 2 and "+- ␛]0;pwned␇ mine" in err and "\x1b" not in err


def test_a_history_that_is_a_folder_is_named_by_status_and_stops_rollback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path))
    (tmp_path / "history.jsonl").mkdir()
    status = CliRunner().invoke(main, ["status", "--json"])
    assert status.exit_code == 0, status.output
    problems = json.loads(status.stdout)["problems"]
    assert any("history.jsonl as a whole cannot be read (Is a directory)" in p for p in problems)
    rollback = CliRunner().invoke(main, ["rollback"])
    assert rollback.exit_code == 2 and "Traceback" not in rollback.output
    assert (
        "history.jsonl cannot be read as a whole, so nothing was rolled back" in rollback.stderr
        and "doctor --repair" in rollback.stderr
    )
