"""One training step against a fixed-latency backend: calls made vs needed, wall time vs ideal.

    python bench/engine.py [--concurrency C] [--latency S] [--repeats R] [--candidates N]

The ideal wall time of a step is Σ over its stages of ceil(n / C) × latency, where the stages
are: score the seed on the selection split (V×K), roll out the train batch (B×K), reflect
(ceil(B×K / M) minibatches), merge (1), rank (1), score the candidate on the selection split
(V×K) — with N candidates ([train] candidates), each distinct new candidate skill (V×K each,
all at once; candidate 2 is the quoted-literal form, no model call; candidate 3 a worked example,
asked of the optimizer in one "example" call since no reply of the batch passes: core/train/strategies.py). `calls_needed` is the number of distinct requests; `calls_made` what reached the
backend. The last line printed is one JSON object (medians over the repeats).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings, BaseBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.shared.records import Check, Completion, CompletionRequest, Judge, Task, Usage
from skillsleep.core.train.config import load_config
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import GateConfig
from skillsleep.core.train.trainer import Trainer
from skillsleep.harnesses.chat import ChatHarness

V, B, K, M = 16, 16, 2, 4
RULE = "Finish with a line `ANSWER: <answer>`."


class FixedLatency(BaseBackend):
    """Answers after a fixed delay; remembers every request it received."""

    name = "bench"

    def __init__(self, latency: float, concurrency: int) -> None:
        super().__init__(BackendSettings(model="fixed", concurrency=concurrency))
        self.latency = latency
        self.seen: list[str] = []

    async def _send(self, request: CompletionRequest) -> Completion:
        self.seen.append(request.cache_key(self.name))
        await asyncio.sleep(self.latency)
        return Completion(text=_answer(request), usage=Usage(input_tokens=100, output_tokens=20), finish_reason="stop")


def _answer(request: CompletionRequest) -> str:
    required = (request.json_schema or {}).get("required", [])
    text = request.messages[-1].content
    if required == ["findings"]:
        digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
        content = RULE if digest % 2 else f"Double-check every sum (note {digest % 997})."
        finding = {"kind": "skill_defect", "diagnosis": "d", "op": "add", "target": "", "content": content}
        return json.dumps({"findings": [finding]})
    if required == ["groups"]:
        return json.dumps({"groups": []})
    if required == ["reply"]:  # a worked example asked of the optimizer (core/train/strategies.py)
        return json.dumps({"reply": "Adding the numbers.\nANSWER: <answer>"})
    if "order" in required:
        return json.dumps({"order": [], **({"next_budget": 2} if "next_budget" in required else {})})
    if required:
        return json.dumps({key: [] for key in required})
    system = request.messages[0].content
    a, b = map(int, re.findall(r"(\d+)\+(\d+)", text)[0])
    work = f"Adding {a} and {b} (try {request.sample})."
    return f"{work}\nANSWER: {a + b}" if "ANSWER:" in system else f"{work}\n{a + b}"


def _tasks() -> list[Task]:
    judge = Judge(
        checks=[Check(type="last_line_regex", value="ANSWER: .+")],
        answer_pattern=r"ANSWER:\s*(.+)$",
        answer_match="number",
    )
    out = []
    for i in range(V + B):
        split = "val" if i < V else "train"
        out.append(
            Task(
                id=f"t{i}",
                prompt=f"What is {i}+{i * 7}?",
                split=split,
                judge=judge.model_copy(update={"answer": str(i * 8)}),
            )
        )
    return out


async def one_step(latency: float, concurrency: int, candidates: int = 1) -> dict[str, float | int | dict[str, int]]:
    tmp = Path(tempfile.mkdtemp(prefix="skillsleep-bench-"))
    (tmp / "tasks.jsonl").write_text("\n".join(t.model_dump_json() for t in _tasks()) + "\n")
    (tmp / "SKILL.md").write_text("# Sums\n\n- Add the numbers.\n")
    (tmp / "run.toml").write_text(
        '[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'
        f"[train]\nepochs = 1\nsteps_per_epoch = 1\nbatch_size = {B}\nminibatch_size = {M}\nrollouts_k = {K}\n"
        f"merge_group_size = 8\ncandidates = {candidates}\n"
        '[lr]\nschedule = "constant"\nmax_edits = 2\nmin_edits = 1\n'
        "[slow_update]\nenabled = false\n[meta]\nenabled = false\n"
    )
    cfg = load_config(tmp / "run.toml")
    backend = FixedLatency(latency, concurrency)
    ledger = Ledger()
    target, optimizer = LLM(backend, ledger=ledger), LLM(backend, ledger=ledger)
    run_dir = RunDir(tmp / "run")
    ev = Evaluator(ChatHarness(target), judge_llm=None, gate=GateConfig(), rollouts_k=K, log_path=run_dir.rollouts_path)
    tasks = _tasks()
    splits = {"val": [t for t in tasks if t.split == "val"], "train": [t for t in tasks if t.split == "train"]}
    trainer = Trainer(
        cfg,
        splits=splits,
        seed_skill=Skill.parse((tmp / "SKILL.md").read_text()),
        evaluator=ev,
        optimizer=optimizer,
        run_dir=run_dir,
    )
    start = time.perf_counter()
    st = await trainer.run()
    wall = time.perf_counter() - start
    roles = {role: int(row["calls"]) for role, row in ledger.by_role().items()}
    gated = sum(len(s.candidate_gates) or (1 if s.gate else 0) for s in st.steps)
    stages = [
        V * K,
        B * K,
        math.ceil(B * K / M),
        roles.get("merge", 0),
        roles.get("rank", 0),
        roles.get("repair", 0),
        roles.get("example", 0),
        V * K * gated,
    ]
    ideal = sum(math.ceil(n / concurrency) for n in stages if n) * latency
    return {
        "calls_made": ledger.calls_made,
        "calls_needed": len(set(backend.seen)),
        "calls_by_role": roles,
        "gated": gated,
        "wall_s": wall,
        "ideal_wall_s": ideal,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=1, help="[train] candidates: candidate skills a step gates")
    args = parser.parse_args()
    runs = [asyncio.run(one_step(args.latency, args.concurrency, args.candidates)) for _ in range(args.repeats)]
    for r in runs:
        print(json.dumps(r), file=sys.stderr)
    wall = statistics.median(float(r["wall_s"]) for r in runs)  # type: ignore[arg-type]
    ideal = float(runs[0]["ideal_wall_s"])  # type: ignore[arg-type]
    print(
        json.dumps(
            {
                "calls_made": runs[0]["calls_made"],
                "calls_needed": runs[0]["calls_needed"],
                "calls_by_role": runs[0]["calls_by_role"],
                "candidates": args.candidates,
                "gated": runs[0]["gated"],
                "concurrency": args.concurrency,
                "latency_s": args.latency,
                "wall_s": round(wall, 4),
                "ideal_wall_s": round(ideal, 4),
                "wall_over_ideal": round(wall / ideal, 3),
                "repeats": args.repeats,
            }
        )
    )


if __name__ == "__main__":
    main()
