"""Does a skill change the embedded model's score on examples/answer-format?

Scores the example's seed SKILL.md and the seed plus one answer-line rule on the local
Qwen2.5-Coder-0.5B model (llama.cpp in-process through xllamacpp, temperature 0, fixed seed)
and prints one JSON line: {"seed": x, "with_rule": y, "n": n, ...}. `seed` and `with_rule` are
hard-pass rates on the held-out tasks (val + test) unless --split says otherwise.

Scoring uses the project's rule judge (`skillsleep.core.train.judges`: checks plus answer match, no
rubric); when that module cannot be imported, a small mirror of it in this file is used. The
JSON line says which.

    .venv/bin/python bench/example_skill_effect.py [--model /tmp/models/qwen0.5.gguf] [--split val,test]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from skillsleep.core.shared.records import Task
from skillsleep.core.train.tasks import load_tasks

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "answer-format"
RULE = "- End your reply with a final line `ANSWER: <answer>`."


def _normalize(text: str) -> str:
    text = text.replace("**", "").replace("`", "")
    return " ".join(text.split()).casefold().strip(" \t\n\"'.,;:!?*_")


def _number(text: str) -> float | None:
    found = re.findall(r"[-+]?\d[\d,]*(?:\.\d+)?", text)
    return float(found[-1].replace(",", "")) if found else None


def _score_here(task: Task, response: str) -> bool:
    """Fallback judge mirroring core/train/judges.py: checks, then the last `answer_pattern` match."""
    judge = task.judge
    lines = [ln.strip() for ln in response.splitlines() if ln.strip()]
    for check in judge.checks:
        if check.type == "last_line_regex" and not (lines and re.fullmatch(str(check.value), lines[-1])):
            return False
    if judge.answer is None:
        return True
    got = response
    if judge.answer_pattern:
        found = list(re.finditer(judge.answer_pattern, response, re.MULTILINE))
        if not found:
            return False
        got = found[-1].group(1)
    if judge.answer_match == "number":
        have = _number(got)
        return have is not None and have == _number(judge.answer)
    if judge.answer_match == "exact":
        return got.strip() == judge.answer.strip()
    return _normalize(got) == _normalize(judge.answer)


def _judge() -> tuple[str, Callable[[Task, str], bool]]:
    """The project's rule judge when it is importable, else the mirror above."""
    try:
        from skillsleep.core.shared.records import Run
        from skillsleep.core.train.answers import match_answer
        from skillsleep.core.train.checks import run_checks
    except ImportError:
        return "bench re-implementation", _score_here

    def real(task: Task, response: str) -> bool:
        parts = run_checks(task.judge, Run(response=response))
        answer = match_answer(task.judge, response)
        return all(p.passed for p in [*parts, *([answer] if answer else [])])

    return "skillsleep.core.train.judges", real


def _server(model: str, threads: int):
    import xllamacpp as x

    p = x.CommonParams()
    p.model.path = model
    p.n_ctx = 4096
    p.n_parallel = 1
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.sampling.temp = 0
    p.warmup = False
    return x.Server(p)


def _ask(server, skill: str, task: Task, max_tokens: int) -> str:
    user = task.prompt if not task.context else f"{task.context}\n\n{task.prompt}"
    r = server.handle_chat_completions(
        {
            "messages": [{"role": "system", "content": skill}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
            "seed": 0,
        }
    )
    return r["choices"][0]["message"]["content"] or ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="/tmp/models/qwen0.5.gguf")
    ap.add_argument("--split", default="val,test", help="comma-separated splits to score")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--verbose", action="store_true", help="print each reply's last line to stderr")
    args = ap.parse_args()

    splits = set(args.split.split(","))
    tasks = [t for t in load_tasks(EXAMPLE / "tasks.jsonl") if t.split in splits]
    seed = (EXAMPLE / "SKILL.md").read_text()
    skills = {"seed": seed, "with_rule": seed.rstrip("\n") + "\n" + RULE + "\n"}
    judge_name, score = _judge()
    server = _server(args.model, args.threads)
    out: dict[str, object] = {}
    start = time.perf_counter()
    for name, skill in skills.items():
        passed: dict[str, list[bool]] = {}
        for task in tasks:
            reply = _ask(server, skill, task, args.max_tokens)
            ok = score(task, reply)
            passed.setdefault(task.split or "", []).append(ok)
            if args.verbose:
                tail = (reply.strip().splitlines() or [""])[-1][:80]
                print(f"{name:9} {task.id:16} {'PASS' if ok else 'fail'}  {tail!r}", file=sys.stderr)
        flat = [ok for oks in passed.values() for ok in oks]
        out[name] = round(sum(flat) / len(flat), 3)
        out[f"{name}_by_split"] = {s: f"{sum(v)}/{len(v)}" for s, v in sorted(passed.items())}
    out["n"] = len(tasks)
    out["judge"] = judge_name
    out["wall_s"] = round(time.perf_counter() - start, 1)
    print(json.dumps({"seed": out.pop("seed"), "with_rule": out.pop("with_rule"), **out}))


if __name__ == "__main__":
    main()
