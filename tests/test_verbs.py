"""The /sleep verb set on the command line: `--format md|text|json` on every verb, and markdown
errors an agent can show."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sleep_kit import TASKS, run_args, write_chat_logs, write_scripts
from test_proposals_cli import HOSTILE, NEW, OLD, data, invoke, live  # noqa: F401  (fixtures)

from skillsleep.core.nights import NightRecord, Nights, month_start
from skillsleep.core.proposals import Proposals
from skillsleep.core.records import LedgerEntry, Usage
from skillsleep.core.rundir import RunDir

# --- --format on every verb -----------------------------------------------------------------------


def _nights(data: Path, live: Path, proposal_id: str) -> None:  # noqa: F811
    """Night 1 accepted (with the proposal), night 2 running in this process, each with a ledger."""
    start = month_start()
    nights = Nights(data)
    nights.save(NightRecord(
        night=1, started=start, finished=start, status="finished", harness="codex", skill_path=str(live),
        skill_name="fmt", outcome="accepted", reason="0.40 → 0.70", baseline=0.4, candidate=0.7, accepted=True,
        proposal_id=proposal_id))
    nights.save(NightRecord(night=2, started=start, status="running", pid=os.getpid(), harness="codex",
                            skill_path=str(live), skill_name="fmt"))
    for night, tokens in ((1, 300), (2, 40)):
        RunDir(nights.folder(night)).append_ledger(LedgerEntry(
            ts=start, role="reflect", provider="deepseek", model="m", usage=Usage(input_tokens=tokens),
            cost_usd=0.01, latency_s=1.0))


def test_status_format_md_is_a_short_table_with_what_to_type_next(data: Path, live: Path) -> None:  # noqa: F811
    p = Proposals(data).stage(live, NEW, accepted=True, reason="0.40 → 0.70", baseline_score=0.4,
                              candidate_score=0.7, night=1)
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
        data: Path, live: Path) -> None:  # noqa: F811
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


def test_adopt_reject_and_rollback_print_one_markdown_line(data: Path, live: Path) -> None:  # noqa: F811
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
    assert out == f"Rejected proposal `{q.id}`; {live} was not changed.\n"
    for verb in ("adopt", "reject", "rollback"):
        code, out, err = invoke(verb, "--format", "text")
        assert code in (0, 2), (verb, err)
    code, out, err = invoke("reject", "--format", "json")
    assert code == 2 and out == ""  # nothing pending: the error goes to stderr only


def test_an_error_in_md_format_is_markdown_on_stdout_too(data: Path, live: Path) -> None:  # noqa: F811
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
