"""`skillsleep run` end to end: whole nights of the sleep cycle with the scripted backend.

Each test harvests real files (sleep_kit's chat logs, the recorded Claude/Codex/OpenClaw homes,
or the external corpus in ../shared), runs one or more nights through the command line and
checks what the night decided and wrote: the plan (mined tasks, splits, dreams), what each model
role was shown (sleep_kit.Recorder), the staged proposal and its report files, the proposal
verbs (diff, adopt, reject, rollback, status) and what the skill's memory carries to the next
night.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sleep_kit import (
    DREAM,
    RULE,
    TASKS,
    Recorder,
    in_terminal,
    invoke,
    night_env,
    run_args,
    run_night,
    write_chat_logs,
    write_scripts,
)

from skillsleep.core.mine.similarity import normalize, task_id
from skillsleep.core.models.store import Store
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.report.files import read_json
from skillsleep.core.report.proposal_record import ABSENT
from skillsleep.harnesses.skills import MANAGED_NAME

REC = Path(__file__).parent / "fixtures" / "recorded"
MANIFEST = json.loads((REC / "manifest.json").read_text())
ENTRIES: list[dict[str, Any]] = MANIFEST["transcripts"]
HARNESS = {"claude": "claude-code", "codex": "codex", "openclaw": "openclaw"}
RECORDED_HOMES = {
    "claude": REC / "claude" / "config",
    "codex": REC / "codex" / "codex-home",
    "openclaw": REC / "openclaw" / "state",
}
AGENT_ENV = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "openclaw": "OPENCLAW_STATE_DIR"}
# Text an agent injects next to the user's words (as in test_recorded_transcripts): never a task.
INJECTED = (
    "<environment_context>",
    "AGENTS.md",
    "<skill>",
    "SKILL_SAYS",
    "Base directory for this skill",
    "<system-reminder>",
    "<command-name>",
    "Keep answers short",
)
OPTIMIZER_ROLES = ("reflect", "merge", "rank", "slow_update", "meta", "dream")
REPORT_FILES = ("report.md", "report.json", "report.html")
STAGED_FILES = ("SKILL.md", "base.md", "diff.patch", *REPORT_FILES, "proposal.json")


# --- helpers --------------------------------------------------------------------------------------


@pytest.fixture
def chat_night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sleep_kit's defaults: the six TASKS three times each in a chat log, scripts, a private data dir."""
    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")
    return tmp_path


def plan_of(data: Path, night: int = 1) -> NightPlan:
    return NightPlan.model_validate_json((Nights(data).folder(night) / "plan.json").read_text())


def staged(data: Path, summary: dict[str, Any]) -> Path:
    assert summary["proposal"], summary
    return data / "staging" / summary["proposal"]


def assert_splits_are_sound(plan: NightPlan) -> None:
    """val/test real only; dreams only in train and made from train tasks; no cluster in two splits."""
    tasks = plan.tasks()
    real = {m.task.id for m in plan.mined.tasks}
    for split in ("val", "test"):
        assert all(t.origin == "real" and t.id in real for t in tasks[split]), split
    assert plan.dreams and all(d.origin == "dream" and d.split == "train" for d in plan.dreams)
    assert {t.id for t in tasks["train"] if t.origin == "dream"} == {d.id for d in plan.dreams}
    for d in plan.dreams:
        parent = d.id.split("~dream")[0]
        assert d.id != parent and plan.splits[parent] == "train", d.id
    assert set(plan.splits) == real  # every chosen task has a split, nothing else does
    assert sorted(i for ids in plan.mined.clusters.values() for i in ids) == sorted(real)
    for cluster, ids in plan.mined.clusters.items():
        assert len({plan.splits[i] for i in ids}) == 1, (cluster, {i: plan.splits[i] for i in ids})


