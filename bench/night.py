"""One night of the sleep cycle (`skillsleep run`) on a fixed corpus: calls per role vs the ideal.

    .venv/bin/python bench/night.py [--backend scripted|local] [--steps N] [--dreams N]
                                    [--max-tasks N] [--rollouts-k K] [--keep NEW_DIR] [--two-skills]

The corpus is generated at start into a temp dir (or the new folder `--keep`), always the same: one
direct-chat log in which 8 recurring tasks are each asked 3 times (a session each, followed by a
correction, so they mine as failing tasks) plus 20 one-off prompts (asked once: not tasks).
SKILLSLEEP_HOME, HOME and the chat-log folder point into that dir; the managed learned skill is
trained. `skillsleep run --json` runs in this process (click's CliRunner), twice:

    night 1        harvest → mine → split → dreams → one epoch → gate → report → proposal
    second_night   right after, on the same sessions (no new ones): the response cache should
                   answer almost every request; what still reaches the model is the work whose
                   prompt changed (the reflection sees night 1's meta skill and rejected edits)

`--backend scripted` (default) answers from rules (deterministic; the target follows the answer-
line rule only when the skill holds it, so the gate accepts it); `--backend local` runs the
embedded Qwen2.5-Coder-0.5B for every role (slow: minutes; the weights are assembled once into
the usual user cache and linked into the temp dir).

`ideal_calls` is the fewest model calls that produce the decisions this night made, rebuilt from
its plan.json and state.json (per role):

    mine        1 paraphrase merge when 2+ lexical groups may be one task (`MineResult.asked`: the
                plausible groups shown; none in this corpus, whose tasks share no words) + 1
                judge per chosen task
    relevance   ceil(recurring / 40), 0 for the managed skill
    dream       1 per real training task (when --dreams > 0)
    target      the distinct (skill, task, sample) rollouts the night needs: the seed on val × K;
                per step the current skill on its batch × K and, when a candidate was gated, the
                candidate on val × K; at the epoch's end the slow update's previous/current
                skill on the train sample (k=1) and its candidate on val × K; the verdict's
                candidate on val × K; test before (seed) and after (candidate) × K
    judge       distinct (task, response) of those rollouts whose task has a rubric
    reflect     ceil(batch × K / minibatch) per step
    merge       ceil(n / 8) per step where n > 1 distinct edits were proposed (first level)
    rank        1 per step whose safe edits exceed the step's edit budget
    repair      1 per step whose selected edits the edit rules refused (the step's repair.json)
    slow_update 1 per epoch whose skill changed; meta 1 per epoch

`--two-skills` runs the two-skill night instead (bench/night_skills.py): one run that fans out to
two user skills of Claude Code, each trained on the sessions that used it; its JSON line holds
each skill's calls and ideal (as above, per skill's night; relevance 1 each) and their sums.

`plan_max_calls` is Trainer.plan()'s upper bound for the training part, for comparison.

`mining` is the cost of mining, per 100 sessions: night 1's calls and tokens in the role "mine"
(the paraphrase merge and the judges), and the peak Python memory (tracemalloc) of mining
MEMORY_SESSIONS long sessions (each MEMORY_TURNS agent turns of MEMORY_TURN_KB KiB, one request)
from a state database as the night reads them (`Store.stream_sessions()`, one session at a time)
against the baseline of the same mining over every session loaded at once (`Store.sessions()`),
both measured in this run. Stderr gets a human summary; the last line on stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from skillsleep.core.document.skill import Skill
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.shared.records import Edit, Rollout
from skillsleep.core.train.aggregate import dedup
from skillsleep.core.train.config import RunSection, SlowUpdateSection, TrainConfig, TrainSection
from skillsleep.core.train.schedule import LRSchedule
from skillsleep.core.train.state import TrainState

RULE = "End every reply with a final line `ANSWER: <answer>`."
# (task, a word only its dream request holds) — lexically far apart: 8 clusters
TASKS = [
    ("Write the changelog entry for the new login feature", "changelog"),
    ("Bump the package version and tag the release", "Bump"),
    ("Explain why the CI job for the docs failed", "CI job"),
    ("Rename the helper function across the codebase", "helper"),
    ("Add type hints to the parser module", "type hints"),
    ("Draft the weekly status email for the team", "status email"),
    ("Summarize the open pull requests waiting for review", "pull requests"),
    ("Update the dependency pins in the lock file", "dependency pins"),
]
ONE_OFFS = [
    "What does the walrus operator do in Python?",
    "Sketch a database schema for a small library catalogue",
    "Why is my docker image so large?",
    "Suggest a name for a command line tool that tidies photos",
    "How many bytes are in a kibibyte?",
    "Convert this paragraph to British spelling please",
    "Which sorting algorithm is stable and in place?",
    "Give me a regex that matches an ISO calendar week",
    "Explain the difference between a mutex and a semaphore",
    "Recommend a book about distributed systems",
    "What is the time complexity of heapify?",
    "Translate good morning into Portuguese",
    "Plan a thirty minute onboarding session for interns",
    "Describe how garbage collection works in Go",
    "List three uses for a bloom filter",
    "Is tail recursion optimised in JavaScript engines?",
    "Outline a talk about accessibility in mobile apps",
    "Compare SQLite and Postgres for a hobby project",
    "Why do floating point sums depend on their order?",
    "Write a haiku about merge conflicts",
]
REPEATS = 3
CORRECTION = "no, put the answer on its own last line"
LOCAL_MODEL = "qwen2.5-coder-0.5b"
MEMORY_SESSIONS, MEMORY_TURNS, MEMORY_TURN_KB = 100, 40, 8


# --- the corpus and the scripted models ----------------------------------------------------------


TARGET = [{"match": "ANSWER:", "reply": "Done.\nANSWER: ok"}, {"match": "[\\s\\S]", "reply": "Done."}]


def optimizer_rules() -> list[dict[str, str]]:
    """The optimizer's rules but the dreams (each corpus adds a dream rule per task)."""
    return [
        {"match": '"mine_merge"', "reply": json.dumps({"groups": []})},
        {
            "match": '"mine_judge"',
            "reply": json.dumps(
                {
                    "checks": [
                        {
                            "type": "last_line_regex",
                            "value": "^ANSWER: .+",
                            "feedback": "the last line must be `ANSWER: <answer>`",
                        }
                    ],
                    "rubric": "",
                }
            ),
        },
        {"match": '"relevance"', "reply": json.dumps({"relevant": list(range(1, 41))})},
        {
            "match": '"findings"',
            "reply": json.dumps(
                {
                    "findings": [
                        {
                            "kind": "skill_defect",
                            "diagnosis": "no answer line",
                            "op": "add",
                            "target": "",
                            "content": RULE,
                        }
                    ]
                }
            ),
        },
        {"match": '"groups"', "reply": json.dumps({"groups": []})},
        {"match": '"order"', "reply": json.dumps({"order": [1]})},
        {"match": '"guidance"', "reply": json.dumps({"guidance": ["Keep the ANSWER line last."]})},
        {"match": '"notes"', "reply": json.dumps({"notes": ["Answer-format rules pay off."]})},
    ]


