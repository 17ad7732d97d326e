"""What a call reserves against the budget next to the prompt tokens a real tokenizer counts.

    .venv/bin/python bench/estimate.py

Sends five prompts of about 3,000 to 6,000 characters (English prose: the README; Python: core/
ledger.py; JSON lines: task files from ../shared/data/tasks; Chinese; emoji and accents), each
after a one-word system message, to the embedded Qwen2.5-Coder 0.5B (`local`, one reply token)
and prints, per prompt, the prompt tokens llama.cpp counted, the former estimate (3.5 characters
a token, plus 16) and its share of the count, and the bound `estimate_usage` now reserves (every
UTF-8 byte a token, plus the template's markers) as a multiple of the count, one line each on
stderr. The last line on stdout is one JSON object: `prompts` (name → chars, counted, former, bound
and the two ratios), `min_bound_over_count` (the cap holds while it is at least 1) and
`max_count_over_former` (above 1: the former estimate let a cap be passed). Needs the `local`
extra; about two minutes on two cores.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from pathlib import Path

from skillsleep.core.models import ledger
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.registry import create_backend
from skillsleep.core.models.llm import estimate_usage
from skillsleep.core.shared.records import CompletionRequest, Message

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT.parent / "shared" / "data" / "tasks"
MODEL = "qwen2.5-coder-0.5b"


def samples() -> dict[str, str]:
    tasks = "".join(p.read_text(encoding="utf-8") for p in sorted(TASKS.rglob("*.jsonl"))[:3])
    return {
        "english prose (README)": (ROOT / "README.md").read_text(encoding="utf-8")[:6000],
        "python (core/models/ledger.py)": inspect.getsource(ledger)[:6000],
        "json lines (task files)": tasks[:6000],
        "chinese": "技能文档像权重一样被训练，而模型保持冻结。每晚收集用户的会话记录，挖掘重复的任务，训练，在保留的任务上把关。"
        * 40,
        "emoji and accents": "café 🙂 naïve 🚀 über 😀 " * 150,
    }


def former_estimate(request: CompletionRequest) -> int:
    return int(sum(len(m.content) for m in request.messages) / 3.5) + 16


async def main() -> None:
    backend = create_backend(f"local:{MODEL}", BackendSettings(model=MODEL, concurrency=1))
    rows: dict[str, dict[str, float]] = {}
    try:
        for name, text in samples().items():
            messages = [Message(role="system", content="Answer."), Message(role="user", content=text)]
            request = CompletionRequest(model=MODEL, messages=messages, max_tokens=1)
            counted = (await backend.complete(request)).usage.input_tokens
            former, bound = former_estimate(request), estimate_usage(request).input_tokens
            rows[name] = {
                "chars": len(text),
                "counted": counted,
                "former": former,
                "bound": bound,
                "count_over_former": round(counted / former, 2),
                "bound_over_count": round(bound / counted, 2),
            }
            print(
                f"{name:26s} chars {len(text):5d}  counted {counted:5d}  former {former:5d} "
                f"(count/former {counted / former:.2f})  bound {bound:5d} (bound/count {bound / counted:.2f})",
                file=sys.stderr,
            )
    finally:
        await backend.aclose()
    print(
        json.dumps(
            {
                "prompts": rows,
                "min_bound_over_count": min(r["bound_over_count"] for r in rows.values()),
                "max_count_over_former": max(r["count_over_former"] for r in rows.values()),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
