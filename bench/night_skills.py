"""The two-skill night of bench/night.py (`--two-skills`): one `skillsleep run` that fans out to two
user skills of Claude Code, each trained on the sessions that used it, against the ideal calls.

The corpus: a home with the user skills review-pr and release-notes (~/.claude/skills), and a state
database holding, for each skill, 6 recurring tasks asked 3 times (a session each, followed by a
correction) by sessions that used that skill, as the harvest stores them (`Session.skills`). No
session uses no skill, so the managed skill's group is empty (not enough evidence) and the night
trains the two skills. The models are the scripted backend (one rules file for every role); the
replays run in the chat harness on it (the agent's skills are found as Claude Code finds them, no
agent CLI runs). The ideal is bench/night.py's `ideal_calls`, per skill's night, summed: each group's
mining (1 judge a chosen task), relevance (1: the skills are not the managed one), dreams and
training calls.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

SKILLS: dict[str, list[tuple[str, str]]] = {  # skill → (task, a word only its dream request holds)
    "review-pr": [
        ("Check the retry logic change for thread safety", "retry logic"),
        ("Go over the new date formatting patch", "date formatting"),
        ("Audit the config loader rename before merging", "config loader"),
        ("Inspect the migration script someone proposed", "migration script"),
        ("Critique the caching layer diff", "caching layer"),
        ("Examine the logging cleanup commit", "logging cleanup"),
    ],
    "release-notes": [
        ("Write the changelog entry for version 2.3", "version 2.3"),
        ("Summarise the breaking changes of the hotfix", "hotfix"),
        ("Draft the announcement post for the beta", "announcement"),
        ("List the deprecations shipped this quarter", "deprecations"),
        ("Prepare upgrade instructions for users of 1.x", "upgrade instructions"),
        ("Compose the highlights section for 3.0", "highlights"),
    ],
}
REPEATS = 3


def write_two_skills(root: Path, optimizer: list[dict[str, str]], target: list[dict[str, str]]) -> Path:
    """The skills, the stored sessions and the rules file (`optimizer` with a dream rule per task
    in front, then `target`) under `root` (after bench/night.py's `isolate`); returns the rules file."""
    from night import corrected  # bench/night.py, beside this file

    from skillsleep.core.models.store import Store
    from skillsleep.harnesses.chat_logs import parse_chat_log

    home, store = root / "home", Store(root / "data" / "state.db")
    (root / "chats").mkdir(parents=True, exist_ok=True)
    dreams = []
    for skill, tasks in SKILLS.items():
        folder = home / ".claude" / "skills" / skill
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(f"---\nname: {skill}\ndescription: {skill} for this team\n---\n\n# {skill}\n")
        lines = [
            corrected(f"{skill}-{rep}-{i}", rep, i, task, "no, put the answer on its own last line")
            for rep in range(REPEATS)
            for i, (task, _) in enumerate(tasks)
        ]
        for session in parse_chat_log(("\n".join(lines) + "\n").encode(), source=f"/logs/{skill}.jsonl").sessions:
            store.put_session(session.model_copy(update={"harness": "claude-code", "skills": [skill]}))
        dreams += [
            {
                "match": f"(?s){word}.*Write \\d+ variant",
                "reply": json.dumps({"variants": [f"On the staging branch: {task[0].lower()}{task[1:]}"]}),
            }
            for task, word in tasks
        ]
    store.close()
    rules = root / "rules.json"
    rules.write_text(json.dumps([*dreams, *optimizer, *target]))
    return rules


def chat_replays() -> None:
    """The night's replays in the chat harness on its scripted target (no agent CLI)."""
    from skillsleep.core.train.harness import HarnessChoice
    from skillsleep.harnesses.chat import ChatHarness
    from skillsleep.slash_commands import night_runner

    def harness(_s: Any, models: Any, _on_event: Any, *, dry_run: bool) -> HarnessChoice:
        return HarnessChoice(harness=ChatHarness(models.target, log_dir=None), label="chat (scripted)", timeout_s=30.0)

    night_runner._harness = harness  # type: ignore[assignment]


def two_skill_night(
    root: Path, rules: Path, extra: list[str], ideal: Callable[[Path, dict[str, Any]], dict[str, int]]
) -> dict[str, Any]:
    """Run the night and measure it: per skill its calls, ideal and tokens, and the totals."""
    from skillsleep.slash_commands.cli import main

    chat_replays()
    args = ["run", "--harness", "claude-code", "--backend", f"scripted:{rules}", "--since", "3650d", *extra, "--json"]
    start = time.perf_counter()
    result = CliRunner().invoke(main, args)
    wall = time.perf_counter() - start
    if result.exit_code != 0:
        raise SystemExit(f"skillsleep run exited {result.exit_code}: {result.stderr[-3000:]}")
    out = json.loads(result.stdout)
    skills: dict[str, Any] = {}
    for night in out["nights"]:
        folder = root / "data" / "nights" / f"{night['night']:04d}"
        want = ideal(folder, night)
        skills[night["skill"]["name"]] = {
            "sessions": night["sessions"],
            "outcome": night["outcome"],
            "model_calls": night["calls_made"],
            "ideal_calls": sum(want.values()),
            "ideal_by_role": {r: n for r, n in want.items() if n},
            "tokens": night["tokens"],
        }
    made, wanted = sum(s["model_calls"] for s in skills.values()), sum(s["ideal_calls"] for s in skills.values())
    return {
        "skills": skills,
        "not_trained": {r["skill_name"]: r["reason"] for r in out["fanout"]["rows"] if r["night"] is None},
        "model_calls": made,
        "ideal_calls": wanted,
        "calls_over_ideal": round(made / wanted, 3) if wanted else None,
        "tokens": sum(s["tokens"] for s in skills.values()),
        "wall_s": round(wall, 3),
    }