def corrected(sid: str, rep: int, i: int, task: str, correction: str) -> str:
    """One chat-log line: a recurring task (repeat `rep`, task `i`) answered, then corrected."""
    return json.dumps(
        {
            "id": sid,
            "created": f"2026-11-2{rep + 1}T10:{i:02d}:00Z",
            "messages": [
                {"role": "user", "content": task},
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": correction},
                {"role": "assistant", "content": "ok"},
            ],
        }
    )


def write_corpus(root: Path) -> None:
    """The chat log (24 recurring sessions + 20 one-offs) and the two rule scripts."""
    chats = root / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    lines = [
        corrected(f"s{rep}-{i}", rep, i, task, CORRECTION)
        for rep in range(REPEATS)
        for i, (task, _) in enumerate(TASKS)
    ]
    for n, prompt in enumerate(ONE_OFFS):
        lines.append(
            json.dumps(
                {
                    "id": f"x{n}",
                    "created": f"2026-11-25T09:{n:02d}:00Z",
                    "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": "Done."}],
                }
            )
        )
    (chats / "log.jsonl").write_text("\n".join(lines) + "\n")
    dreams = [
        {
            "match": f"(?s){word}.*Write \\d+ variant",
            "reply": json.dumps({"variants": [f"On the staging branch: {task[0].lower()}{task[1:]}"]}),
        }
        for task, word in TASKS
    ]
    optimizer = optimizer_rules()
    optimizer[3:3] = dreams  # after the relevance rule, as always
    (root / "opt.json").write_text(json.dumps(optimizer))
    (root / "target.json").write_text(json.dumps(TARGET))


