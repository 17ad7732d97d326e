"""`skillsleep run` fanning out (docs/sleep.md#which-skills-a-night-trains): a Claude Code home with
a user skill, a project skill and a plugin's read-only one, a real SQLite store whose sessions used
each of them or no skill, the scripted backend by name, the replays in the chat harness
(tests/fanout_kit.py). Each writable skill the sessions used is trained on its own sessions, with
its own night, report and proposal; the rest go to the managed skill; a read-only skill is never
proposed for edit; `--skills` limits the night; `[sleep] skills = "managed"` is the night of before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fanout_kit import (
    LINT,
    NOTES,
    OTHER,
    REVIEW,
    SEED,
    chat_replay,
    claude_home,
    claude_home_skill,
    script_args,
    store_sessions,
)
from sleep_kit import invoke, night_env, write_script

from skillsleep.core.report.proposals import Proposals
from skillsleep.harnesses.skills import MANAGED_NAME


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The home, its skills, the store (review-pr, release-notes, the plugin's lint and no skill)."""
    data = night_env(monkeypatch, tmp_path)
    files = claude_home(tmp_path)
    monkeypatch.chdir(tmp_path / "proj")
    write_script(tmp_path)
    (tmp_path / "chats").mkdir()
    store_sessions(
        data / "state.db",
        {"review-pr": REVIEW, "release-notes+review-pr": NOTES, "": OTHER, "tools:lint": LINT},
    )
    chat_replay(monkeypatch)
    managed = tmp_path / "home" / ".claude" / "skills" / MANAGED_NAME / "SKILL.md"
    return {**files, "data": data, "script": tmp_path / "script.json", "managed": managed}


def _run(night: dict[str, Path], *extra: str, code: int = 0) -> dict[str, Any]:
    status, out, err = invoke("run", *script_args(night["script"]), *extra, "--json")
    assert status == code, err[-3000:]
    return dict(json.loads(out)) if out.strip() else {}


def test_a_night_trains_each_used_skill_on_its_own_sessions_and_stages_one_proposal_each(
    night: dict[str, Path],
) -> None:
    before = {name: night[name].read_bytes() for name in ("review-pr", "release-notes", "lint")}
    out = _run(night)
    rows = {r["skill_name"]: r for r in out["fanout"]["rows"]}
    assert set(rows) == {"review-pr", "release-notes", MANAGED_NAME}  # the plugin's lint is no group
    # a session that used release-notes, then review-pr, goes to the first: release-notes
    assert {n: r["sessions"] for n, r in rows.items()} == {"review-pr": 15, "release-notes": 15, MANAGED_NAME: 21}
    assert all(r["status"] == "trained" and r["outcome"] == "accepted" and r["proposal"] for r in rows.values()), (
        json.dumps(out["fanout"], indent=1)
    )
    nights = {n["skill"]["name"]: n for n in out["nights"]}
    assert [rows[n]["night"] for n in (MANAGED_NAME, "release-notes", "review-pr")] == [1, 2, 3]  # most first
    assert all(nights[n]["night"] == rows[n]["night"] for n in rows)
    assert nights["review-pr"]["sessions"] == 15 and nights[MANAGED_NAME]["sessions"] == 21
    proposals = {p.id: p for p in Proposals(night["data"]).list()}
    assert sorted(Path(p.skill_path).parent.name for p in proposals.values()) == sorted(
        ["review-pr", "release-notes", MANAGED_NAME]
    )
    for name in ("review-pr", "release-notes"):  # each proposal's diff touches its own skill only
        p = proposals[rows[name]["proposal"]]
        assert Path(p.skill_path) == night[name].resolve()
        assert Proposals(night["data"]).base(p).encode() == before[name]  # staged against its own file
        diff = Proposals(night["data"]).diff(p)
        assert "a/SKILL.md" in diff and "End every reply" in diff
    assert {name: night[name].read_bytes() for name in before} == before  # nothing live changed
    folder = Path(out["report"]["report.md"]).parent
    md = (folder / "report.md").read_text()
    assert all(f"## skillsleep — night {n}:" in md for n in (1, 2, 3)) and "| review-pr (night 3) | 15 |" in md
    html = (folder / "report.html").read_text()
    assert html.count('<section class="skill"') == 3 and html.count("Score over nights") == 3
    assert json.loads((folder / "report.json").read_text())["rows"][0]["skill_name"] == MANAGED_NAME

    # adopting one proposal leaves the other skills' files byte-identical
    code, _, err = invoke("adopt", rows["review-pr"]["proposal"], "--json")
    assert code == 0, err
    assert night["review-pr"].read_bytes() != before["review-pr"]
    assert (
        night["release-notes"].read_bytes() == before["release-notes"] and night["lint"].read_bytes() == before["lint"]
    )
    assert not night["managed"].exists()


