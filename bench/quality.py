"""The quality benchmark: does training lift a skill toward a hand-written reference on held-out tasks?

For each task family under bench/quality/ (bench/quality_families.py reads them; `--list` shows
them; those held out for the end run only when named, or with `--families all`), each optimizer
and each seed: `skillsleep train` (in-process, the same code as the command) on the family's
train and selection splits with the embedded Qwen2.5-Coder-0.5B as target, then the seed, best,
final and reference skills scored on the held-out test split, which the optimizer never sees
(`skillsleep eval` logic, same target and settings). Prints one line per run, a table per
family × optimizer, and JSON as the last line.

    .venv/bin/python bench/quality.py [--families structure,answer-format,…|all] [--list]
        [--optimizers local:qwen2.5-coder-1.5b,local:qwen2.5-coder-0.5b] [--seeds 0,1,2]
        [--steps 2] [--candidates 1] [--versus [--budget-tokens 15000]] [--work DIR [--resume]] [--out FILE]

`--versus` runs 1 against `--candidates` (2 when 1) candidates per step at an equal token budget and
compares the best skills per test task (bench/quality_versus.py). `--resume` keeps the runs a
bench (either kind) with the same `--work` finished on the same engine code, family and settings
(row.json, written atomically; one that cannot be read is run again).

The 1.5B optimizer needs `pip install -e '.[local,local-large]'`. Targets (issue 13), judged
for the 1.5B optimizer: on every family the mean test gain is at least half the headroom
(reference − seed) in at most 15k tokens per run, and at least 90% of steps end with an edit
that applies (moot steps aside: those whose only proposals the skill already holds). Scores at temperature 0 are deterministic per skill text (llama.cpp in-process,
fixed seed), so each distinct skill is scored on the test split once per family.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from skillsleep.core.models.rundir import write_atomic
from skillsleep.core.shared.events import Event, quiet
from skillsleep.core.train.intervals import gain_interval
from skillsleep.core.train.step_record import StepRecord

sys.path.insert(0, str(Path(__file__).resolve().parent))  # quality_families.py beside this script
from quality_families import (
    DATA,
    FAMILIES,
    REPO,
    Family,
    build_tasks,
    draw_splits,
    family_names,
    listing,
    load_family,
    read_items,
)
from quality_versus import versus

__all__ = ["DATA", "Family", "build_tasks", "draw_splits", "family_names", "load_family", "main", "read_items"]
TARGET = "local:qwen2.5-coder-0.5b"
OPTIMIZERS = ("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-0.5b")
TARGET_OPTIMIZER = "local:qwen2.5-coder-1.5b"  # the optimizer the targets are judged for
MAX_TOKENS_PER_RUN = 15_000
MIN_APPLICABLE = 0.9
ENGINE = ("core", "harnesses", "slash_commands")  # the code a run's numbers depend on (bench code aside)


def engine_fingerprint() -> str:
    """A digest of the engine's files (core/, harnesses/, slash_commands/, caches aside) and of the
    bench's own code: two runs with the same digest ran the same code, whatever else changed."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    files = [here / "quality.py", here / "quality_families.py"]
    for top in ENGINE:
        files += sorted(p for p in (REPO / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        digest.update(f"{path.relative_to(REPO)}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()


def run_fingerprint(engine: str, family: Family, config: Path) -> str:
    """What a finished run's row depends on: the engine, the family's files, the run config, the target."""
    digest = hashlib.sha256(f"{engine}\0{TARGET}\0{family.model_dump_json()}\0{config.read_text()}".encode())
    for path in sorted((FAMILIES / family.name).iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def write_run_config(
    folder: Path, family: Family, optimizer: str, seed: int, steps: int, candidates: int = 1, budget_tokens: int = 0
) -> Path:
    """A run.toml as a user would write it: 1 epoch of `steps` steps, batch 4, at most 3 edits,
    `candidates` candidate skills gated per step (with 1, a step whose own edits change nothing
    gates another form: `fallback = true`), at most `budget_tokens` tokens (0: no cap)."""
    config = folder / "run.toml"
    config.write_text(
        f'[run]\nname = "run"\nout_dir = "{folder}"\nseed = {seed}\n'
        f'[data]\ntasks = "{folder / "tasks.jsonl"}"\nskill = "{family.seed_skill}"\n'
        f'[target]\nbackend = "{TARGET}"\nmax_tokens = {family.max_tokens}\ntimeout_s = 600\n'
        f'[optimizer]\nbackend = "{optimizer}"\nmax_tokens = 512\ntimeout_s = 900\n'
        f"[train]\nepochs = 1\nsteps_per_epoch = {steps}\nbatch_size = 4\nminibatch_size = 4\n"
        f"candidates = {candidates}\nfallback = true\n"
        '[lr]\nschedule = "cosine"\nmax_edits = 3\nmin_edits = 1\n'
        '[gate]\nmetric = "hard"\n[slow_update]\nsample_size = 4\nmax_lines = 4\n'
        "[cache]\nenabled = false\n" + (f"[budget]\ntokens = {budget_tokens}\n" if budget_tokens else "")
    )
    return config


def _say(event: Event) -> None:
    """The training's progress lines on stderr (`--verbose`), as the command line prints them."""
    if event.shown:
        print(event.describe(), file=sys.stderr, flush=True)


class TestScores:
    """Test-split scores by skill text, per family and per test task. At temperature 0 one skill
    text has one score (llama.cpp in-process, fixed seed), so each is scored once, and kept in the
    work folder's test-scores.json keyed by the skill, the tasks and the target: a later bench with
    the same --work does not score the seed and reference skills again (an entry written before
    per-task scores were kept, a bare mean, is scored again)."""

    def __init__(self, folder: Path, family: Family, verbose: bool) -> None:
        self.folder, self.family, self.verbose = folder, family, verbose
        self.path = folder / "test-scores.json"
        self.scores: dict[str, Any] = json.loads(self.path.read_text()) if self.path.is_file() else {}

    def _key(self, text: str) -> str:
        tasks = (self.folder / "all.jsonl").read_text()
        return hashlib.sha256(f"{TARGET}\0{self.family.max_tokens}\0{tasks}\0{text}".encode()).hexdigest()

    async def score(self, skill: Path) -> float:
        """The skill's mean score over the test tasks."""
        return statistics.mean((await self.per_task(skill)).values())

    async def per_task(self, skill: Path) -> dict[str, float]:
        """The skill's score on each test task (task id → score)."""
        from skillsleep.slash_commands.eval_runner import EvalOptions, run_eval

        key = self._key(skill.read_text())
        if not isinstance(self.scores.get(key), dict):
            config = write_run_config(self.folder, self.family, OPTIMIZERS[-1], 0, 1)
            opts = EvalOptions(skill=skill, tasks=self.folder / "all.jsonl", config=config, split="test")
            result = await run_eval(opts, on_event=_say if self.verbose else quiet)
            self.scores[key] = {t.id: t.score for t in result.per_task}
            write_atomic(self.path, json.dumps(self.scores, indent=1) + "\n")
        return dict(self.scores[key])


def step_outcome(step: StepRecord) -> str:
    """How a step ended: "applicable" (an edit applied), "moot" (every selected edit is a line the
    skill already holds, as proposed or repaired: the optimizer found nothing missing, and no
    rewrite would help) or "dead_end" (nothing selected, or refused edits that no rewrite saved)."""
    if step.applied:
        return "applicable"
    held = {e.key() for e in step.moot}
    return "moot" if step.selected and all(e.key() in held for e in step.selected) else "dead_end"


def step_counts(run_dir: Path) -> dict[str, int]:
    """Steps; steps whose selected edits applied, were moot, or ended at a dead end; accepted
    candidates (from the run's step records)."""
    steps = [StepRecord.model_validate_json(p.read_text()) for p in sorted(run_dir.glob("steps/*/step.json"))]
    outcomes = [step_outcome(s) for s in steps]
    return {
        "steps": len(steps),
        "steps_applicable": outcomes.count("applicable"),
        "steps_moot": outcomes.count("moot"),
        "steps_dead_end": outcomes.count("dead_end"),
        "accepted": sum(1 for s in steps if s.gate is not None and s.gate.accepted),
    }


async def one_run(
    work: Path,
    family: Family,
    tests: TestScores,
    optimizer: str,
    seed: int,
    steps: int,
    verbose: bool,
    candidates: int = 1,
    budget_tokens: int = 0,
    engine: str = "",
    resume: bool = False,
) -> dict[str, Any]:
    """Train once and score the result on the test split; one row of the table. `engine`: the
    engine's fingerprint (computed here when not given). With `resume`, a run finished before in
    this folder with the same engine, family, config and target is not run again: its row
    (row.json) is returned as it was written."""
    from skillsleep.slash_commands.train_runner import run_training

    name = f"{optimizer.split(':')[-1]}-seed{seed}" + (f"-c{candidates}" if candidates > 1 else "")
    name += f"-b{budget_tokens}" if budget_tokens else ""
    folder = work / family.name / name
    folder.mkdir(parents=True, exist_ok=True)
    tasks = [t for t in build_tasks(family) if t.split != "test"]  # the optimizer never sees test
    (folder / "tasks.jsonl").write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in tasks))
    config = write_run_config(folder, family, optimizer, seed, steps, candidates, budget_tokens)
    saved, fingerprint = folder / "row.json", run_fingerprint(engine or engine_fingerprint(), family, config)
    if resume and saved.is_file():
        row = saved_row(saved)
        if row is not None and row.get("fingerprint") == fingerprint:
            print(f"{family.name} {name}: finished before with this engine, not run again ({saved})", file=sys.stderr)
            return row
        why = "cannot be read" if row is None else "is from other code or settings"
        print(f"{family.name} {name}: {saved} {why}: run again", file=sys.stderr)
    saved.unlink(missing_ok=True)
    start = time.perf_counter()
    summary = await run_training(config, [], fresh=True, on_event=_say if verbose else quiet)
    train_s = time.perf_counter() - start
    run_dir = Path(summary.run_dir)
    (run_dir / "final_skill.md").write_text(json.loads((run_dir / "state.json").read_text())["current"])
    skills = {"seed": family.seed_skill, "best": run_dir / "best_skill.md", "final": run_dir / "final_skill.md"}
    per_task = {name: await tests.per_task(path) for name, path in skills.items()}
    test = {name: statistics.mean(scores.values()) for name, scores in per_task.items()}
    roles = {
        role: {"calls": r.calls, "tokens": r.input_tokens + r.output_tokens}
        for role, r in summary.calls_by_role.items()
    }
    row = {
        "family": family.name,
        "optimizer": optimizer,
        "seed": seed,
        "candidates": candidates,
        "selection": {"seed": summary.seed_score, "best": summary.best_score, "final": summary.final_score},
        "test": test,
        "test_per_task": {"seed": per_task["seed"], "best": per_task["best"]},  # for the family's gain interval
        **step_counts(run_dir),
        "steps_skipped": summary.skipped,  # not run: every selection task already had the top score
        "calls": summary.calls_made,
        "tokens": summary.tokens,
        "by_role": roles,
        "problems": len(summary.problems),
        "stopped": summary.stopped,
        "train_s": round(train_s, 1),
        "wall_s": round(time.perf_counter() - start, 1),
        "run_dir": str(run_dir),
        "fingerprint": fingerprint,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_atomic(saved, json.dumps(row, indent=1) + "\n")  # a kill leaves the old row or none, never half of one
    return row


def saved_row(path: Path) -> dict[str, Any] | None:
    """A finished run's row.json, or None when it is not a JSON object (written by a bench killed
    mid-write before rows were written atomically, or edited by hand)."""
    try:
        row = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return row if isinstance(row, dict) else None


def summarise(rows: list[dict[str, Any]], reference: dict[str, float]) -> list[dict[str, Any]]:
    """Per family × optimizer × candidates: the test gain over seeds (best skill − seed skill), the headroom
    fraction and whether each target holds."""
    out = []
    for family, optimizer, n in dict.fromkeys((r["family"], r["optimizer"], r.get("candidates", 1)) for r in rows):
        runs = [r for r in rows if (r["family"], r["optimizer"], r.get("candidates", 1)) == (family, optimizer, n)]
        seed_score, ref = runs[0]["test"]["seed"], reference[family]
        gains = [r["test"]["best"] - r["test"]["seed"] for r in runs]
        gain = statistics.mean(gains)
        headroom = ref - seed_score
        steps, moot = sum(r["steps"] for r in runs), sum(r["steps_moot"] for r in runs)
        # a moot step proposed only what the skill already says: not a step an edit could have saved
        needing = steps - moot
        applicable = sum(r["steps_applicable"] for r in runs) / needing if needing else 1.0
        max_tokens = max(r["tokens"] for r in runs)
        out.append(
            {
                "family": family,
                "optimizer": optimizer,
                "candidates": n,
                "seeds": len(runs),
                "test_seed": seed_score,
                "test_reference": ref,
                "gain_mean": round(gain, 3),
                "gain_sd": round(statistics.stdev(gains), 3) if len(gains) > 1 else 0.0,
                "gain_min": round(min(gains), 3),
                "gain_ci": gain_ci(runs),
                "gain_max": round(max(gains), 3),
                "headroom": round(headroom, 3),
                "headroom_fraction": round(gain / headroom, 3) if headroom > 0 else None,
                "steps": steps,
                "steps_applicable": sum(r["steps_applicable"] for r in runs),
                "steps_moot": moot,
                "steps_dead_end": sum(r["steps_dead_end"] for r in runs),
                "steps_skipped": sum(r.get("steps_skipped", 0) for r in runs),  # rows written before it: none
                "applicable_rate": round(applicable, 3),
                "accepted": sum(r["accepted"] for r in runs),
                "max_tokens_per_run": max_tokens,
                "target_gain": headroom > 0 and gain >= 0.5 * headroom,
                "target_tokens": max_tokens <= MAX_TOKENS_PER_RUN,
                "target_applicable": applicable >= MIN_APPLICABLE,
            }
        )
    return out


def gain_ci(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The mean test gain (best − seed skill) over the runs' seeds × the test tasks, with its 95%
    two-level bootstrap interval (seeds and tasks resampled independently, seeded with 0:
    core/train/intervals.py `gain_interval`); None when a run has no per-task test scores."""
    if not runs or not all("test_per_task" in r for r in runs):
        return None
    gains = {
        f"seed {r['seed']}": {t: r["test_per_task"]["best"][t] - s for t, s in r["test_per_task"]["seed"].items()}
        for r in runs
    }
    return gain_interval(gains, seed=0).model_dump()


def _gain(s: dict[str, Any]) -> str:
    """The gain over seeds: its interval over seeds × tasks when there is one, its sd and range."""
    spread = f"sd {s['gain_sd']:.2f}, range [{s['gain_min']:+.2f}, {s['gain_max']:+.2f}]"
    if (ci := s.get("gain_ci")) is None:
        return f"gain {s['gain_mean']:+.2f} ({spread})"
    return (
        f"gain {s['gain_mean']:+.2f}, {ci['confidence']:.0%} CI [{ci['ci_low']:+.2f}, {ci['ci_high']:+.2f}] over "
        f"{ci['n_runs']} seeds × {ci['n_tasks']} tasks ({spread})"
    )


def _row_line(r: dict[str, Any]) -> str:
    sel, test = r["selection"], r["test"]
    roles = " ".join(f"{k}={v['calls']}/{v['tokens']}" for k, v in sorted(r["by_role"].items()))
    return (
        f"{r['family']:13} {r['optimizer'].split(':')[-1]:18} seed {r['seed']} candidates {r['candidates']}  "
        f"sel {sel['seed']:.2f}→{sel['best']:.2f} (final {sel['final']:.2f})  "
        f"test {test['seed']:.2f}→{test['best']:.2f} (final {test['final']:.2f}, ref {r['reference']:.2f})  "
        f"steps {r['steps']} applicable {r['steps_applicable']} moot {r['steps_moot']} "
        f"dead-end {r['steps_dead_end']} skipped {r.get('steps_skipped', 0)} accepted {r['accepted']}  "
        f"calls/tokens {roles}  train {r['train_s']:.0f} s (with test scoring {r['wall_s']:.0f} s)"
    )


def _summary_line(s: dict[str, Any]) -> str:
    frac = "n/a" if s["headroom_fraction"] is None else f"{s['headroom_fraction']:.2f}"
    ok = {True: "yes", False: "no"}
    return (
        f"{s['family']:13} {s['optimizer'].split(':')[-1]:18} candidates {s['candidates']} {s['seeds']} seeds  "
        f"test seed {s['test_seed']:.2f} ref {s['test_reference']:.2f}  "
        f"{_gain(s)}  "
        f"headroom fraction {frac}  steps {s['steps']}: applicable {s['steps_applicable']}, "
        f"moot {s['steps_moot']}, dead-end {s['steps_dead_end']}, skipped {s['steps_skipped']} "
        f"({s['applicable_rate']:.0%} of the non-moot apply)  "
        f"max tokens {s['max_tokens_per_run']}  "
        f"targets: gain {ok[s['target_gain']]}, tokens {ok[s['target_tokens']]}, "
        f"applicable {ok[s['target_applicable']]}"
    )


async def bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    reference: dict[str, float] = {}
    start = time.perf_counter()
    engine = engine_fingerprint()
    for family in map(load_family, args.families):
        folder = work / family.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "all.jsonl").write_text(
            "".join(t.model_dump_json(exclude_none=True) + "\n" for t in build_tasks(family))
        )
        tests = TestScores(folder, family, args.verbose)
        reference[family.name] = await tests.score(family.reference_skill)
        for optimizer in args.optimizers:
            for seed in args.seeds:
                row = await one_run(
                    work,
                    family,
                    tests,
                    optimizer,
                    seed,
                    args.steps,
                    args.verbose,
                    args.candidates,
                    engine=engine,
                    resume=args.resume,
                )
                row["reference"] = reference[family.name]
                rows.append(row)
                print(_row_line(row), flush=True)
                if args.out:
                    Path(args.out).write_text(json.dumps({"runs": rows}, indent=1) + "\n")
    summary = summarise(rows, reference)
    for s in summary:
        print(_summary_line(s), flush=True)
    return {
        "bench": "quality",
        "engine": engine,
        "target": TARGET,
        "steps": args.steps,
        "candidates": args.candidates,
        "summary": summary,
        "runs": rows,
        "wall_s": round(time.perf_counter() - start, 1),
    }


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="families (bench/quality/<family>/):\n" + listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--families",
        default=",".join(family_names(held_out=False)),
        help="comma-separated families, or 'all' (default: every family not held out for the end)",
    )
    ap.add_argument("--list", action="store_true", help="list the families (held out or not, source) and stop")
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS), help="comma-separated optimizer backends")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated run seeds")
    ap.add_argument("--steps", type=int, default=2, help="training steps per run (1 epoch)")
    ap.add_argument(
        "--candidates", type=int, default=1, help="candidate skills each step gates ([train] candidates, 1-8)"
    )
    ap.add_argument(
        "--versus",
        action="store_true",
        help="1 candidate against --candidates (2 when 1) at an equal token budget: paired test-task difference",
    )
    ap.add_argument("--budget-tokens", type=int, default=MAX_TOKENS_PER_RUN, help="--versus: each run's token cap")
    ap.add_argument("--work", type=Path, help="keep runs and the model cache here (default: a temporary folder)")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="with --work: keep the runs finished there with the same engine, family and settings "
        "(row.json), run the rest",
    )
    ap.add_argument("--out", help="also write the whole result as JSON to this file (rewritten after every run)")
    ap.add_argument("--verbose", action="store_true", help="print the training's progress lines to stderr")
    args = ap.parse_args(argv)
    if args.list:
        print(listing())
        sys.exit(0)
    names = family_names() if args.families == "all" else args.families.split(",")
    args.families = [f for f in names if f]
    args.optimizers = [o for o in args.optimizers.split(",") if o]
    try:
        args.seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        ap.error(f"--seeds takes whole numbers separated by commas, such as 0,1,2; got {args.seeds!r}")
    if args.steps < 1:
        ap.error("--steps must be 1 or more")
    if args.resume and args.work is None:
        ap.error(
            "--resume keeps the runs finished in a --work folder: give --work DIR (the folder of the earlier bench)"
        )
    if not 1 <= args.candidates <= 8:
        ap.error(f"--candidates takes 1 to 8 (the range of [train] candidates); got {args.candidates}")
    for name in args.families:
        load_family(name)  # an unknown family fails before any model is loaded
    if not DATA.is_dir():
        sys.exit(
            f"{DATA} is missing: the quality bench reads IFEval, BIG-bench, BBH and GSM8K tasks from "
            "../shared/data/tasks beside the repository (see docs/benchmarks.md)"
        )
    return args


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    with tempfile.TemporaryDirectory(prefix="skillsleep-quality-") as scratch:
        work = (args.work or Path(scratch)).resolve()
        # the runs' state, chat logs and model cache stay out of the user's own skillsleep folders
        os.environ["SKILLSLEEP_HOME"] = str(work / "home")
        result = asyncio.run(
            versus(args, work, one_run, TestScores, engine_fingerprint()) if args.versus else bench(args, work)
        )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