def isolate(root: Path) -> None:
    """Every skillsleep path and setting of this process inside `root` (no user config, no real
    transcripts, no other skills)."""
    from skillsleep.slash_commands.wiring import SLEEP_ENVS

    for name in (
        "SKILLSLEEP_CONFIG",
        "SKILLSLEEP_REDACT_PATTERNS",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "OPENCLAW_STATE_DIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        *SLEEP_ENVS.values(),
    ):
        os.environ.pop(name, None)
    (root / "home").mkdir(parents=True, exist_ok=True)
    os.environ["SKILLSLEEP_HOME"] = str(root / "data")
    os.environ["HOME"] = str(root / "home")
    os.environ["SKILLSLEEP_CHAT_DIRS"] = str(root / "chats")
    os.chdir(root)


def link_local_weights(root: Path) -> None:
    """Assemble the 0.5B weights once in the user's cache (as `skillsleep run` would) and link
    them into the temp SKILLSLEEP_HOME, so each bench run does not copy 491 MB."""
    from skillsleep.core.models.backends.weights import ensure_weights
    from skillsleep.slash_commands.wiring import cache_dir

    path = ensure_weights(LOCAL_MODEL, cache_dir())  # before isolate(): the real cache dir
    models = root / "data" / "cache" / "models"
    models.mkdir(parents=True, exist_ok=True)
    (models / path.name).unlink(missing_ok=True)
    (models / path.name).symlink_to(path)


def run_args(root: Path, backend: str, extra: list[str]) -> list[str]:
    if backend == "scripted":
        models = [
            "--backend",
            "scripted",
            "--optimizer-model",
            str(root / "opt.json"),
            "--target-model",
            str(root / "target.json"),
        ]
    else:
        models = ["--backend", "local"]
    return ["run", *models, "--since", "3650d", *extra, "--json"]


def night(args: list[str]) -> tuple[dict[str, Any], float]:
    from skillsleep.slash_commands.cli import main

    start = time.perf_counter()
    result = CliRunner().invoke(main, args)
    wall = time.perf_counter() - start
    if result.exit_code != 0 or not result.stdout.strip():
        sys.stderr.write(result.stderr[-4000:])
        raise SystemExit(f"skillsleep run exited {result.exit_code}")
    return dict(json.loads(result.stdout)), wall


# --- the ideal -----------------------------------------------------------------------------------