def test_the_text_lists_one_line_a_skill(night: dict[str, Path]) -> None:
    code, out, err = invoke("run", *script_args(night["script"]), "--format", "text")
    assert code == 0, err[-3000:]
    lines = out.splitlines()
    assert lines[0] == "skillsleep — one night, 3 skills trained (nights 1, 2, 3)"
    assert lines[2].startswith("skillsleep-learned: night 1, 21 sessions, share no cap, spent ")
    assert lines[3].startswith("release-notes: night 2, 15 sessions") and " — accepted, proposal " in lines[3]
    assert lines[4].startswith("review-pr: night 3, 15 sessions")
    assert lines[-1].endswith("fanouts/0001/report.html")


def test_skills_limits_the_night_to_the_names_it_gives(night: dict[str, Path]) -> None:
    out = _run(night, "--skills", "review-pr")
    rows = {r["skill_name"]: r for r in out["fanout"]["rows"]}
    assert (rows["review-pr"]["status"], rows["review-pr"]["night"]) == ("trained", 1)
    assert {rows[n]["status"] for n in ("release-notes", MANAGED_NAME)} == {"not-selected"}
    assert [Path(p.skill_path).parent.name for p in Proposals(night["data"]).list()] == ["review-pr"]
    assert [n["skill"]["name"] for n in out["nights"]] == ["review-pr"]


@pytest.mark.parametrize(("name", "why"), [("tools:lint", "is read-only"), ("review-pp", "Did you mean 'review-pr'?")])
def test_a_read_only_or_unknown_name_is_refused_before_any_work(night: dict[str, Path], name: str, why: str) -> None:
    code, _, err = invoke("run", *script_args(night["script"]), "--skills", name, "--json")
    assert code == 2 and why in err and "`skillsleep skills`" in err
    assert not (night["data"] / "nights").exists()


def test_skills_managed_is_the_one_skill_night_of_before(night: dict[str, Path]) -> None:
    (night["data"] / "config.toml").write_text('[sleep]\nskills = "managed"\n')
    out = _run(night)
    assert "fanout" not in out and out["skill"]["name"] == MANAGED_NAME and out["sessions"] == 51
    assert [Path(p.skill_path).parent.name for p in Proposals(night["data"]).list()] == [MANAGED_NAME]
    assert not (night["data"] / "fanouts").exists()


def test_one_skill_named_with_skill_wins_over_skills(night: dict[str, Path]) -> None:
    out = _run(night, "--skill", "review-pr", "--skills", "release-notes")
    assert "fanout" not in out and out["skill"]["name"] == "review-pr" and out["sessions"] == 51


