"""The agents as model providers (`claude-code`, `codex`) on the scripted model server: what one
call costs beyond the model's own answer, and how well the concurrency default uses the time.

    PATH=$PWD/.tools/agents/node_modules/.bin:$PATH .venv/bin/python bench/agent_models.py \\
        [--calls N] [--latency S] [--concurrency C] [--agent claude-code|codex]

Per agent, through `LLM.ask_model` (a typed reply, the way every role asks), in a temporary home:

    calls          N distinct requests, then the same N again, then one request asked twice at
                   once: `calls_made` (agent runs) vs `ideal_calls` (N + 1: repeats are cache hits,
                   twins share one run), and `model_requests_per_call` (requests the agent sent the
                   server per run; 1 is ideal)
    overhead       each sequential run's wall time minus the server's own latency (`--latency`, per
                   model request): the agent's start-up and shutdown, median and p90
    concurrency    N more distinct requests at concurrency C (default: the providers' default):
                   `efficiency` = (N × the median sequential call / C) / wall time (1.0 = perfect)

The last line printed is the JSON result (stderr has a summary).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from agent_server import AgentServer  # noqa: E402

from skillsleep.core.models.backends.base import BackendSettings, RetryPolicy  # noqa: E402
from skillsleep.core.models.ledger import Ledger  # noqa: E402
from skillsleep.core.models.llm import LLM  # noqa: E402
from skillsleep.core.models.replies import Reply  # noqa: E402
from skillsleep.core.models.store import Store  # noqa: E402
from skillsleep.core.shared.records import Message  # noqa: E402
from skillsleep.harnesses.agent_model import DEFAULT_CONCURRENCY, AgentModelBackend  # noqa: E402
from skillsleep.harnesses.claude_code.model import ClaudeCodeModel  # noqa: E402
from skillsleep.harnesses.codex.model import CodexModel  # noqa: E402

AGENTS: dict[str, type[AgentModelBackend]] = {"claude-code": ClaudeCodeModel, "codex": CodexModel}


class Verdict(Reply):
    answer: str


def _messages(text: str) -> list[Message]:
    return [Message(role="system", content="You grade answers. Reply with JSON."), Message(role="user", content=text)]


def _llm(cls: type[AgentModelBackend], server: AgentServer, home: Path, concurrency: int, db: Path | None) -> LLM:
    url = server.url + ("/v1" if cls is CodexModel else "")
    settings = BackendSettings(
        model="stub-model", base_url=url, concurrency=concurrency, retry=RetryPolicy(attempts=1, timeout_s=120)
    )
    backend = cls(settings)
    backend.env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    return LLM(backend, ledger=Ledger(), store=Store(db) if db else None)


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


async def _timed(llm: LLM, texts: list[str]) -> list[float]:
    """Sequential calls: each one's wall time."""
    times = []
    for text in texts:
        start = time.perf_counter()
        await llm.ask_model("judge", _messages(text), Verdict)
        times.append(time.perf_counter() - start)
    return times


async def bench_agent(cls: type[AgentModelBackend], calls: int, latency: float, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="skillsleep-bench-agent-") as tmp, AgentServer('{"answer": "ok"}') as srv:
        home = Path(tmp) / "home"
        home.mkdir()
        srv.delay_s = latency
        llm = _llm(cls, srv, home, 1, Path(tmp) / "cache.db")
        texts = [f"grade answer {i}" for i in range(calls)]
        sequential = await _timed(llm, texts)
        requests_per_call = len(srv.seen) / calls
        await _timed(llm, texts)  # repeats: cache hits
        await asyncio.gather(*(llm.ask_model("judge", _messages("twins"), Verdict) for _ in range(2)))
        overhead = [t - latency * requests_per_call for t in sequential]
        parallel = _llm(cls, srv, home, concurrency, None)
        start = time.perf_counter()
        await asyncio.gather(*(parallel.ask_model("judge", _messages(f"wide {i}"), Verdict) for i in range(calls)))
        wall = time.perf_counter() - start
        single = statistics.median(sequential)
        return {
            "calls_made": llm.ledger.calls_made,
            "ideal_calls": calls + 1,
            "cache_hits": llm.ledger.cache_hits,
            "model_requests_per_call": round(requests_per_call, 2),
            "call_s": {"median": round(single, 3), "p90": round(_p90(sequential), 3)},
            "api_latency_s": latency,
            "overhead_s": {"median": round(statistics.median(overhead), 3), "p90": round(_p90(overhead), 3)},
            "concurrency": concurrency,
            "peak_in_flight": srv.peak,
            "parallel_wall_s": round(wall, 3),
            "efficiency": round(calls * single / concurrency / wall, 2),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5, help="the fake API's own seconds per model request")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--agent", choices=list(AGENTS), action="append")
    args = parser.parse_args()
    result: dict[str, Any] = {"calls": args.calls, "cores": os.cpu_count()}
    for name in args.agent or list(AGENTS):
        row = asyncio.run(bench_agent(AGENTS[name], args.calls, args.latency, args.concurrency))
        result[name] = row
        print(
            f"{name}: {row['calls_made']} runs (ideal {row['ideal_calls']}), overhead median "
            f"{row['overhead_s']['median']} s p90 {row['overhead_s']['p90']} s over {args.latency} s of API; "
            f"{args.calls} calls at concurrency {args.concurrency}: {row['parallel_wall_s']} s, "
            f"efficiency {row['efficiency']}",
            file=sys.stderr,
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