def ideal_calls(folder: Path, summary: dict[str, Any], k: int, dreams: int) -> dict[str, int]:
    """The fewest model calls per role that give this night's decisions (see the docstring)."""
    plan = NightPlan.model_validate_json((folder / "plan.json").read_text())
    out = {
        "mine": 0,
        "relevance": 0,
        "dream": 0,
        "target": 0,
        "judge": 0,
        "reflect": 0,
        "merge": 0,
        "rank": 0,
        "repair": 0,
        "slow_update": 0,
        "meta": 0,
    }
    chosen = plan.mined.tasks
    out["mine"] = (1 if plan.mined.asked >= 2 else 0) + len(chosen)
    if not summary["skill"]["managed"] and plan.recurring:
        out["relevance"] = math.ceil(plan.recurring / 40)
    if plan.not_ready or not (folder / "state.json").is_file():
        return out
    split = plan.tasks()
    real_train = [t for t in split["train"] if t.origin != "dream"]
    out["dream"] = len(real_train) if dreams else 0
    state = TrainState.model_validate_json((folder / "state.json").read_text())
    minibatch = TrainSection().minibatch_size
    tasks = {t.id: t for ts in split.values() for t in ts}
    val, test = [t.id for t in split["val"]], [t.id for t in split["test"]]
    need: set[tuple[str, str, int]] = set()

    def score(skill_hash: str, ids: list[str], samples: int = k) -> None:
        need.update((skill_hash, t, s) for t in ids for s in range(samples))

    seed = Skill(state.seed_skill).hash
    score(seed, val)
    current = seed
    schedule = LRSchedule()
    for step in state.steps:
        score(current, step.batch)
        out["reflect"] += math.ceil(len(step.batch) * k / minibatch)
        proposed = folder / "steps" / f"e{step.epoch}s{step.step}" / "proposed.json"
        n = len(dedup([Edit.model_validate(e) for e in json.loads(proposed.read_text())])) if proposed.is_file() else 0
        out["merge"] += math.ceil(n / 8) if n > 1 else 0
        repaired = folder / "steps" / f"e{step.epoch}s{step.step}" / "repair.json"
        out["repair"] += 1 if repaired.is_file() else 0
        screened = len(json.loads(repaired.read_text())["screened"]) if repaired.is_file() else 0
        dropped = sum(1 for r in step.skipped if r.stage in ("memory", "user"))  # dropped before ranking
        safe = step.merged - len(step.refused) + screened - dropped
        out["rank"] += 1 if safe and (safe > step.learning_rate or schedule.schedule == "autonomous") else 0
        if step.gate is not None:
            score(step.gate.baseline_hash, val)
            score(step.gate.candidate_hash, val)
            if step.gate.accepted:
                current = step.gate.candidate_hash
    for epoch in state.epochs:
        if epoch.slow_update is not None:
            out["slow_update"] += 1
            sample = [t.id for t in split["train"]]  # as core/train/epoch.py draws it
            random.Random(f"{RunSection().seed}:slow:{epoch.epoch}").shuffle(sample)
            sample = sample[: SlowUpdateSection().sample_size]
            score(seed, sample, 1)  # the epoch's start: the seed, one night is one epoch
            score(current, sample, 1)
            gate = epoch.slow_update_gate
            if gate is not None:
                score(gate.baseline_hash, val)
                score(gate.candidate_hash, val)
        out["meta"] += 1 if epoch.meta_ran else 0
    best = Skill(state.best).hash
    if best != seed:
        score(best, val)
        if test:
            score(seed, test)
            score(best, test)
    out["target"] = len(need)
    rollouts = folder / "rollouts.jsonl"
    judged: set[tuple[str, str]] = set()
    if rollouts.is_file():
        for line in rollouts.read_text().splitlines():
            r = Rollout.model_validate_json(line)
            task = tasks.get(r.task_id)
            if (r.skill_hash, r.task_id, r.sample) in need and task and task.judge.rubric and not r.run.error:
                judged.add((r.task_id, r.run.response))
    out["judge"] = len(judged)
    return out


def plan_max_calls(folder: Path, k: int, steps: int) -> int:
    """Trainer.plan()'s upper bound for the training part of this night (no plan/state: 0)."""
    from skillsleep.core.train.trainer import Trainer

    plan_file = folder / "plan.json"
    if not plan_file.is_file():
        return 0
    plan = NightPlan.model_validate_json(plan_file.read_text())
    if plan.not_ready:
        return 0
    cfg = TrainConfig.model_validate(
        {
            "data": {"tasks": "plan.json", "skill": "SKILL.md"},
            "target": {"backend": "scripted:x"},
            "optimizer": {"backend": "scripted:x"},
            "train": {"epochs": 1, "steps_per_epoch": steps, "rollouts_k": k},
        }
    )
    trainer = Trainer(
        cfg,
        splits=plan.tasks(),
        seed_skill=Skill(""),
        evaluator=None,  # type: ignore[arg-type]
        optimizer=None,
        run_dir=None,
    )  # type: ignore[arg-type]
    return int(trainer.plan()["max_calls"])