def test_a_small_budget_is_shared_and_each_skill_stops_with_its_spend_and_nothing_torn(night: dict[str, Path]) -> None:
    before = {name: night[name].read_bytes() for name in ("review-pr", "release-notes", "lint")}
    cap = 34_000
    out = _run(night, "--budget-tokens", str(cap), code=1)  # a night stopped by its share: exit 1
    rows = out["fanout"]["rows"]
    assert [r["skill_name"] for r in rows] == [MANAGED_NAME, "release-notes", "review-pr"]
    # the first gets the cap × its sessions / all sessions; what it leaves passes on to the next
    assert rows[0]["share_tokens"] == cap * 21 // 51
    assert rows[1]["share_tokens"] == (cap - rows[0]["spent_tokens"]) * 15 // 30
    assert rows[2]["share_tokens"] == cap - rows[0]["spent_tokens"] - rows[1]["spent_tokens"]
    assert all(0 < r["spent_tokens"] <= r["share_tokens"] for r in rows)
    assert sum(r["spent_tokens"] for r in rows) <= cap
    nights = {n["night"]: n for n in out["nights"]}
    assert [nights[n]["outcome"] for n in (1, 2)] == ["stopped-early"] * 2
    assert all(nights[n]["stop"]["kind"] == "budget" for n in (1, 2))
    for n in (1, 2):  # each stopped night keeps its plan and state: the next night resumes it
        folder = night["data"] / "nights" / f"{n:04d}"
        assert (folder / "plan.json").is_file() and (folder / "state.json").is_file()
        assert json.loads((folder / "night.json").read_text())["status"] == "stopped"
    assert {name: night[name].read_bytes() for name in before} == before and not night["managed"].exists()
    assert sorted(Path(p.skill_path).parent.name for p in Proposals(night["data"]).list()) == ["review-pr"]
    md = Path(out["report"]["report.md"]).read_text()
    assert f"| skillsleep-learned (night 1) | 21 | {rows[0]['share_tokens']:,} tokens |" in md

    again = _run(night)  # no cap: the stopped nights go on where they stopped
    resumed = {n["skill"]["name"]: (n["night"], n["resumed"]) for n in again["nights"]}
    assert resumed[MANAGED_NAME] == (1, True) and resumed["release-notes"] == (2, True)