def html_loads_nothing(html: str) -> None:
    assert not re.search(r"""(?:src|href|action|srcset)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"url\(\s*[\"']?\s*(?:https?:)?//", html, re.IGNORECASE)
    assert "<script" not in html.lower() and "@import" not in html


# --- 1. one night on chat logs ------------------------------------------------------------------


def test_chat_log_night_mines_splits_trains_and_stages_an_accepted_proposal(
    chat_night: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = Recorder(monkeypatch)
    data = chat_night / "data"
    s = run_night(chat_night)
    assert s["outcome"] == "accepted" and s["night"] == 1 and s["harness"] == "chat"
    assert s["skill"]["managed"] and s["skill"]["name"] == MANAGED_NAME
    assert s["harvest"]["sessions"]["chat"] == 3 * len(TASKS) and s["sessions"] == 3 * len(TASKS)

    plan = plan_of(data)
    assert sorted(m.task.prompt for m in plan.mined.tasks) == sorted(TASKS)
    assert {m.task.id for m in plan.mined.tasks} == {task_id(normalize(t)) for t in TASKS}
    assert all(m.recurrence == 3 and m.recurrent for m in plan.mined.tasks)
    assert s["recurring_tasks"] == len(TASKS) and s["splits"] == plan.splits and s["unrelated"] == []
    assert set(s["splits"]) == {m.task.id for m in plan.mined.tasks}
    assert_splits_are_sound(plan)
    tasks = plan.tasks()
    assert tasks["val"] and tasks["test"]
    assert all(d.prompt == DREAM for d in plan.dreams)
    assert s["tasks"] == {
        "train": len(tasks["train"]),
        "val": len(tasks["val"]),
        "test": len(tasks["test"]),
        "dream": len(plan.dreams),
    }

    # test tasks never reach the optimizer (mining sees every request before there are splits)
    seen = rec.texts(*OPTIMIZER_ROLES)
    assert rec.texts("reflect") and rec.texts("dream")
    for t in tasks["test"]:
        assert not [x for x in seen if t.prompt in x], t.prompt

    folder = staged(data, s)
    assert sorted(p.name for p in folder.iterdir()) == sorted(STAGED_FILES)
    proposal = json.loads((folder / "proposal.json").read_text())
    assert proposal["accepted"] is True and proposal["status"] == "staged" and proposal["night"] == 1
    assert proposal["base_hash"] == ABSENT  # the managed skill did not exist yet
    skill = (folder / "SKILL.md").read_text()
    assert RULE in skill and skill.startswith(f"---\nname: {MANAGED_NAME}\n")
    assert (folder / "base.md").read_text() == ""
    assert f"+{RULE}\n" in (folder / "diff.patch").read_text()

    report = read_json((folder / "report.json").read_text())
    assert report.outcome == "accepted" and report.night == 1 and report.history == []
    assert report.gate is not None and report.gate.accepted
    assert (report.gate.baseline, report.gate.candidate) == (0.0, 1.0) == (s["baseline"], s["candidate"])
    assert report.test is not None and (report.test.before, report.test.after) == (0.0, 1.0)
    assert report.test.tasks == len(tasks["test"])
    assert (proposal["baseline_score"], proposal["candidate_score"]) == (0.0, 1.0)
    assert (proposal["test_before"], proposal["test_after"]) == (0.0, 1.0)
    assert {t.id for t in report.tasks} == {t.id for v in tasks.values() for t in v}
    html = (folder / "report.html").read_text()
    html_loads_nothing(html)
    assert "Content-Security-Policy" in html
    for name in REPORT_FILES:  # the night's folder holds the same report
        assert (folder / name).read_text() == Path(s["report"][name]).read_text()

    live = data / "skills" / MANAGED_NAME / "SKILL.md"
    assert s["skill"]["path"] == str(live) and not live.exists() and s["adopted"] is False


# --- 2. the proposal verbs after a night -----------------------------------------------------------


def test_diff_adopt_status_and_rollback_after_a_night(chat_night: Path) -> None:
    data = chat_night / "data"
    s = run_night(chat_night)
    live = data / "skills" / MANAGED_NAME / "SKILL.md"
    candidate = (staged(data, s) / "SKILL.md").read_text()

    code, out, err = invoke("diff")
    assert code == 0, err
    assert f"+{RULE}" in out.splitlines() and s["proposal"] in err

    code, out, err = invoke("adopt", "--json")
    assert code == 0, err
    assert Path(json.loads(out)["skill_path"]) == live
    assert live.read_text() == candidate

    code, out, err = invoke("status", "--json")
    assert code == 0, err
    st = json.loads(out)
    (night,) = st["nights"]["recent"]
    assert night["night"] == 1 and night["outcome"] == "accepted" and night["proposal_id"] == s["proposal"]
    assert night["status"] == "finished" and night["harness"] == "chat"
    assert [a["kind"] for a in st["actions"]] == ["stage", "adopt"]
    assert st["actions"][-1]["proposal_id"] == s["proposal"] and st["pending"] == []

    code, out, err = invoke("rollback", "--json")
    assert code == 0, err
    assert json.loads(out)["removed"] is True and not live.exists()


def test_adopt_refuses_a_live_file_edited_since_staging_unless_forced(chat_night: Path) -> None:
    data = chat_night / "data"
    s = run_night(chat_night)
    live = data / "skills" / MANAGED_NAME / "SKILL.md"
    live.parent.mkdir(parents=True)
    mine = "# My own habits\n\n- Keep it short.\n"
    live.write_text(mine)

    code, out, err = invoke("adopt")
    assert code == 2
    assert "--- your edits since staging ---" in err and "+- Keep it short." in err
    assert "--- the proposal's edits ---" in err and f"+{RULE}" in err and "--force" in err
    assert live.read_text() == mine

    code, out, err = invoke("adopt", "--force", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["forced"] is True and live.read_text() == (staged(data, s) / "SKILL.md").read_text()
    assert Path(result["previous_file"]).read_text() == mine  # the user's edit is in the backup


def test_reject_leaves_nothing_to_adopt(chat_night: Path) -> None:
    data = chat_night / "data"
    s = run_night(chat_night)
    code, out, err = invoke("reject", "--json")
    assert code == 0, err
    assert json.loads(out)["proposal"]["status"] == "rejected"
    assert json.loads((staged(data, s) / "proposal.json").read_text())["status"] == "rejected"
    code, _, err = invoke("adopt")
    assert code == 2 and "there is no pending accepted proposal" in err
    assert not (data / "skills" / MANAGED_NAME / "SKILL.md").exists()


# --- 3. the second night -------------------------------------------------------------------------


def test_second_night_keeps_splits_history_rejected_edits_and_meta_notes(
    chat_night: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = chat_night / "data"
    brief = "Be brief."
    write_scripts(
        chat_night,
        findings=[{"kind": "skill_defect", "diagnosis": "too long", "op": "add", "target": "", "content": brief}],
    )
    first_rec = Recorder(monkeypatch)
    first = run_night(chat_night)
    assert first["outcome"] == "rejected" and first["night"] == 1  # "Be brief." does not help
    assert first["proposal"] is None and first["rejected_edits"] >= 1
    first_reflect = first_rec.texts("reflect")
    assert first_reflect and not any("Answer-format rules pay off." in t for t in first_reflect)

    key = first["skill"]["path"]
    memory = Nights(data).memory(key)
    assert memory.nights == [1] and memory.splits == first["splits"]
    assert any(r.edit.content == brief for r in memory.rejected)
    assert "Answer-format rules pay off." in memory.meta_skill

    write_scripts(chat_night)  # night 2: the reflection proposes the rule that helps
    rec = Recorder(monkeypatch)
    second = run_night(chat_night)
    assert second["night"] == 2 and second["outcome"] == "accepted" and not second["resumed"]
    assert second["harvest"]["sessions"]["chat"] == 0  # incremental: nothing new to read
    assert second["sessions"] == first["sessions"]
    assert second["splits"] == first["splits"]  # the same tasks keep their splits
    assert plan_of(data, 2).splits == plan_of(data, 1).splits

    reflect = rec.texts("reflect")
    assert reflect and any(brief in t for t in reflect)  # the rejected edit of night 1 is shown
    assert any("Answer-format rules pay off." in t for t in reflect)  # and night 1's meta notes

    report = read_json(Path(second["report"]["report.json"]).read_text())
    assert report.night == 2 and [p.night for p in report.history] == [1]
    assert report.history[0].baseline == first["baseline"] and report.history[0].accepted is False
    html = Path(second["report"]["report.html"]).read_text()  # the chart: night 1, then this night
    assert 'aria-label="score over 2 night(s)"' in html
    assert html.index('data-night="1"') < html.index('data-night="2"')
    assert "| 1 | " in Path(second["report"]["report.md"]).read_text()
    memory_files = list((data / "sleep").glob("*.json"))
    assert len(memory_files) == 1
    assert json.loads(memory_files[0].read_text())["nights"] == [1, 2]
    assert Nights(data).memory(key).nights == [1, 2]


def test_a_night_that_relearns_a_pending_proposal_does_not_stage_it_twice(chat_night: Path) -> None:
    first = run_night(chat_night)
    second = run_night(chat_night)
    assert first["outcome"] == second["outcome"] == "accepted"
    assert second["proposal"] == first["proposal"]
    assert len(list((chat_night / "data" / "staging").iterdir())) == 1
    code, _, err = invoke("adopt")
    assert code == 0, err
    third = run_night(chat_night)  # the live skill now holds the rule: nothing new to propose
    assert third["proposal"] is None and third["outcome"] in ("no-candidate", "rejected")


def test_distinct_slash_commands_are_distinct_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command's name is what it asks: "/commit" and "/changelog" must not mine as one task (a
    "/name" once normalized like a path, so every command became the same "<path>")."""
    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    commands = ["/commit", "/changelog", "/review-pr 12"]
    write_chat_logs(tmp_path / "chats", commands)
    # 3 tasks: 1 held out, 1 trained (its dream's reply a copy of its own): enough for what this is about
    s = run_night(tmp_path, "--gate-min-wins", "1", "--min-support", "1")
    plan = plan_of(tmp_path / "data")
    assert sorted(m.task.prompt for m in plan.mined.tasks) == sorted(commands)
    assert all(m.recurrence == 3 and m.wordings == [m.task.prompt] for m in plan.mined.tasks)
    assert len(plan.mined.clusters) == 3 and s["outcome"] == "accepted"
    assert_splits_are_sound(plan)


# --- 4. --skill ----------------------------------------------------------------------------------

AGENTS = (
    "# Project guide\n"
    "\n"
    "Intro text that stays.\n"
    "\n"
    "## Testing\n"
    "\n"
    "- Run pytest before pushing.\n"
    "\n"
    "## Release\n"
    "\n"
    "- Tag releases as vX.Y.Z.\n"
    "\n"
    "### Notes\n"
    "\n"
    "- Changelog first.\n"
    "\n"
    "## Style\n"
    "\n"
    "- Use ruff.\n"
)


def test_skill_section_trains_only_that_section_of_only_the_related_tasks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path, relevant=[1, 2, 3, 4])  # the skill is about the first four tasks shown
    write_chat_logs(tmp_path / "chats")
    agents = tmp_path / "project" / "AGENTS.md"
    agents.parent.mkdir()
    agents.write_bytes(AGENTS.encode())
    rec = Recorder(monkeypatch)
    data = tmp_path / "data"

    s = run_night(tmp_path, "--skill", f"{agents}#Release", "--gate-min-wins", "1")  # 4 tasks hold out 1
    assert s["outcome"] == "accepted"
    assert s["skill"] == {"path": str(agents), "section": "Release", "name": "Release", "managed": False}

    (relevance,) = rec.texts("relevance")
    assert "- Tag releases as vX.Y.Z." in relevance  # the section is what the filter judges against
    assert "- Changelog first." in relevance and "- Use ruff." not in relevance and "Intro text" not in relevance
    order = sorted(TASKS, key=relevance.index)  # the tasks in the order the filter saw them
    plan = plan_of(data)
    by_prompt = {m.task.prompt: m.task.id for m in plan.mined.tasks}
    assert sorted(by_prompt) == sorted(order[:4])
    assert len(s["unrelated"]) == 2 and set(s["unrelated"]).isdisjoint(plan.splits)
    assert s["recurring_tasks"] == len(TASKS) and set(s["splits"]) == set(by_prompt.values())
    assert_splits_are_sound(plan)
    for prompt in order[4:]:  # the unrelated tasks are neither trained nor held out
        assert not any(t.prompt == prompt for v in plan.tasks().values() for t in v)
        assert not any(prompt in x for x in rec.texts("target", "reflect", "dream"))

    folder = staged(data, s)
    assert (folder / "base.md").read_bytes() == AGENTS.encode()
    new = (folder / "SKILL.md").read_bytes().decode()
    head, tail = AGENTS.split("## Release\n")[0], "## Style\n"
    assert new.startswith(head + "## Release\n") and new.endswith(tail + "\n- Use ruff.\n")
    body = new[len(head + "## Release\n") : new.index("## Style\n")]
    assert RULE in body and "- Tag releases as vX.Y.Z." in body and "### Notes" in body
    assert (
        new[: len(head)] == AGENTS[: len(head)]
        and new[new.index("## Style\n") :] == AGENTS[AGENTS.index("## Style\n") :]
    )
    patch = (folder / "diff.patch").read_text()
    assert patch.startswith("--- a/AGENTS.md\n+++ b/AGENTS.md\n") and f"+- {RULE}" in patch
    assert not [line for line in patch.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert agents.read_bytes() == AGENTS.encode()  # the live file is untouched until adopt


def test_skill_path_to_an_existing_skill_stages_a_diff_against_it(
    chat_night: Path,
) -> None:
    seed = "---\nname: release-notes\ndescription: how I write release notes\n---\n# Release notes\n\n- Be factual.\n"
    skill = chat_night / "skills" / "release-notes" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(seed)
    data = chat_night / "data"
    s = run_night(chat_night, "--skill", str(skill))
    assert s["outcome"] == "accepted" and s["skill"]["name"] == "release-notes" and not s["skill"]["managed"]
    folder = staged(data, s)
    proposal = json.loads((folder / "proposal.json").read_text())
    assert proposal["skill_path"] == str(skill) and proposal["base_hash"] == hashlib.sha256(seed.encode()).hexdigest()
    assert (folder / "base.md").read_text() == seed
    candidate = (folder / "SKILL.md").read_text()
    assert candidate.startswith(seed.rstrip("\n")) and RULE in candidate
    patch = (folder / "diff.patch").read_text()
    assert patch.startswith("--- a/SKILL.md\n+++ b/SKILL.md\n")
    assert " - Be factual." in patch.splitlines() and f"+- {RULE}" in patch.splitlines()
    assert skill.read_text() == seed
    assert not (data / "skills" / MANAGED_NAME).exists()


def test_skill_name_with_the_chat_harness_is_a_usage_error(chat_night: Path) -> None:
    code, _, err = invoke(*run_args(chat_night, "--skill", "release-notes"))
    assert code == 2
    assert "--skill 'release-notes'" in err and "no skill" in err and "PATH" in err
    assert not (chat_night / "data" / "staging").exists()


SEED_BYTES = {  # a live skill as an editor may have saved it; lines are edited only at the end
    "crlf": b"---\r\nname: release-notes\r\ndescription: notes\r\n---\r\n# Release notes\r\n\r\n- Be factual.\r\n",
    "mixed": b"---\r\nname: release-notes\ndescription: notes\r\n---\n# Release notes\r\n\r\n- Be factual.\n",
    "no-final-newline": b"---\nname: release-notes\ndescription: notes\n---\n# Release notes\n\n- Be factual.",
    "bom": "\ufeff---\r\nname: release-notes\r\ndescription: notes\r\n---\r\n# Release notes\r\n\r\n- Be factual.\r\n".encode(),
}


@pytest.mark.parametrize("kind", SEED_BYTES)
def test_line_endings_final_newline_and_bom_survive_a_night_adopt_and_rollback(chat_night: Path, kind: str) -> None:
    original = SEED_BYTES[kind]
    skill = chat_night / "skills" / "release-notes" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_bytes(original)
    data = chat_night / "data"
    s = run_night(chat_night, "--skill", str(skill))
    staged_bytes = (staged(data, s) / "SKILL.md").read_bytes()
    kept = original if original.endswith(b"\n") else original + b"\n"
    assert staged_bytes.startswith(kept), "a line the night did not edit changed its bytes"
    added = staged_bytes[len(kept) :]
    assert RULE.encode() in added
    if b"\r\n" in original:  # new lines take the file's usual ending (CRLF in the mixed file too)
        assert added.count(b"\n") == added.count(b"\r\n") > 0
    assert staged_bytes.endswith(b"\n") == original.endswith(b"\n")
    code, out, err = invoke("diff")
    assert code == 0, err
    removed = [line for line in out.splitlines() if line.startswith("-") and not line.startswith("---")]
    # only additions; a last line without a newline gains one when a line is added after it
    assert removed == ([] if original.endswith(b"\n") else ["-- Be factual."])
    assert ("\\ No newline at end of file" in out) == (not original.endswith(b"\n"))

    assert invoke("adopt")[0] == 0
    assert skill.read_bytes() == staged_bytes
    code, out, err = invoke("diff", s["proposal"])
    assert code == 0 and out == "" and "no difference" in err
    assert invoke("rollback")[0] == 0
    assert skill.read_bytes() == original

    again = run_night(chat_night, "--skill", str(skill))  # the same candidate, staged anew
    edited = original.replace(b"Be factual.", b"Be factual and brief.")
    skill.write_bytes(edited)
    code, _, err = invoke("adopt", again["proposal"])
    assert code == 2 and "Be factual and brief." in err
    code, out, err = invoke("adopt", again["proposal"], "--force", "--json")
    assert code == 0, err
    assert skill.read_bytes() == (staged(data, again) / "SKILL.md").read_bytes() == staged_bytes
    assert Path(json.loads(out)["previous_file"]).read_bytes() == edited
    assert invoke("rollback")[0] == 0
    assert skill.read_bytes() == edited


def test_the_night_is_plain_text_on_a_terminal_and_escaped_markdown_elsewhere(chat_night: Path) -> None:
    hostile = "Fix the [docs](http://evil.example) link in `make docs` \x1b[31mnow\x1b[0m"
    write_chat_logs(chat_night / "chats", [hostile, *TASKS[1:]])
    screen = in_terminal(*run_args(chat_night))
    assert "Fix the [docs](http://evil.example) link in `make docs` ␛[31mnow␛[0m" in screen, screen[-2000:]
    assert "\\[docs\\]" not in screen and "\x1b[31m" not in screen
    report = (chat_night / "data" / "nights" / "0001" / "report.md").read_text()
    assert "Fix the \\[docs\\](http://evil.example) link in \\`make docs\\` ␛\\[31mnow␛\\[0m" in report


# --- 5. the recorded Claude Code / Codex / OpenClaw homes -----------------------------------------


def recorded_homes(root: Path, monkeypatch: pytest.MonkeyPatch, agents: tuple[str, ...] = tuple(HARNESS)) -> Path:
    """Copies of the recorded agent homes (the repository's fixtures are never touched), each
    agent's variable pointed at its copy; no chat logs. Returns the data dir."""
    data = night_env(monkeypatch, root)
    monkeypatch.delenv("SKILLSLEEP_CHAT_DIRS", raising=False)
    for agent in agents:
        shutil.copytree(RECORDED_HOMES[agent], root / agent)
        monkeypatch.setenv(AGENT_ENV[agent], str(root / agent))
    write_scripts(root)
    return data


def requests_of(entries: list[dict[str, Any]]) -> Counter[str]:
    """How often each request was made: user prompts, and slash commands as `/name args`."""
    asked: Counter[str] = Counter()
    for e in entries:
        asked.update(e["prompts"])
        asked.update(f"{c['name']} {c['args']}".strip() for c in e["commands"])
    return asked


def digest(folder: Path) -> dict[str, str]:
    return {
        str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file()
    }


def test_night_on_the_recorded_agent_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    originals = digest(REC)
    data = recorded_homes(tmp_path, monkeypatch)
    rec = Recorder(monkeypatch)
    s = run_night(tmp_path, "--min-recurrence", "1")
    want = {HARNESS[a]: len({e["session_id"] for e in ENTRIES if e["agent"] == a}) for a in HARNESS}
    assert s["harvest"]["sessions"] == want and s["harvest"]["errors"] == 0 and not s["harvest"]["unreadable"]
    assert s["sessions"] == sum(want.values())

    asked = requests_of(ENTRIES)
    plan = plan_of(data)
    mined = {m.task.prompt: m for m in plan.mined.tasks}
    assert set(mined) == set(asked)
    for prompt, m in mined.items():
        assert m.recurrence == asked[prompt], prompt
        holders = {
            f"{HARNESS[e['agent']]}:{e['session_id']}"
            for e in ENTRIES
            if prompt in e["prompts"] or prompt in [f"{c['name']} {c['args']}".strip() for c in e["commands"]]
        }
        assert set(m.task.provenance) == holders, prompt
    for m in plan.mined.tasks:  # what the agents injected never became (part of) a task
        for text in (m.task.prompt, *m.wordings):
            assert not any(marker in text for marker in INJECTED), text
    for text in rec.texts():  # nor reached any model as a request
        assert not any(marker in text for marker in INJECTED), text

    assert len(plan.mined.clusters) == len(asked)  # every request is its own cluster here, so the
    # night has enough distinct tasks to train (the no-candidate case is the next test)
    assert s["outcome"] == "accepted" and s["recurring_tasks"] == len(asked)
    assert_splits_are_sound(plan)
    assert s["proposal"] and (staged(data, s) / "SKILL.md").read_text().count(RULE) == 1
    assert digest(REC) == originals  # only the copies were read


def test_recorded_claude_home_alone_has_one_recurring_task_so_no_candidate(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = recorded_homes(tmp_path, monkeypatch, agents=("claude",))
    claude = [e for e in ENTRIES if e["agent"] == "claude"]
    asked = requests_of(claude)
    recurring = {p for p, n in asked.items() if n >= 2}
    assert recurring == {"say hello"}  # plain and bare: one distinct recurring task
    rec = Recorder(monkeypatch)
    s = run_night(tmp_path)
    assert s["harvest"]["sessions"] == {"claude-code": len(claude), "codex": 0, "openclaw": 0}
    assert s["outcome"] == "no-candidate" and s["recurring_tasks"] == 1
    assert "only 1 distinct recurring task(s)" in s["reason"] and s["proposal"] is None
    assert s["splits"] == {} and s["tasks"] == {"train": 0, "val": 0, "test": 0, "dream": 0}
    assert not rec.roles() & {"target", "reflect", "dream"}
    assert Path(s["report"]["report.md"]).is_file() and not (data / "staging").exists()
    assert not (data / "sleep").exists()  # nothing trained: no memory written


# --- 6. the external corpus ------------------------------------------------------------------------

MAX_FILES = 30
SK = "sk" + "-"  # built by concatenation: no literal that looks like a key in this file
PLANTED = SK + "proj-" + "Q7xT2mV9pL4rK8sW3nB6yH1cF5dJ0gZa" + "Ue4Rt7Yi"
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SECRET_LOOKING = re.compile(r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,})")


def _plant(path: Path, secret: str) -> bool:
    """Put `secret` into the first plain user prompt of a Claude session copy; False if it has none."""
    lines = path.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if (
            record.get("type") == "user"
            and isinstance(message, dict)
            and isinstance(message.get("content"), str)
            and not message["content"].startswith("<")
        ):
            message["content"] += f" (the token is {secret})"
            lines[i] = json.dumps(record) + "\n"
            path.write_text("".join(lines))
            return True
    return False


def test_night_on_a_subset_of_the_external_corpus(
    transcripts: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = sorted((transcripts / "generated" / "claude" / "projects").glob("*/*.jsonl"))
    files += sorted((transcripts / "claude_code").glob("*.jsonl"))
    files = files[:MAX_FILES]
    if not files:
        pytest.skip(f"no Claude Code sessions under {transcripts}")
    data = night_env(monkeypatch, tmp_path)
    monkeypatch.delenv("SKILLSLEEP_CHAT_DIRS", raising=False)
    claude = tmp_path / "claude"
    copies = []
    for f in files:
        dest = claude / "projects" / f"-ext-{f.parent.name}" / f.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
        copies.append(dest)
    planted = [c for c, secret in zip(copies, [PLANTED, GITHUB] * len(copies), strict=False) if _plant(c, secret)][:2]
    assert planted, "no session with a plain prompt to plant a secret in"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    write_scripts(tmp_path)
    rec = Recorder(monkeypatch)

    s = run_night(tmp_path, "--max-tasks", "5", "--steps", "1", "--min-recurrence", "1")
    assert s["harvest"]["sessions"]["claude-code"] > 0 and not s["harvest"]["unreadable"]
    plan = plan_of(data)
    assert 1 <= len(plan.mined.tasks) <= 5 and len(plan.splits) <= 5
    assert len(plan.cut) == max(0, s["recurring_tasks"] - 5)

    store = Store(data / "state.db")
    try:
        harvested = {f"{x.harness}:{x.id}" for x in store.sessions()}
    finally:
        store.close()
    assert len(harvested) == s["sessions"] == s["harvest"]["sessions"]["claude-code"]
    for m in plan.mined.tasks:
        assert m.task.provenance and set(m.task.provenance) <= harvested, m.task.id
    if s["outcome"] in ("accepted", "rejected"):
        assert_splits_are_sound(plan)
    else:
        assert s["outcome"] == "no-candidate" and plan.not_ready == s["reason"]

    texts = rec.texts()
    assert rec.texts("mine")
    for text in texts:
        assert PLANTED not in text and GITHUB not in text
        assert not SECRET_LOOKING.search(text), SECRET_LOOKING.search(text)
    assert any("[REDACTED" in t for t in rec.texts("mine"))  # the planted prompts were mined, redacted
    for name in REPORT_FILES:
        text = Path(s["report"][name]).read_text()
        assert text and PLANTED not in text and GITHUB not in text
    html_loads_nothing(Path(s["report"]["report.html"]).read_text())


def test_the_text_summary_names_transcripts_the_harvest_could_not_read(
    chat_night: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillsleep.slash_commands import night_runner
    from skillsleep.slash_commands.harvester import HarvestResult

    real = night_runner.run_harvest

    def harvest(*args: Any, **kwargs: Any) -> HarvestResult:
        out = real(*args, **kwargs)
        out.unreadable = [f"{chat_night / 'gone.jsonl'}: No such file or directory"]
        return out

    monkeypatch.setattr(night_runner, "run_harvest", harvest)
    code, out, err = invoke(*run_args(chat_night))
    assert code == 0, err
    assert "harvest: 1 transcript file(s) or folder(s) could not be read" in out and "skillsleep harvest --json" in out
    code, out, _ = invoke(*run_args(chat_night, "--json"))
    assert json.loads(out)["harvest"]["unreadable"] == [f"{chat_night / 'gone.jsonl'}: No such file or directory"]
