"""The user's rejections in the rejected-edit memory (core/night/rejections.py): what a rejected
proposal's changes put there, and which later edits they drop."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.prompts import describe_memory
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord
from skillsleep.core.night.rejections import memory_key, user_rejections
from skillsleep.core.report.changes import changes
from skillsleep.core.report.proposal_record import Proposal
from skillsleep.core.shared.records import Edit
from skillsleep.core.train.memory import drop_rejected_by_user, drop_remembered

SKILL = "# Replies\n\n- Be helpful.\n- Use tables.\n"
NEW_SKILL = (
    "---\nname: learned\ndescription: Habits.\n---\n\n# Learned habits\n\n- End with `ANSWER: <x>`.\n\n"
    "<!-- skillsleep:slow-update:begin -->\n## Guidance\n- Keep ANSWER last.\n<!-- skillsleep:slow-update:end -->\n"
)


def test_each_change_of_a_rejected_proposal_is_remembered_with_what_it_adds_or_deletes() -> None:
    candidate = "# Replies\n\n- Be helpful.\n- Answer in one line.\n- Use lists.\n"
    entries = user_rejections(changes(SKILL, candidate), "p1", 3)
    assert [(e.edit.op, e.edit.target, e.edit.content) for e in entries] == [
        ("replace", "- Use tables.", "- Answer in one line.\n- Use lists.")
    ]
    assert entries[0].stage == "user" and entries[0].proposal == "p1" and entries[0].epoch == 2
    removed = user_rejections(changes(SKILL, "# Replies\n\n- Be helpful.\n"), "p2", None)
    assert [(e.edit.op, e.edit.target) for e in removed] == [("delete", "- Use tables.")]


def test_the_structure_of_a_new_skill_is_not_remembered_only_what_it_states() -> None:
    [entry] = user_rejections(changes("", NEW_SKILL), "p1", 1)
    assert entry.edit.content == "- End with `ANSWER: <x>`.\n- Keep ANSWER last."


def test_an_edit_saying_only_what_the_user_rejected_is_dropped_wherever_it_puts_the_line() -> None:
    rejected = user_rejections(changes(SKILL, SKILL + "- Answer in one line.\n"), "p1", 1)
    again = Edit(op="add", target="- Be helpful.", content="answer in ONE line.")
    more = Edit(op="add", content="Answer in one line.\nCite the source.")
    delete = Edit(op="delete", target="- Use tables.")
    kept, dropped = drop_rejected_by_user([again, more, delete], rejected, lambda e: e)
    assert kept == [more, delete]
    assert [(r.stage, r.edit, r.proposal, r.reason) for r in dropped] == [
        ("user", again, "p1", "dropped before ranking, the user rejected proposal p1 (night 1)")
    ]
    kept, dropped = drop_remembered([again], rejected, Skill(SKILL))  # the trainer's path
    assert kept == [] and len(dropped) == 1
    assert "the user rejected proposal p1 (night 1); do not propose it again" in describe_memory(rejected)


def test_a_rejection_goes_into_the_memory_of_the_skill_its_night_trained(tmp_path: Path) -> None:
    nights = Nights(tmp_path)
    nights.save(NightRecord(night=1, started=datetime.now(UTC), harness="codex", skill_path="/s/AGENTS.md#Testing"))
    p = Proposal(
        id="p1",
        created=datetime.now(UTC),
        skill_path="/s/AGENTS.md",
        base_hash="x",
        candidate_hash="y",
        accepted=True,
        reason="",
        details={"section": "Testing"},
    )
    assert memory_key(nights, p.model_copy(update={"night": 1})) == "/s/AGENTS.md#Testing"
    assert memory_key(nights, p) == "/s/AGENTS.md#Testing"  # no night: the proposal's file and section
    (tmp_path / "nights" / "0001" / "night.json").write_text("{damaged")
    assert memory_key(nights, p.model_copy(update={"night": 1, "details": {}})) == "/s/AGENTS.md"
