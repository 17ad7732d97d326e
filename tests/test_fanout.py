"""The rules of a fan-out (core/night/fanout.py) and its evidence floor on the recorded sessions:
which group a session goes to, how the budget is shared, and a group too small to mine listed as
not enough evidence without a model call (the sessions Claude Code and Codex recorded using two
user skills and none, tests/fixtures/<agent>/skills/, in a real SQLite store)."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fanout_kit import claude_home
from fixture_sessions import FIXTURES, fixture_sessions
from sleep_kit import Recorder, invoke, write_script

from skillsleep.core.models.ledger import Budget
from skillsleep.core.models.store import Store
from skillsleep.core.night.deps import NightDeps
from skillsleep.core.night.fanout import FanoutSkill, group_sessions, needs, next_share
from skillsleep.core.night.fanout_run import fanout_folder, run_fanout
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.proposals import Proposals
from skillsleep.harnesses.skills import MANAGED_NAME, SkillTarget
from skillsleep.slash_commands.fanout_runner import fanout_groups, night_skills

NOW = datetime(2026, 12, 6, tzinfo=UTC)


def _target(name: str, *, managed: bool = False) -> SkillTarget:
    return SkillTarget(path=Path(f"/s/{name}/SKILL.md"), name=name, managed=managed, harness="claude-code")


def test_a_session_goes_to_the_first_writable_skill_it_used_and_the_rest_to_the_managed_one() -> None:
    review, notes, managed = _target("review-pr"), _target("release-notes"), _target(MANAGED_NAME, managed=True)
    skills = [FanoutSkill(review, frozenset({"review-pr"})), FanoutSkill(notes, frozenset({"notes", "release-notes"}))]
    used = {
        ("c", "1"): ["review-pr"],
        ("c", "2"): ["tools:lint", "notes", "review-pr"],  # a read-only one first: the first writable wins
        ("c", "3"): [],
        ("c", "4"): ["tools:lint"],  # only a read-only skill: the managed one's
        ("c", "5"): ["gone-skill"],  # unknown: the managed one's
    }
    groups = group_sessions(used, skills, managed)
    assert [(g.skill.name, g.sessions, g.selected) for g in groups] == [
        ("review-pr", (("c", "1"),), True),
        ("release-notes", (("c", "2"),), True),
        (MANAGED_NAME, (("c", "3"), ("c", "4"), ("c", "5")), True),
    ]
    chosen = group_sessions(used, skills, managed, ["release-notes"])
    assert [g.selected for g in chosen] == [False, True, False]
    assert [g.skill.name for g in group_sessions({("c", "3"): []}, skills, managed)] == [MANAGED_NAME]


def test_the_evidence_floor_is_the_tasks_a_night_needs_times_their_recurrence() -> None:
    assert needs(SleepSection()) == 6  # 2 held-out tasks (gate_min_wins) + 1 to train, each in 2 sessions
    assert needs(SleepSection(gate="off")) == 4
    assert needs(SleepSection(gate_min_wins=3, min_recurrence=3)) == 12


def test_the_share_is_by_sessions_with_a_floor_and_what_is_left_passes_on() -> None:
    cap = Budget(tokens=1200, usd=0.6)
    first = next_share(cap, (0, 0.0), 10, 12, 3)  # 1200 × 10 / 12
    assert (first.tokens, first.usd) == (1000, pytest.approx(0.5))
    second = next_share(cap, (1000, 0.5), 1, 2, 3)  # 200 × 1/2 = 100, below the floor 1200 / 6 = 200
    assert (second.tokens, second.usd) == (200, pytest.approx(0.1))
    third = next_share(cap, (1150, 0.55), 1, 1, 3)  # the last gets what is left, under the floor too
    assert (third.tokens, third.usd) == (50, pytest.approx(0.05))
    assert next_share(cap, (1200, 0.6), 1, 1, 3).empty()
    none = next_share(Budget(), (0, 0.0), 1, 2, 2)
    assert (none.tokens, none.usd, none.empty()) == (None, None, False)


def test_recorded_groups_too_small_are_listed_as_not_enough_evidence_without_a_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = claude_home(tmp_path)
    monkeypatch.chdir(tmp_path / "proj")
    data = tmp_path / "data"
    store = Store(data / "state.db")
    for agent, root in (("claude-code", FIXTURES / "claude" / "skills"), ("codex", FIXTURES / "codex" / "skills")):
        for session in fixture_sessions(agent, root):
            store.put_session(session)
    env = {"HOME": str(tmp_path / "home")}
    settings = SleepSection(harness="claude-code", since="3650d")
    skills = night_skills(settings, home=tmp_path / "home", cwd=tmp_path / "proj", data_dir=data, env=env)
    assert skills is not None and sorted(n for s in skills for n in s.names) == ["release-notes", "review-pr"]
    managed = _target(MANAGED_NAME, managed=True)
    groups = fanout_groups(settings, store, skills, managed, NOW)
    assert groups is not None
    assert {g.skill.name: len(g.sessions) for g in groups} == {"review-pr": 2, "release-notes": 2, MANAGED_NAME: 2}
    calls = Recorder(monkeypatch)

    def no_harness(_models: object) -> object:
        raise AssertionError("no night may start")

    deps = NightDeps(nights=Nights(data), proposals=Proposals(data), store=store, open_harness=no_harness)
    fanout, results = asyncio.run(run_fanout(settings, groups, deps, data))
    store.close()
    assert results == [] and calls.seen == [] and not (data / "nights").exists()
    assert {r.skill_name: (r.status, r.reason, r.spent_tokens) for r in fanout.rows} == {
        name: ("not-enough-evidence", "not enough evidence (2 sessions; needs 6)", 0)
        for name in ("review-pr", "release-notes", MANAGED_NAME)
    }
    md = (fanout_folder(data, 1) / "report.md").read_text()
    assert "## Not enough evidence" in md and "- review-pr: not enough evidence (2 sessions; needs 6)" in md
    assert files["review-pr"].read_text().startswith("---\nname: review-pr")


def test_a_night_over_harvested_recorded_transcripts_groups_them_by_the_skill_each_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real harvest of the transcripts Claude Code and Codex wrote (tests/fixtures/<agent>/skills)
    attributes each session; a Codex night groups them by its user and project skills; each group
    is too small to mine, so the night lists them and calls no model."""
    home, proj = tmp_path / "home", tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    for folder, name in ((home / ".agents" / "skills", "review-pr"), (proj / ".agents" / "skills", "release-notes")):
        (folder / name).mkdir(parents=True)
        (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name}\n---\n\nDo it.\n")
    shutil.copytree(FIXTURES / "claude" / "skills" / "projects", home / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex" / "skills" / "sessions", home / ".codex" / "sessions")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("SKILLSLEEP_CHAT_DIRS", "")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(proj)
    calls = Recorder(monkeypatch)
    script = write_script(tmp_path)
    code, out, err = invoke(
        "run", "--harness", "codex", "--backend", f"scripted:{script}", "--since", "3650d", "--json"
    )
    assert code == 0, err[-3000:]
    rows = {r["skill_name"]: (r["sessions"], r["status"]) for r in json.loads(out)["fanout"]["rows"]}
    assert rows == {name: (2, "not-enough-evidence") for name in ("review-pr", "release-notes", MANAGED_NAME)}
    assert calls.seen == [] and not (tmp_path / "data" / "nights").exists()


@pytest.mark.parametrize("harness", ["claude-code", "codex", "openclaw"])
def test_the_recorded_fan_out_sessions_make_three_groups_each_above_the_evidence_floor(
    harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/fixtures/<agent>/fanout in a real store: review-pr's and release-notes' sessions each
    their own group; the read-only skill's (a Claude Code plugin's, a Codex system skill, an
    OpenClaw bundled one, in no skill folder of the user's) and those
    of no skill the managed one's; each holds enough sessions for a night (tests/test_agent_fanout.py
    runs that night in the real agent)."""
    home, proj = tmp_path / "home", tmp_path / "proj"
    if harness == "claude-code":
        claude_home(tmp_path)
    else:
        (proj / ".git").mkdir(parents=True)
        codex = harness == "codex"
        for folder, name in (
            (home / ".agents" / "skills", "review-pr"),
            (proj / ".agents" / "skills" if codex else home / ".openclaw" / "workspace" / "skills", "release-notes"),
            *([(home / ".codex" / "skills" / ".system", "openai-docs")] if codex else []),
        ):
            (folder / name).mkdir(parents=True)
            (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name}\n---\n\nDo it.\n")
    data = tmp_path / "data"
    store = Store(data / "state.db")
    for session in fixture_sessions(harness, FIXTURES / ("claude" if harness == "claude-code" else harness) / "fanout"):
        store.put_session(session)
    settings = SleepSection(harness=harness, since="3650d")
    skills = night_skills(settings, home=home, cwd=proj, data_dir=data, env={"HOME": str(home)})
    assert skills is not None and sorted(n for s in skills for n in s.names) == ["release-notes", "review-pr"]
    groups = fanout_groups(settings, store, skills, _target(MANAGED_NAME, managed=True), NOW)
    store.close()
    assert groups is not None
    assert {g.skill.name: len(g.sessions) for g in groups} == {"review-pr": 10, "release-notes": 10, MANAGED_NAME: 12}
    assert all(len(g.sessions) >= needs(settings) for g in groups)