# --- the cost of mining ----------------------------------------------------------------------------


def mining_cost(summary: dict[str, Any], root: Path) -> dict[str, Any]:
    """Night 1's mining calls and tokens, and mining's peak memory on long sessions streamed from
    the store against all of them loaded at once, per 100 sessions."""
    import asyncio
    import tracemalloc

    from skillsleep.core.mine.mining import mine
    from skillsleep.core.models.store import Store
    from skillsleep.core.shared.session import Session, Turn

    per100 = 100 / max(1, summary["sessions"])
    row = summary["calls_by_role"].get("mine", {"calls": 0, "input_tokens": 0, "output_tokens": 0})
    store = Store(root / "mining-memory" / "state.db")
    body = "x" * (MEMORY_TURN_KB * 1024 - 1)
    for n in range(MEMORY_SESSIONS):
        turns = [Turn(kind="user", text=f"{TASKS[n % len(TASKS)][0]} in module {n}")]
        turns += [
            Turn(kind="tool_result", tool="Bash", call_id=f"c{t}", text=f"{t}{body}") for t in range(MEMORY_TURNS)
        ]
        store.put_session(Session(harness="chat", id=f"long{n}", turns=turns))

    def peak(sessions: Any) -> float:
        tracemalloc.start()
        asyncio.run(mine(sessions(), llm=None, judges=False, max_tasks=None))
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top / 2**20 * 100 / MEMORY_SESSIONS

    baseline, streamed = peak(store.sessions), peak(store.stream_sessions)
    store.close()
    return {
        "calls_per_100_sessions": round(row["calls"] * per100, 1),
        "tokens_per_100_sessions": round((row["input_tokens"] + row["output_tokens"]) * per100),
        "peak_mib_per_100_sessions": round(streamed, 1),
        "baseline_peak_mib_per_100_sessions": round(baseline, 1),
        "memory_corpus": f"{MEMORY_SESSIONS} sessions x {MEMORY_TURNS} turns x {MEMORY_TURN_KB} KiB",
    }


# --- main ----------------------------------------------------------------------------------------


