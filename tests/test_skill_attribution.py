"""Which skill a session used, read out of the transcripts the real CLIs wrote (docs/harvest.md):
tests/fixtures/<agent>/skills/ (recorded by scripts/record_skill_fixtures.py, each session's expected
skills in its manifest.json), the recorded fixtures of scripts/record_fixtures.py, and the hand-made
fixtures that use no skill; then the harvest that stores the attribution and counts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_sessions import FIXTURES, first_prompt, fixture_sessions, fixture_sources

from skillsleep.core.harvest.harvester import Harvester, merge
from skillsleep.core.harvest.read import chunk
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.session import Session, Turn
from skillsleep.harnesses import registry
from skillsleep.harnesses.claude_code.skill_use import loaded_skill
from skillsleep.harnesses.skill_use import skill_in_text, skills_read

SKILLS = {"claude-code": FIXTURES / "claude" / "skills", "codex": FIXTURES / "codex" / "skills", "openclaw": FIXTURES / "openclaw" / "skills"}  # fmt: skip


@pytest.mark.parametrize("harness", list(SKILLS))
def test_recorded_skill_sessions_are_attributed_as_their_manifest_says(harness: str) -> None:
    manifest = json.loads((SKILLS[harness] / "manifest.json").read_text())
    assert manifest["agent"] == harness
    found = {first_prompt(s): s.skills for s in fixture_sessions(harness, SKILLS[harness])}
    assert found == {prompt: want["skills"] for prompt, want in manifest["sessions"].items()}


@pytest.mark.parametrize(
    ("harness", "read_only"),
    [("claude-code", ("tools:lint",)), ("codex", ("openai-docs",)), ("openclaw", ("skill-creator",))],
)
def test_the_recorded_fan_out_sessions_are_attributed_as_their_manifest_says(
    harness: str, read_only: tuple[str]
) -> None:
    """tests/fixtures/<agent>/fanout (scripts/record_fanout_fixtures.py): every prompt in `times`
    sessions; a user skill invoked (`/name`, `$name`: OpenClaw's model then reads its SKILL.md), a
    project (workspace) skill the model loaded on its own (the Skill tool, reading its SKILL.md), a
    read-only skill (a plugin's, a system one, OpenClaw's bundled one) and none."""
    root = FIXTURES / ("claude" if harness == "claude-code" else harness) / "fanout"
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["agent"] == harness
    found = sorted((first_prompt(s), s.skills) for s in fixture_sessions(harness, root))
    want = sorted((p, w["skills"]) for p, w in manifest["sessions"].items() for _ in range(manifest["times"]))
    assert found == want
    assert {tuple(w["skills"]) for w in manifest["sessions"].values()} == {
        ("review-pr",), ("release-notes",), read_only, ()
    }  # fmt: skip


def test_the_other_recorded_fixtures_name_the_skill_their_runs_used() -> None:
    recorded = FIXTURES / "recorded"
    claude = {first_prompt(s): s.skills for s in fixture_sessions("claude-code", recorded / "claude" / "config")}
    codex = {first_prompt(s): s.skills for s in fixture_sessions("codex", recorded / "codex" / "codex-home")}
    openclaw = {first_prompt(s): s.skills for s in fixture_sessions("openclaw", recorded / "openclaw" / "state")}
    assert claude["/stub-skill some args"] == ["stub-skill"] and codex["$answer what now"] == ["answer"]
    assert openclaw["$answer what now"] == ["answer"]
    others = [
        v
        for found in (claude, codex, openclaw)
        for k, v in found.items()
        if "answer" not in k and "stub-skill" not in k
    ]
    assert others and all(v == [] for v in others)


@pytest.mark.parametrize(
    ("harness", "root"),
    [
        ("claude-code", FIXTURES / "claude" / "root"),
        ("claude-code", FIXTURES / "claude" / "errors_and_drift.jsonl"),
        ("claude-code", FIXTURES / "claude" / "meta_lines.jsonl"),
        ("claude-code", FIXTURES / "claude" / "split_reply.jsonl"),
        ("codex", FIXTURES / "codex"),
        ("openclaw", FIXTURES / "openclaw" / "channel_session.jsonl"),
    ],
)
def test_sessions_that_use_no_skill_have_none(harness: str, root: Path) -> None:
    if root.is_file():
        sessions = registry.parsers()[harness](root.read_bytes(), str(root), 0).sessions
    else:
        skip = ("skills", "fanout", "own", "model")
        sessions = [s for s in fixture_sessions(harness, root) if not any(f"/{p}/" in s.source for p in skip)]
    assert sessions and all(s.skills == [] for s in sessions)


def test_skillsleeps_own_sleep_skill_is_no_user_skill() -> None:
    own = FIXTURES / "claude" / "own"
    [mixed] = [s for s in fixture_sessions("claude-code", own) if first_prompt(s) == "/sleep diff"]
    assert mixed.skills == ["sleep"]  # the parser says what the transcript shows …
    read = chunk(mixed)
    assert read.own is None and read.skills == [] and read.session().skills == []  # … the harvest keeps none


def test_claude_names_a_loaded_skill_after_what_loaded_it() -> None:
    body = "Base directory for this skill: /home/u/.claude/plugins/cache/m/tools/1.0/skills/lint\n\nLint it."
    command = Turn(kind="command", tool="/tools:lint", text="/tools:lint")
    call = Turn(kind="tool_call", tool="Skill", call_id="t1", arguments={"skill": "tools:lint"})
    result = Turn(kind="tool_result", tool="Skill", call_id="t1", text="Launching skill: tools:lint")
    assert loaded_skill(body, [command]) == "tools:lint"
    assert loaded_skill(body, [call, result]) == "tools:lint"
    assert loaded_skill(body, []) == "lint"  # nothing before it: the folder's name
    assert loaded_skill("Caveat: the messages below …", [command]) is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("~/project/skills/answer/SKILL.md", "answer"),
        ("cat /home/u/.agents/skills/review-pr/SKILL.md | head", "review-pr"),
        ("sed -n 1,80p '.codex/skills/x.y/SKILL.md'", "x.y"),
        ("/home/u/skills/notes.md", None),
        ("myskills/answer/SKILL.md", None),
    ],
)
def test_a_read_of_a_skill_file_names_its_skill(text: str, name: str | None) -> None:
    assert skill_in_text(text) == name


def test_a_continued_session_keeps_the_skills_of_both_parts() -> None:
    old = Session(harness="codex", id="s", skills=["a"])
    assert merge(old, Session(harness="codex", id="s", skills=["b", "a"])).skills == ["a", "b"]


def test_harvest_stores_and_counts_the_skills(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    harvester = Harvester(store, registry.parsers(), Redactor(), db_readers=registry.db_readers())
    sources = [s for harness, root in SKILLS.items() for s in fixture_sources(root, harness)]
    report = harvester.harvest(sources)
    assert report.skills == {
        "claude-code": {"review-pr": 1, "release-notes": 1},
        "codex": {"review-pr": 1, "release-notes": 1},
        "openclaw": {"release-notes": 1},
    }
    stored = {(s.harness, first_prompt(s)): s.skills for s in store.sessions()}
    assert stored[("claude-code", "say hello")] == [] and stored[("codex", "$review-pr check 12")] == ["review-pr"]
    assert store.skill_uses() == {
        ("claude-code", "review-pr"): 1,
        ("claude-code", "release-notes"): 1,
        ("codex", "review-pr"): 1,
        ("codex", "release-notes"): 1,
        ("openclaw", "release-notes"): 1,
    }
    assert harvester.harvest(sources).skills == {}  # nothing new: nothing counted twice


@pytest.mark.parametrize(
    ("tool", "arguments", "used"),
    [
        ("read", {"path": "~/project/skills/answer/SKILL.md"}, ["answer"]),  # OpenClaw's load
        ("Read", {"file_path": "/home/u/.claude/skills/answer/SKILL.md"}, ["answer"]),
        ("exec_command", {"cmd": "cat /home/u/.agents/skills/answer/SKILL.md"}, ["answer"]),
        ("shell", {"command": ["bash", "-lc", "sed -n 1,40p .agents/skills/answer/SKILL.md"]}, ["answer"]),
        ("Edit", {"file_path": "/home/u/.claude/skills/answer/SKILL.md", "old_string": "a"}, []),  # works on it
        ("write", {"path": "skills/answer/SKILL.md", "content": "x"}, []),
        ("exec", {"command": "rm -rf skills/answer/SKILL.md"}, []),
    ],
)
def test_only_a_read_of_a_skill_file_is_a_use(tool: str, arguments: dict[str, object], used: list[str]) -> None:
    session = Session(harness="openclaw", id="s", turns=[Turn(kind="tool_call", tool=tool, arguments=arguments)])
    skills_read(session)
    assert session.skills == used
