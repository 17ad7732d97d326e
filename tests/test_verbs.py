"""The /sleep verb set on the command line: `--format md|text|json` on every verb, and markdown
errors an agent can show."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sleep_kit import (  # noqa: F401  (fixtures)
    ACCEPTED,
    HOSTILE,
    NEW,
    OLD,
    TASKS,
    data,
    invoke,
    live,
    run_args,
    save_night,
    spend,
    write_chat_logs,
    write_scripts,
)

from skillsleep.core.night.lock import StateLock
from skillsleep.core.night.nights import Nights, month_start
from skillsleep.core.night.record import NightRecord
from skillsleep.core.report.proposals import Proposals
from skillsleep.slash_commands.cli import main

# --- --format on every verb -----------------------------------------------------------------------


def _nights(data: Path, live: Path, proposal_id: str) -> None:
    """Night 1 accepted (with the proposal), night 2 running in this process, each with a ledger."""
    start = month_start()
    save_night(
        data,
        1,
        start,
        live,
        finished=start,
        **ACCEPTED,
        proposal_id=proposal_id,
    )
    save_night(data, 2, start, live, status="running", pid=os.getpid())
    for night, tokens in ((1, 300), (2, 40)):
        spend(data, night, "reflect", tokens, 0.01, start)


def test_status_format_md_is_a_short_table_with_what_to_type_next(data: Path, live: Path) -> None:
    p = Proposals(data).stage(
        live, NEW, accepted=True, reason="0.40 → 0.70", baseline_score=0.4, candidate_score=0.7, night=1
    )
    q = Proposals(data).stage(live, OLD + "- two\n", accepted=False, reason=HOSTILE)
    _nights(data, live, p.id)
    code, out, err = invoke("status", "--format", "md")
    assert code == 0, err
    lines = out.splitlines()
    assert "| night | date | skill | held-out before → after | verdict |" in lines
    date = month_start().date().isoformat()
    assert f"| 1 | {date} | fmt | 0.40 → 0.70 | accepted |" in lines
    assert f"| 2 | {date} | fmt | — → — | running |" in lines
    assert f"`skillsleep diff {p.id}` · `skillsleep adopt {p.id}` · `skillsleep reject {p.id}`" in out
    assert f"`skillsleep adopt {q.id} --force`" in out  # not accepted: the command says so
    assert "340 tokens" in out  # this month's spend, from the ledgers
    pending = next(x for x in lines if q.id in x)
    assert "not accepted (see \\[the docs\\](http://evil.example)" in pending  # why not, escaped
    assert "\x1b" not in out and "␛" in pending  # control characters shown as symbols
    assert len(lines) < 25  # short: the long form is `status` without --format
    assert "### Recent actions" not in out


def test_format_text_is_plain_even_off_a_terminal_and_json_is_the_same_as_dash_dash_json(
    data: Path, live: Path
) -> None:
    Proposals(data).stage(live, NEW, accepted=True, reason=HOSTILE)
    code, out, err = invoke("status", "--format", "text")
    assert code == 0, err
    assert "see [the docs](http://evil.example) and `rm -rf ~` ␛[31mred" in out and "\\[" not in out
    code, piped, _ = invoke("status")  # no --format: as before, markdown off a terminal
    assert "\\[the docs\\]" in piped
    as_json, as_format = invoke("status", "--json")[1], invoke("status", "--format", "json")[1]
    assert json.loads(as_json) == json.loads(as_format)
    code, out, err = invoke("status", "--json", "--format", "md")
    assert code == 2 and out == "" and "--json is the same as --format json" in err


def test_adopt_reject_and_rollback_print_one_markdown_line(data: Path, live: Path) -> None:
    props = Proposals(data)
    p = props.stage(live, NEW, accepted=True, reason="better")
    code, out, err = invoke("adopt", "--format", "md")
    assert code == 0, err
    assert out.count("\n") == 1 and f"`{p.id}`" in out and "`skillsleep rollback`" in out and live.read_text() == NEW
    code, out, err = invoke("rollback", "--format", "md")
    assert code == 0, err
    assert out.count("\n") == 1 and out.startswith("Rolled back ") and live.read_text() == OLD
    q = props.stage(live, NEW, accepted=True, reason="better")
    code, out, err = invoke("reject", q.id, "--format", "md")
    assert code == 0, err
    remembered = "its 1 change(s) join the rejected-edit memory; later nights drop them if proposed again"
    assert out == f"Rejected proposal `{q.id}`; {live} was not changed; {remembered}.\n"
    for verb in ("adopt", "reject", "rollback"):
        code, out, err = invoke(verb, "--format", "text")
        assert code in (0, 2), (verb, err)
    code, out, err = invoke("reject", "--format", "json")
    assert code == 2 and out == ""  # nothing pending: the error goes to stderr only


def test_an_error_in_md_format_is_markdown_on_stdout_too(data: Path, live: Path) -> None:
    code, out, err = invoke("adopt", "--format", "md")
    assert code == 2
    assert "there is no pending accepted proposal" in err  # stderr as always
    assert out.startswith("**Error:** there is no pending accepted proposal")  # and the agent's stdout
    Proposals(data).stage(live, NEW, accepted=True, reason="better")
    live.write_text(OLD + "- my own rule\n")
    code, out, err = invoke("adopt", "--format", "md")
    assert code == 2 and live.read_text() == OLD + "- my own rule\n"
    assert out.startswith("**Error:** ") and "changed since proposal" in out
    assert "```text\n" in out and "+- my own rule" in out  # the rest of the message, fenced
    code, out, err = invoke("adopt", "--format", "text")
    assert code == 2 and out == ""  # only md writes errors to stdout


def test_run_format_md_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sleep_kit import night_env

    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats", ["Fix the [docs](http://evil.example) link", *TASKS[1:]])
    code, out, err = invoke(*run_args(tmp_path, "--format", "text"))
    assert code == 0, err
    assert out.startswith("# skillsleep — night 1") and "Fix the [docs](http://evil.example) link" in out
    code, out, err = invoke(*run_args(tmp_path, "--format", "md", "--dry-run"))
    assert code == 0, err
    assert out.startswith("# skillsleep — night 2") and "Fix the \\[docs\\](http://evil.example) link" in out


# --- `skillsleep sleep`: what the user typed after /sleep -----------------------------------------


def test_sleep_alone_is_status_in_markdown_with_sleep_commands(data: Path, live: Path) -> None:
    p = Proposals(data).stage(live, NEW, accepted=True, reason="better")
    code, out, err = invoke("sleep")
    assert code == 0, err
    assert out.startswith("**skillsleep**: 0 night(s), 1 pending proposal(s)")
    assert f"`/sleep diff {p.id}` · `/sleep adopt {p.id}` · `/sleep reject {p.id}`" in out
    assert "skillsleep adopt" not in out
    assert invoke("sleep", "status")[1] == out
    code, out, err = invoke("sleep", "--json")  # the user's own format wins
    assert code == 0 and json.loads(out)["pending"][0]["id"] == p.id
    code, out, err = invoke("sleep", "status", "--format", "text")
    assert code == 0 and out.startswith("## skillsleep status")


def test_sleep_runs_the_verb_with_its_arguments_and_line_splits_like_a_shell(data: Path, live: Path) -> None:
    props = Proposals(data)
    p = props.stage(live, NEW, accepted=False, reason="no gain")
    code, out, err = invoke("sleep", "--line", f"adopt '{p.id}'   --force")
    assert code == 0, err
    assert out.startswith(f"Adopted proposal `{p.id}`") and out.endswith("undo with `/sleep rollback`.\n")
    assert live.read_text() == NEW
    code, out, err = invoke("sleep", "rollback", "--json")
    assert code == 0 and json.loads(out)["steps"] == 1 and live.read_text() == OLD


def test_sleep_refuses_bad_input_in_markdown_and_changes_nothing(data: Path, live: Path) -> None:
    p = Proposals(data).stage(live, NEW, accepted=True, reason="better")
    cases = {
        ("sleep", "stauts"): (
            2,
            "unknown /sleep verb 'stauts'. Did you mean 'status'? Known: adopt, cost, diff, "
            "help, reject, rollback, run, status.",
        ),
        ("sleep", "--line", f"adopt '{p.id}"): (2, "cannot split the /sleep line"),
        ("sleep", "adopt", "--bogus"): (2, "No such option '--bogus'"),
        ("sleep", "rollback", "0"): (2, "is not in the range x>=1"),
        ("sleep", "reject", "nope"): (2, "'nope' is not a staged proposal"),
        ("sleep", "--line", "status", "adopt"): (2, "either --line or the verb and its arguments"),
        ("sleep", "doctor"): (2, "unknown /sleep verb 'doctor'"),
    }
    for args, (want, words) in cases.items():
        code, out, err = invoke(*args)
        assert code == want, (args, out, err)
        assert out.startswith("**Error:** ") and out.count("**Error:**") == 1, (args, out)
        assert words in out.replace("\\", ""), (args, out, err)
        assert err == "", (args, err)  # once, on stdout: an agent reads both streams (`2>&1`) and shows both
    code, out, err = invoke("sleep", "adopt", "--bogus")
    usage = "`/sleep adopt [ID|SKILL|--all] [--edits N,M] [--force]`"
    assert usage in out and "`/sleep help`" in out  # what to type instead
    code, out, err = invoke("sleep", "reject", "nope", "--json")
    assert code == 2 and out == ""  # JSON asked for: the error is on stderr only
    assert live.read_text() == OLD and Proposals(data).get(p.id).status == "staged"
    with StateLock(data, "night"):
        code, out, err = invoke("sleep", "adopt")
    assert code == 1 and "another skillsleep cycle is running" in out and live.read_text() == OLD


def test_help_lists_every_verb_with_its_arguments(data: Path) -> None:
    code, out, err = invoke("sleep", "help")
    assert code == 0, err
    verbs = [line for line in out.splitlines() if line.startswith("- `/sleep ")]
    assert [v.split("`")[1] for v in verbs] == [
        "/sleep status [SKILL]",
        "/sleep diff [ID|SKILL]",
        "/sleep adopt [ID|SKILL|--all] [--edits N,M] [--force]",
        "/sleep reject [ID|SKILL]",
        "/sleep rollback [SKILL] [N] [--force]",
        "/sleep run [--detach] [flags…]",
        "/sleep cost",
        "/sleep help",
    ]
    assert all(" — " in v for v in verbs)
    listed = {v["verb"] for v in json.loads(invoke("help", "--json")[1])["verbs"]}
    assert listed <= set(main.commands)  # every /sleep verb is the skillsleep command of that name
    code, out, err = invoke("help")
    assert code == 0 and "- `skillsleep diff [ID|SKILL]`" in out


def test_sleep_prefix_names_the_verbs_as_the_agent_types_them(data: Path, live: Path) -> None:
    """Codex's user types `$sleep status`: the commands the output suggests must read the same."""
    p = Proposals(data).stage(live, NEW, accepted=True, reason="better")
    code, out, err = invoke("sleep", "--prefix", "$sleep")
    assert code == 0, err
    assert f"`$sleep diff {p.id}` · `$sleep adopt {p.id}` · `$sleep reject {p.id}`" in out and "/sleep" not in out
    code, out, err = invoke("sleep", "--prefix", "$sleep", "stauts")
    assert code == 2 and out.startswith("**Error:** unknown $sleep verb 'stauts'")
    code, out, err = invoke("sleep", "--prefix", "$sleep", "adopt", "--bogus")
    assert code == 2 and "`$sleep adopt [ID|SKILL|--all] [--edits N,M] [--force]`" in out
    code, out, err = invoke("sleep", "--prefix", "`x` [y](z)", "status")
    assert code == 2 and "--prefix" in out and live.read_text() == OLD


def test_sleep_run_starts_the_night_in_the_background(tmp_path: Path, data: Path, live: Path) -> None:
    """Inside an agent a night never blocks the agent's turn: `/sleep run` is `run --detach`, which
    refuses at once while a night runs (a foreground run would wait for the lock and fail otherwise)."""
    write_scripts(tmp_path)  # the settings are checked (backends built) before the running night is
    Nights(data).save(
        NightRecord(
            night=3,
            started=month_start(),
            status="running",
            pid=os.getpid(),
            harness="chat",
            skill_path=str(live),
            skill_name="fmt",
            log=str(data / "logs" / "night-0003.log"),
        )
    )
    with StateLock(data, "skillsleep run"):
        code, out, _err = invoke("sleep", *run_args(tmp_path))
    assert code == 1 and out.startswith("**Error:** night 3 is already running") and "nothing was started" in out
