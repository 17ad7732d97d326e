"""What the command line says in words: counts in the right number ("1 call", "1 night"), and the
managed skill of the chat harness (what `skillsleep run` trains by default) named as one no agent
reads wherever it is adopted or waits to be."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sleep_kit import data, invoke, live, save_night, spend  # noqa: F401  (fixtures)

from skillsleep.core.night.nights import month_start
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.display import counted
from skillsleep.core.shared.events import Mining, WritingJudges

UNREAD = "No agent reads this skill"


def test_a_count_of_one_takes_the_singular_and_any_other_the_plural() -> None:
    assert [counted(n, "call") for n in (0, 1, 2, 1234)] == ["0 calls", "1 call", "2 calls", "1,234 calls"]
    assert counted(3, "entry", "entries") == "3 entries" and counted(1, "entry", "entries") == "1 entry"


def test_a_night_of_one_session_and_one_task_says_so_in_the_singular() -> None:
    assert Mining(sessions=1).describe() == "mining 1 session for recurring tasks"
    assert WritingJudges(tasks=1).describe() == "writing judges for 1 task"


def test_status_counts_one_night_and_one_call_in_the_singular(data: Path) -> None:
    start = month_start()
    save_night(data, 1, start, "/s/SKILL.md", status="running", pid=os.getpid(), harness="chat", steps=2)
    spend(data, 1, "target", 10, 0.0, start, provider="scripted")
    text = invoke("status")[1]
    assert "### Nights (1 night so far)" in text and "; 1 call, 10 tokens so far" in text
    assert "1 calls" not in text and "(1 run)" not in text
    assert ", 1 call, 10 tokens so far" in invoke("sleep")[1]
    assert "1 call (0 from the cache)" in invoke("cost")[1]


def managed_chat_skill(data: Path) -> Path:
    return data / "skills" / "skillsleep-learned" / "SKILL.md"


def stage(data: Path, skill: Path, *, harness: str, managed: bool) -> str:
    details = {"harness": harness, "section": None, "managed": managed}
    return (
        Proposals(data)
        .stage(skill, "# Learned habits\n- Sign off.\n", accepted=True, reason="0.4 → 0.7", details=details)
        .id
    )


def test_adopting_the_chat_harness_managed_skill_says_no_agent_reads_it(data: Path) -> None:
    stage(data, managed_chat_skill(data), harness="chat", managed=True)
    status = invoke("status")[1]
    assert UNREAD in status and "`skillsleep run --harness claude-code`" in status
    assert "skillsleep install" in status and UNREAD in invoke("sleep")[1]
    code, out, err = invoke("adopt")
    assert code == 0, err
    assert UNREAD in out and "--harness claude-code" in out and "`skillsleep install`" in out
    assert managed_chat_skill(data).read_text() == "# Learned habits\n- Sign off.\n"  # adopted all the same


def test_the_note_is_in_the_adopt_an_agent_shows(data: Path) -> None:
    stage(data, managed_chat_skill(data), harness="chat", managed=True)
    code, out, err = invoke("sleep", "adopt")
    assert code == 0 and UNREAD in out, err
    assert json.loads(invoke("status", "--json")[1])["pending"] == []


@pytest.mark.parametrize(("harness", "managed"), [("chat", False), ("claude-code", True)])
def test_a_skill_an_agent_can_read_gets_no_such_note(
    data: Path,
    live: Path,
    harness: str,
    managed: bool,
) -> None:
    stage(data, live, harness=harness, managed=managed)
    assert UNREAD not in invoke("status")[1]
    code, out, err = invoke("adopt", "--json")
    assert code == 0, err
    assert json.loads(out)["note"] == ""