def test_a_group_mined_but_not_ready_is_listed_as_not_enough_evidence_with_its_spend(
    night: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    alike = [f"Review the pull request for the {part} refactor" for part in ("parser", "lexer", "printer")]
    store_sessions(night["data"] / "state.db", {"fmt-check": alike})  # one cluster of near-duplicates
    fmt = claude_home_skill(night["review-pr"].parent.parent, "fmt-check")
    out = _run(night, "--skills", "fmt-check,review-pr", "--dry-run")
    rows = {r["skill_name"]: r for r in out["fanout"]["rows"]}
    row = rows["fmt-check"]
    assert (row["status"], row["outcome"], row["proposal"]) == ("not-enough-evidence", "no-candidate", None)
    assert row["reason"].startswith("only 1 distinct recurring task(s) for this skill") and row["spent_tokens"] > 0
    assert (
        rows["review-pr"]["status"] == "trained" and rows["review-pr"]["proposal"] is None
    )  # a dry run stages nothing
    assert (
        out["fanout"]["dry_run"]
        and not Proposals(night["data"]).list()
        and fmt.read_text() == SEED.format(name="fmt-check")
    )


def test_a_detached_fan_out_claims_its_log_once_and_every_skills_night_names_it(night: dict[str, Path]) -> None:
    from skillsleep.core.night.nights import Nights
    from skillsleep.core.night.record import NightRecord
    from skillsleep.core.shared.events import quiet
    from skillsleep.slash_commands.night_runner import run_sleep

    claimed: list[int] = []

    def claim(record: NightRecord) -> NightRecord:
        claimed.append(record.night)
        return record.model_copy(update={"log": "/logs/night-0001.log"})

    flags = {"harness": "claude-code", "backend": f"scripted:{night['script']}", "since": "3650d"}
    run_sleep(flags, dry_run=True, on_event=quiet, on_start=claim)
    assert claimed == [1]
    assert [r.log for r in Nights(night["data"]).list()] == ["/logs/night-0001.log"] * 3


def test_a_skill_that_cannot_be_trained_as_it_is_is_listed_and_the_others_still_run(night: dict[str, Path]) -> None:
    broken = night["release-notes"].read_text() + "\n<!-- skillsleep:slow-update:begin -->\n"
    night["release-notes"].write_text(broken)
    out = _run(night, "--dry-run")
    rows = {r["skill_name"]: r for r in out["fanout"]["rows"]}
    assert rows["release-notes"]["status"] == "not-run" and rows["release-notes"]["night"] is None
    assert "its skill cannot be trained as it is" in rows["release-notes"]["reason"]
    assert "slow-update" in rows["release-notes"]["reason"]
    assert [rows[n]["status"] for n in (MANAGED_NAME, "review-pr")] == ["trained", "trained"]
    assert night["release-notes"].read_text() == broken


def test_a_fan_out_interrupted_in_one_skills_night_writes_its_summary_then_exits_as_interrupted(
    night: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (as `asyncio.run` delivers it: a cancellation) at the second replay of the second
    skill's night: that skill is listed as stopped, the one after it as not run, the first as it
    ended; the command exits as an interrupted night does (130) and the next `run` resumes it."""
    import asyncio

    from skillsleep.core.train.harness import HarnessChoice
    from skillsleep.harnesses.chat import ChatHarness
    from skillsleep.slash_commands import night_runner

    opened: list[int] = []

    class Interrupting(ChatHarness):
        left = 2

        async def run(self, *args: Any, **kwargs: Any) -> Any:
            self.left -= 1
            if self.left < 0:
                raise asyncio.CancelledError
            return await super().run(*args, **kwargs)

    def harness(_s: object, models: Any, _on_event: object, *, dry_run: bool) -> HarnessChoice:
        opened.append(1)
        kind = Interrupting if len(opened) == 2 else ChatHarness
        return HarnessChoice(harness=kind(models.target, log_dir=None), label="chat (scripted)", timeout_s=30.0)

    monkeypatch.setattr(night_runner, "_harness", harness)
    code, _, err = invoke("run", *script_args(night["script"]), "--json")
    assert code == 130 and "interrupted" in err, err[-3000:]
    fanout = json.loads((night["data"] / "fanouts" / "0001" / "fanout.json").read_text())
    rows = {r["skill_name"]: r for r in fanout["rows"]}
    assert [r["skill_name"] for r in fanout["rows"]] == [MANAGED_NAME, "release-notes", "review-pr"]
    assert (rows[MANAGED_NAME]["status"], rows[MANAGED_NAME]["outcome"]) == ("trained", "accepted")
    stopped = rows["release-notes"]
    assert (stopped["status"], stopped["night"], stopped["outcome"]) == ("trained", 2, "stopped-early")
    assert stopped["reason"].startswith("interrupted (Ctrl-C)") and stopped["spent_tokens"] > 0
    assert (rows["review-pr"]["status"], rows["review-pr"]["night"]) == ("not-run", None)
    assert rows["review-pr"]["reason"].startswith("the night stopped at release-notes: ")
    md = (night["data"] / "fanouts" / "0001" / "report.md").read_text()
    assert "## Not run" in md and "- review-pr: the night stopped at release-notes" in md
    assert json.loads((night["data"] / "nights" / "0002" / "night.json").read_text())["status"] == "stopped"
    assert not (night["data"] / "nights" / "0003").exists()

    chat_replay(monkeypatch)  # no more Ctrl-C: the next run resumes the stopped skill's night
    again = _run(night)
    resumed = {n["skill"]["name"]: (n["night"], n["resumed"]) for n in again["nights"]}
    assert resumed["release-notes"] == (2, True) and not resumed["review-pr"][1]


def test_run_names_the_per_skill_adopt_commands_next(night: dict[str, Path]) -> None:
    """After a fan-out that staged three accepted proposals, `run`'s next step names `adopt NAME` and
    `adopt --all` with the skills' names, as the user types them where they read it (`/sleep` in an
    agent). The markdown is pinned in a golden file; a dry run says nothing was staged."""
    from golden import check

    from skillsleep.core.shared.events import quiet
    from skillsleep.slash_commands.fanout_runner import FanoutSummary
    from skillsleep.slash_commands.fanout_text import fanout_text
    from skillsleep.slash_commands.night_runner import run_sleep

    flags = {"harness": "claude-code", "backend": f"scripted:{night['script']}", "since": "3650d"}
    summary = run_sleep(flags, dry_run=False, on_event=quiet)
    assert isinstance(summary, FanoutSummary)
    want = (
        "Next: `/sleep diff NAME` shows a skill's proposal, `/sleep adopt NAME` adopts it, `/sleep adopt --all` "
        "adopts each skill's (NAME: skillsleep-learned, release-notes, review-pr); no live skill changed yet."
    )
    assert want in fanout_text(summary, prefix="/sleep").splitlines()
    code, out, err = invoke("run", *script_args(night["script"]), "--format", "md")  # night 4 …: all pending again
    assert code == 0, err[-3000:]
    assert want.replace("/sleep", "skillsleep") in out.splitlines()
    check("run-fanout.md", out, {str(night["data"].parent): "<ROOT>"})
    code, out, err = invoke("run", *script_args(night["script"]), "--format", "text", "--dry-run")
    assert code == 0, err[-3000:]
    assert "A dry run: nothing was staged and no live skill changed." in out and "adopt" not in out


def test_after_a_fan_out_with_one_accepted_proposal_the_hint_names_that_skill(night: dict[str, Path]) -> None:
    code, out, err = invoke("run", *script_args(night["script"]), "--skills", "review-pr", "--format", "text")
    assert code == 0, err[-3000:]
    assert (
        "Next: `skillsleep diff NAME` shows the proposal, `skillsleep adopt NAME` adopts it, `skillsleep reject NAME` "
        "drops it (NAME: review-pr); no live skill changed yet."
    ) in out.splitlines()


def test_status_shows_the_newest_fan_out_one_line_a_skill_and_status_skill_its_row(
    night: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """After a fan-out that trained two skills, found one too small and left one not selected, `status`
    shows it as the newest night in each format (golden files); `status SKILL` that skill's row only,
    a skill with no night included."""
    import os

    from golden import check

    store_sessions(night["data"] / "state.db", {"fmt-check": ["Check the formatting of the README"]}, times=1)
    claude_home_skill(night["review-pr"].parent.parent, "fmt-check")
    _run(night, "--skills", f"review-pr,fmt-check,{MANAGED_NAME}")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no crontab, systemctl or openclaw: nothing scheduled
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    pid = os.getpid()
    names = {str(tmp_path): "<ROOT>", f'"pid": {pid}': '"pid": "<PID>"', f"pid {pid}": "pid <PID>"}
    for fmt in ("json", "md", "text"):
        code, out, err = invoke("status", "--format", fmt)
        assert code == 0, err
        check(f"status-fanout.{fmt}", out, names)
    rows = {r["skill_name"]: r for r in json.loads(invoke("status", "--json")[1])["fanout"]["summary"]["rows"]}
    assert {n: r["status"] for n, r in rows.items()} == {
        MANAGED_NAME: "trained",
        "review-pr": "trained",
        "fmt-check": "not-enough-evidence",
        "release-notes": "not-selected",
    }
    code, out, err = invoke("status", "review-pr", "--format", "text")
    assert code == 0, err
    skills = [line for line in out.splitlines() if line.startswith("- ") and " sessions, share " in line]
    assert len(skills) == 1 and skills[0].startswith("- review-pr (night 2): 15 sessions, share no cap, spent ")
    code, out, err = invoke("status", "fmt-check", "--json")  # no night, no proposal: its row still shows
    assert code == 0, err
    seen = json.loads(out)["fanout"]["summary"]["rows"]
    assert [(r["skill_name"], r["reason"]) for r in seen] == [("fmt-check", "not enough evidence (1 session; needs 6)")]
    code, out, err = invoke("sleep", "status", "fmt-check")
    assert code == 0 and "- fmt-check: 1 session — not trained: not enough evidence (1 session; needs 6)" in out


def test_status_without_a_fan_out_has_no_fanout_key_and_an_older_fan_out_is_not_the_newest_night(
    night: dict[str, Path],
) -> None:
    code, out, _ = invoke("status", "--json")
    assert code == 0 and "fanout" not in json.loads(out)
    _run(night, "--skills", "review-pr")
    assert json.loads(invoke("status", "--json")[1])["fanout"]["summary"]["fanout"] == 1
    (night["data"] / "config.toml").write_text('[sleep]\nskills = "managed"\n')
    _run(night)  # a one-skill night after it: the fan-out is no longer the newest night
    code, out, err = invoke("status", "--json")
    assert code == 0 and "fanout" not in json.loads(out), err
    (night["data"] / "fanouts" / "0001" / "fanout.json").write_text("{")
    code, out, err = invoke("status", "--format", "text")
    assert code == 0 and "fanouts/0001/fanout.json cannot be read" in out
