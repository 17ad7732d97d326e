"""Rollouts per second on a local Ray cluster of 1, 2 and 4 worker processes, against the ideal.

    python bench/scale.py [--workers 1,2,4] [--latency 5] [--rounds 3]

For each N a cluster of its own is started on 127.0.0.1 (`ray start --head --num-cpus N`: N
rollouts at once, no dashboard) and stopped after. The driver is the engine's own path: an
`Evaluator` with the Ray executor and the chat harness on the scripted backend, whose every
answer takes `--latency` seconds (a sleep on the worker: no CPU). One warm-up round (N rollouts:
the workers start and import skillsleep) is not counted; then `rounds` × N distinct rollouts.

Per N: rollouts/s; `efficiency` = rollouts/s ÷ (N × rollouts/s with 1 worker), the ideal being
N × the single worker's throughput measured in the same run; `overhead_ms_per_rollout` = (wall −
rounds × latency) ÷ rollouts (dispatch, scheduling and the trip back, as the driver waits it); and
`driver_cpu_ms_per_rollout` = the driver process's CPU time ÷ rollouts. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.registry import create_backend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.records import Check, Judge, Task
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.executor import ExecutorSection
from skillsleep.core.train.gate import GateConfig
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.cluster import RayExecutor

RAY = Path(sys.executable).parent / "ray"
SKILL = Skill.parse("# Sums\n\nEnd every reply with a final line `ANSWER: <answer>`.\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray(*args: str) -> None:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([str(RAY), *args], check=True, env=env, capture_output=True, timeout=300)


def _tasks(prefix: str, n: int) -> list[Task]:
    judge = Judge(checks=[Check(type="last_line_regex", value="ANSWER: .+")])
    return [Task(id=f"{prefix}{i}", prompt=f"Question {prefix}{i}: what is 2+2?", judge=judge) for i in range(n)]


async def _measure(address: str, script: Path, workers: int, latency: float, rounds: int) -> dict[str, float]:
    settings = BackendSettings(model=str(script), options={"latency_s": latency})
    llm = LLM(create_backend(f"scripted:{script}", settings), ledger=Ledger())
    executor = RayExecutor(ExecutorSection(kind="ray", address=address, max_retries=0))
    ev = Evaluator(ChatHarness(llm), judge_llm=None, gate=GateConfig(), executor=executor)
    try:
        await ev.rollouts(SKILL, _tasks("warm", workers))
        n = rounds * workers
        cpu, start = time.process_time(), time.perf_counter()
        results = await ev.rollouts(SKILL, _tasks("t", n))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        await executor.aclose()
    failed = [r.run.error for r in results if r.run.error]
    if failed:
        raise SystemExit(f"{len(failed)} rollouts failed: {failed[0]}")
    return {
        "rollouts": n,
        "wall_s": round(wall, 3),
        "rollouts_per_s": round(n / wall, 4),
        "overhead_ms_per_rollout": round(1000 * (wall - rounds * latency) / n, 2),
        "driver_cpu_ms_per_rollout": round(1000 * cpu / n, 2),
    }


def one_cluster(workers: int, latency: float, rounds: int, script: Path) -> dict[str, float]:
    """Start a cluster of `workers` CPUs, measure, stop it (always)."""
    port = _free_port()
    try:
        _ray(
            *("start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port)),
            *("--num-cpus", str(workers), "--include-dashboard=false", "--disable-usage-stats"),
            *("--ray-client-server-port", str(_free_port())),
        )
        return asyncio.run(_measure(f"127.0.0.1:{port}", script, workers, latency, rounds))
    finally:
        subprocess.run([str(RAY), "stop", "--force"], capture_output=True, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated (the first is the base)")
    parser.add_argument("--latency", type=float, default=5.0, help="seconds one rollout takes")
    parser.add_argument("--rounds", type=int, default=3, help="rollouts per worker that are measured")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "target.json"
        script.write_text(json.dumps([{"match": "2\\+2", "reply": "Four.\nANSWER: 4"}]))
        rows = {n: one_cluster(n, args.latency, args.rounds, script) for n in counts}
    base = rows[counts[0]]["rollouts_per_s"] / counts[0]
    for n, row in rows.items():
        row["ideal_rollouts_per_s"] = round(n * base, 4)
        row["efficiency"] = round(row["rollouts_per_s"] / (n * base), 3)
        print(json.dumps({"workers": n, **row}), file=sys.stderr)
    last = rows[counts[-1]]
    print(
        json.dumps(
            {
                "latency_s": args.latency,
                "rounds": args.rounds,
                "workers": {str(n): row for n, row in rows.items()},
                f"efficiency_at_{counts[-1]}": last["efficiency"],
                "max_overhead_ms_per_rollout": max(r["overhead_ms_per_rollout"] for r in rows.values()),
                "max_driver_cpu_ms_per_rollout": max(r["driver_cpu_ms_per_rollout"] for r in rows.values()),
            }
        )
    )


if __name__ == "__main__":
    main()
