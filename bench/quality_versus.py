"""bench/quality.py --versus: do 2 candidates per step beat 1 at an equal token budget?

For each family, optimizer and seed, two runs with the same `[budget] tokens` cap (`--budget-tokens`,
default 15,000) and the same steps: `[train] candidates = 1` (arm A) and `= N` (arm B, `--candidates`,
2 when left at 1). A run that reaches the cap stops there and keeps its best skill so far, so the
arm with several candidates pays for its extra gating with steps it does not take. The best skill of
each run is scored on every test task; per family × optimizer the test tasks of all seeds are paired
(`seed:task`), and `compare_scores` (core/train/paired.py) gives B − A with a paired bootstrap
interval, McNemar's test and a verdict. Printed: one line per run, one per comparison, JSON last.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import quality_families

from skillsleep.core.train.paired import compare_scores
from skillsleep.core.train.step_record import StepRecord

OneRun = Callable[..., Awaitable[dict[str, Any]]]


def arms(candidates: int) -> tuple[int, int]:
    """The candidates of arm A and arm B."""
    return 1, candidates if candidates > 1 else 2


def compare_arms(rows: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """Per family × optimizer: each arm's mean test gain, tokens and winning strategies, and the paired
    comparison of B against A over the test tasks of every seed."""
    out = []
    for family, optimizer in dict.fromkeys((r["family"], r["optimizer"]) for r in rows):
        mine = [r for r in rows if (r["family"], r["optimizer"]) == (family, optimizer)]
        n_a, n_b = sorted({r["candidates"] for r in mine})[:1] + sorted({r["candidates"] for r in mine})[-1:]
        a, b = ([r for r in mine if r["candidates"] == n] for n in (n_a, n_b))
        paired = compare_scores(
            *({f"{r['seed']}:{t}": [s] for r in arm for t, s in r["test_tasks"].items()} for arm in (a, b))
        )
        out.append(
            {
                "family": family,
                "optimizer": optimizer,
                "candidates": [n_a, n_b],
                "budget_tokens": budget,
                "seeds": len(a),
                "gain": [
                    round(statistics.mean(r["test"]["best"] - r["test"]["seed"] for r in arm), 3) for arm in (a, b)
                ],
                "tokens": [round(statistics.mean(r["tokens"] for r in arm)) for arm in (a, b)],
                "steps": [sum(r["steps"] for r in arm) for arm in (a, b)],
                "strategies_kept": _kept(b),
                "mean_diff": round(paired.mean_diff, 3),
                "ci": [round(paired.ci_low, 3), round(paired.ci_high, 3)],
                "mcnemar_p": round(paired.mcnemar_p, 4),
                "better": {"A": f"{n_a} candidate", "B": f"{n_b} candidates", "none": "neither"}[paired.better],
                "verdict": paired.verdict,
            }
        )
    return out


def _kept(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How often each strategy's candidate was the one a step kept, over `rows`."""
    counts: dict[str, int] = {}
    for r in rows:
        for strategy in r.get("strategies_kept", []):
            counts[strategy] = counts.get(strategy, 0) + 1
    return counts


def line(c: dict[str, Any]) -> str:
    n_a, n_b = c["candidates"]
    return (
        f"{c['family']:13} {c['optimizer'].split(':')[-1]:18} {n_b} vs {n_a} candidates at ≤{c['budget_tokens']} tokens, "
        f"{c['seeds']} seeds: gain {c['gain'][1]:+.2f} vs {c['gain'][0]:+.2f}, tokens {c['tokens'][1]} vs "
        f"{c['tokens'][0]}, kept {c['strategies_kept'] or '{}'}; {c['verdict']}"
    )


async def versus(
    args: argparse.Namespace, work: Path, one_run: OneRun, scores: Callable[..., Any], engine: str = ""
) -> dict[str, Any]:
    """Both arms on every family × optimizer × seed (`one_run`, `scores`: bench/quality.py's; `engine`:
    its engine fingerprint, for --resume)."""
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for family in map(quality_families.load_family, args.families):
        folder = work / family.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "all.jsonl").write_text(
            "".join(t.model_dump_json(exclude_none=True) + "\n" for t in quality_families.build_tasks(family))
        )
        tests = scores(folder, family, args.verbose)
        for optimizer in args.optimizers:
            for seed in args.seeds:
                for n in arms(args.candidates):
                    row = await one_run(
                        work, family, tests, optimizer, seed, args.steps, args.verbose, n, args.budget_tokens,
                        engine=engine, resume=args.resume,
                    )  # fmt: skip
                    run_dir = Path(row["run_dir"])
                    row["test_tasks"] = await tests.per_task(run_dir / "best_skill.md")
                    steps = [
                        StepRecord.model_validate_json(p.read_text()) for p in sorted(run_dir.glob("steps/*/step.json"))
                    ]
                    row["strategies_kept"] = [s.strategy for s in steps if s.strategy]
                    rows.append(row)
                    print(f"{family.name} {optimizer} seed {seed} candidates {n}: tokens {row['tokens']}", flush=True)
    compared = compare_arms(rows, args.budget_tokens)
    for c in compared:
        print(line(c), file=sys.stdout, flush=True)
    return {"bench": "quality --versus", "budget_tokens": args.budget_tokens, "steps": args.steps,
            "comparisons": compared, "runs": rows, "wall_s": round(time.perf_counter() - start, 1)}  # fmt: skip