def _roles(summary: dict[str, Any]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    rows = summary["calls_by_role"]
    calls = {r: int(v["calls"]) for r, v in sorted(rows.items())}
    tokens = {r: int(v["input_tokens"] + v["output_tokens"]) for r, v in sorted(rows.items())}
    hits = {r: int(v["cache_hits"]) for r, v in sorted(rows.items())}
    return calls, tokens, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["scripted", "local"], default="scripted")
    parser.add_argument("--steps", type=int, help="training steps (default: the night's, 2)")
    parser.add_argument("--dreams", type=int, help="dreams per training task (default: the night's, 1)")
    parser.add_argument("--max-tasks", type=int, help="most tasks tonight (default: the night's, 20)")
    parser.add_argument("--rollouts-k", type=int, help="samples per task (default: the night's, 1)")
    parser.add_argument("--keep", type=Path, help="build the corpus and state in this new folder and keep them")
    parser.add_argument(
        "--two-skills",
        action="store_true",
        help="the two-skill night instead (bench/night_skills.py): one run fanning out to two user skills",
    )
    args = parser.parse_args()
    root = (args.keep or Path(tempfile.mkdtemp(prefix="skillsleep-bench-night-"))).resolve()
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty: the bench starts from no state (pick a new --keep folder)")
    root.mkdir(parents=True, exist_ok=True)
    if args.two_skills and args.backend != "scripted":
        raise SystemExit("--two-skills runs on the scripted backend")
    if args.backend == "local":
        link_local_weights(root)
    if not args.two_skills:
        write_corpus(root)
    isolate(root)
    extra = [
        f"--{name}={value}"
        for name, value in (
            ("steps", args.steps),
            ("dreams", args.dreams),
            ("max-tasks", args.max_tasks),
            ("rollouts-k", args.rollouts_k),
        )
        if value is not None
    ]
    k = args.rollouts_k or 1
    dreams = 1 if args.dreams is None else args.dreams
    steps = args.steps or 2
    if args.two_skills:
        two_skills(root, extra, k, dreams)
        return

    first, wall = night(run_args(root, args.backend, extra))
    folder = root / "data" / "nights" / f"{first['night']:04d}"
    if not (folder / "plan.json").is_file():  # find the night's folder wherever Nights keeps it
        folder = Path(first["report"]["report.json"]).parent
    calls, tokens, hits = _roles(first)
    ideal = ideal_calls(folder, first, k, dreams)
    ideal_total = sum(ideal.values())

    mining = mining_cost(first, root)
    second, wall2 = night(run_args(root, args.backend, extra))
    calls2, _, hits2 = _roles(second)
    made2, hit2 = sum(calls2.values()), sum(hits2.values())

    result = {
        "backend": args.backend,
        "sessions": first["sessions"],
        "recurring_tasks": first["recurring_tasks"],
        "tasks_per_split": first["tasks"],
        "outcome": first["outcome"],
        "calls_by_role": calls,
        "tokens_by_role": tokens,
        "cache_hits": {"total": sum(hits.values()), "by_role": {r: n for r, n in hits.items() if n}},
        "model_calls": first["calls_made"],
        "ideal_calls": ideal_total,
        "ideal_by_role": {r: n for r, n in ideal.items() if n},
        "calls_over_ideal": round(first["calls_made"] / ideal_total, 3) if ideal_total else None,
        "plan_max_calls": plan_max_calls(folder, k, steps),
        "tokens": first["tokens"],
        "mining": mining,
        "wall_s": round(wall, 3),
        "second_night": {
            "outcome": second["outcome"],
            "model_calls": made2,
            "cache_hits": hit2,
            "calls_by_role": {r: n for r, n in calls2.items() if n},
            "cache_hits_by_role": {r: n for r, n in hits2.items() if n},
            "hit_rate": round(hit2 / (made2 + hit2), 3) if made2 + hit2 else None,
            "wall_s": round(wall2, 3),
        },
    }
    print(
        f"night 1: {first['outcome']} ({first['reason']}); {first['calls_made']} calls, ideal {ideal_total}, "
        f"{result['cache_hits']['total']} cache hits, {wall:.2f} s; tasks {first['tasks']}",
        file=sys.stderr,
    )
    print(
        f"mining per 100 sessions: {mining['calls_per_100_sessions']} calls, {mining['tokens_per_100_sessions']} "
        f"tokens; peak {mining['peak_mib_per_100_sessions']} MiB streamed vs "
        f"{mining['baseline_peak_mib_per_100_sessions']} MiB all loaded ({mining['memory_corpus']})",
        file=sys.stderr,
    )
    print(
        f"night 2: {second['outcome']}; {made2} calls, {hit2} cache hits, {wall2:.2f} s; state in {root}",
        file=sys.stderr,
    )
    print(json.dumps(result))


def two_skills(root: Path, extra: list[str], k: int, dreams: int) -> None:
    """The two-skill night: calls made against the ideal, per skill and in all (one JSON line)."""
    from night_skills import two_skill_night, write_two_skills

    rules = write_two_skills(root, optimizer_rules(), TARGET)
    result = two_skill_night(root, rules, extra, lambda folder, summary: ideal_calls(folder, summary, k, dreams))
    for name, skill in result["skills"].items():
        print(
            f"{name}: {skill['outcome']}; {skill['model_calls']} calls, ideal {skill['ideal_calls']}, "
            f"{skill['tokens']} tokens",
            file=sys.stderr,
        )
    print(
        f"two-skill night: {result['model_calls']} calls, ideal {result['ideal_calls']}, {result['tokens']} tokens, "
        f"{result['wall_s']:.2f} s; not trained: {result['not_trained']}; state in {root}",
        file=sys.stderr,
    )
    print(json.dumps({"backend": "scripted", "two_skills": result}))


if __name__ == "__main__":
    main()
