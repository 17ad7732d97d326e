"""Shared pieces of the fan-out tests (tests/test_fanout*.py): a Claude Code home with two writable
skills (a user and a project one) and a plugin's read-only one, and a real SQLite store filled with
sessions that used them or no skill, each group with its own recurring tasks.

    claude_home(root)        the home, the project (the working folder) and the skills' files
    store_sessions(db, …)    each group's tasks asked `times` times (a session each, corrected),
                             the sessions naming the skill they used as the harvest stores it
    chat_replay(monkeypatch) `run --harness claude-code` replays in the chat harness on the scripted
                             target (the skills are still Claude Code's), so no agent CLI runs
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sleep_kit import TASKS, corrected_session

from skillsleep.core.models.store import Store
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.chat_logs import parse_chat_log

REVIEW = [
    "Check the retry logic change for thread safety",
    "Go over the new date formatting patch",
    "Audit the config loader rename before merging",
    "Inspect the migration script someone proposed",
    "Critique the caching layer diff",
]
NOTES = [
    "Write the changelog entry for version 2.3",
    "Summarise the breaking changes of the hotfix",
    "Draft the announcement post for the beta",
    "List the deprecations shipped this quarter",
    "Prepare upgrade instructions for users of 1.x",
]
OTHER = TASKS[1:]  # five of the night tests' tasks
LINT = ["Lint the parser module and fix what it finds", "Lint the tests folder before the release"]
SEED = "---\nname: {name}\ndescription: {name} for this team\n---\n\n# {name}\n\n- Be precise.\n"


def claude_home_skill(folder: Path, name: str) -> Path:
    """A skill `name` in the skills folder `folder`: its SKILL.md."""
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SEED.format(name=name))
    return path


def claude_home(root: Path) -> dict[str, Path]:
    """Under `root`: home/.claude with the user skill review-pr and the plugin skill tools:lint, and
    the project proj/ (a git repository) with the project skill release-notes; their SKILL.md files."""
    home, proj = root / "home", root / "proj"
    (proj / ".git").mkdir(parents=True)
    claude = home / ".claude"
    plugin = claude / "plugins" / "cache" / "mkt" / "tools" / "1.0.2" / "skills"
    return {
        "review-pr": claude_home_skill(claude / "skills", "review-pr"),
        "release-notes": claude_home_skill(proj / ".claude" / "skills", "release-notes"),
        "lint": claude_home_skill(plugin, "lint"),
    }


def store_sessions(db: Path, groups: dict[str, list[str]], *, times: int = 3, harness: str = "claude-code") -> int:
    """Every group's tasks asked `times` times into the store at `db`, each session using the skills
    its group names ("" → none; "a+b" → a, then b); returns how many sessions it stored."""
    store, stored = Store(db), 0
    try:
        for key, tasks in groups.items():
            used = [n for n in key.split("+") if n]
            lines = [
                corrected_session(f"{key or 'none'}-{rep}-{i}", f"2026-11-2{rep + 1}T10:{i:02d}:00Z", task)
                for rep in range(times)
                for i, task in enumerate(tasks)
            ]
            for session in parse_chat_log(
                ("\n".join(lines) + "\n").encode(), source=f"/logs/{key or 'none'}.jsonl"
            ).sessions:
                store.put_session(session.model_copy(update={"harness": harness, "skills": used}))
                stored += 1
    finally:
        store.close()
    return stored


def chat_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The night's replays in the chat harness on the scripted target, whatever `--harness` says."""
    from skillsleep.slash_commands import night_runner

    def harness(_s: object, models: object, _on_event: object, *, dry_run: bool) -> HarnessChoice:
        return HarnessChoice(harness=ChatHarness(models.target, log_dir=None), label="chat (scripted)", timeout_s=30.0)  # type: ignore[attr-defined]

    monkeypatch.setattr(night_runner, "_harness", harness)


def script_args(script: Path) -> list[str]:
    return ["--harness", "claude-code", "--backend", f"scripted:{script}", "--since", "3650d"]


def as_json(text: str) -> dict[str, object]:
    return dict(json.loads(text))
