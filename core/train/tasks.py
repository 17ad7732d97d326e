"""Task files: load a JSONL task set, check it strictly, and assign train/val/test splits.

Format: one JSON object per line; blank lines and lines starting with `//` are skipped.

    {"id": "add-1", "prompt": "What is 17 + 25?", "split": "val", "context": "optional text",
     "judge": {"checks": [{"type": "last_line_regex", "value": "ANSWER: .+",
                           "feedback": "End with a final line `ANSWER: <answer>`."}],
               "answer": "42", "answer_pattern": "ANSWER:\\s*(.+)\\s*$", "answer_match": "number"}}

- `id` (string, unique in the file) and `prompt` (string) are required.
- `split` is optional ("train" | "val" | "test"); tasks without one are assigned by
  `assign_splits` from a hash of the run seed and the id.
- `context` is optional text shown to the agent with the prompt.
- `judge` says how the reply is scored (see `skillsleep.core.shared.records.Judge`): rule `checks`
  (each `{"type", "value", "case_sensitive", "feedback"}`), an expected `answer` compared by
  `answer_match` ("exact" | "normalized" | "number") after extracting it with `answer_pattern`
  (a regex with one group), and/or an LLM `rubric` (passes at `rubric_pass`, default 0.7).
- Shorthand: the judge keys (`checks`, `answer`, `answer_match`, `answer_pattern`, `rubric`,
  `rubric_pass`) may also sit at the top level of the task; they are moved into `judge`.
- Every task must be judgeable: at least one check, an answer, or a rubric.

Problems are reported together (up to five) with the file name and line number.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from skillsleep.core.document.textfile import read_text_file
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Check, CheckType, Split, Task
from skillsleep.core.shared.validation import describe_validation_error
from skillsleep.core.train.checks import check_problem
from skillsleep.core.train.judges import judge_problems

__all__ = ["SPLITS", "assign_splits", "by_split", "load_tasks"]

SPLITS: tuple[str, ...] = get_args(Split)
_JUDGE_KEYS = ("checks", "answer", "answer_match", "answer_pattern", "rubric", "rubric_pass")
_CHECK_TYPES: tuple[str, ...] = get_args(CheckType)
_MAX_REPORTED = 5
MAX_LINE_CHARS = 4 * 2**20  # about a million tokens: no model takes a longer task
_TASK_KEYS: tuple[str, ...] = (*Task.model_fields, *_JUDGE_KEYS)


def load_tasks(path: Path) -> list[Task]:
    """Read and validate a JSONL task file; raise ConfigError listing problems by line."""
    path = Path(path)
    text = read_text_file(path, "task file", instead="a JSONL task file (one JSON object per line)")
    problems: list[str] = []
    count = 0
    tasks: list[Task] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):  # not splitlines(): JSON text may hold U+2028
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        task, errors = _parse_line(stripped)
        if task is not None and task.id in first_line:
            errors = [f"duplicate id {task.id!r} (first on line {first_line[task.id]})"]
        count += len(errors)
        problems += [_clip(f"{path.name}:{lineno}: {e}") for e in errors[: _MAX_REPORTED - len(problems)]]
        if task is not None and not errors:
            first_line[task.id] = lineno
            tasks.append(task)
    if count:
        raise ConfigError(
            _whole_file_problem(text, path)
            or (
                f"{count} problem(s) in {path}:\n  "
                + "\n  ".join(problems)
                + (f"\n  … and {count - len(problems)} more" if count > len(problems) else "")
            )
        )
    if not tasks:
        raise ConfigError(f"{path} holds no tasks (one JSON object per line is expected)")
    return tasks


def _parse_line(line: str) -> tuple[Task | None, list[str]]:
    """One line → a Task, or the problems found in it."""
    if len(line) > MAX_LINE_CHARS:
        return None, [
            f"the line is {len(line):,} characters long; a task line may hold at most {MAX_LINE_CHARS:,} "
            "(more than a model's context): shorten its prompt or context"
        ]
    try:
        raw = json.loads(line)
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except json.JSONDecodeError as exc:
        return None, [f"invalid JSON ({exc.msg} at column {exc.colno})"]
    except RecursionError:
        return None, ["invalid JSON: nested too deeply"]
    except UnicodeEncodeError as exc:
        return None, [
            f"a string holds a lone surrogate ({exc.object[exc.start]!r}), which is no character; remove "
            "that \\u escape"
        ]
    except ValueError as exc:  # e.g. a number of more than 4300 digits
        return None, [f"invalid JSON ({exc})"]
    if not isinstance(raw, dict):
        hint = " (a task file has one task object per line, not an array)" if isinstance(raw, list) else ""
        return None, [f"expected a JSON object, got {type(raw).__name__}{hint}"]
    tid = raw.get("id")
    named = f"task {tid!r}: " if isinstance(tid, str) and tid.strip() else ""
    task, errors = _task(raw)
    return task, [named + e for e in errors]


def _task(raw: dict[str, Any]) -> tuple[Task | None, list[str]]:
    """A line's JSON object → a Task, or its problems."""
    errors = [f"missing {key!r}" for key in ("id", "prompt") if key not in raw]
    errors += [_unknown(key) for key in raw if key not in _TASK_KEYS]
    if errors:
        return None, errors
    lifted = _lift_shorthand(raw)
    if isinstance(lifted, str):
        return None, [lifted]
    errors = _check_problems(lifted.get("judge"))
    if errors:
        return None, errors
    try:
        task = Task.model_validate(lifted)
    except ValidationError as exc:
        return None, describe_validation_error(exc, section_style=False)
    errors = judge_problems(task.judge)
    if errors:
        return None, errors
    if not (task.judge.checks or task.judge.answer is not None or task.judge.rubric):
        return None, ["it cannot be judged: give it checks, an answer or a rubric"]
    return task, []


def _whole_file_problem(text: str, path: Path) -> str | None:
    """The one message for a file that is a single JSON value spread over lines (a .json file)."""
    if text.count("\n") < 2 or text.lstrip()[:1] not in ("[", "{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    kind = "array" if isinstance(value, list) else "object" if isinstance(value, dict) else None
    if kind is None:
        return None
    convert = "jq -c '.[]'" if kind == "array" else "jq -c ."
    return (
        f"{path} holds one JSON {kind} spread over several lines, but a task file is JSONL: one task object "
        f"per line. Convert it: {convert} {path.name} > tasks.jsonl"
    )


def _clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unknown(key: str) -> str:
    close = difflib.get_close_matches(key, _TASK_KEYS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(_TASK_KEYS)})"
    return f"unknown key {key!r}{hint}"


def _lift_shorthand(raw: dict[str, Any]) -> dict[str, Any] | str:
    """Move top-level judge keys into `judge`; a key given both ways is an error (a str)."""
    lifted = {k: raw[k] for k in _JUDGE_KEYS if k in raw}
    if not lifted:
        return raw
    judge = raw.get("judge", {})
    if not isinstance(judge, dict):
        return "'judge' must be an object"
    both = sorted(set(lifted) & set(judge))
    if both:
        return f"{', '.join(repr(k) for k in both)} given both at the top level and inside 'judge'"
    rest = {k: v for k, v in raw.items() if k not in lifted}
    return {**rest, "judge": {**judge, **lifted}}


def _check_problems(judge: Any) -> list[str]:
    """Each check of a raw judge validated on its own (the record, then what the scorer needs), so
    a problem is named `check N (type)` rather than by its place in the JSON."""
    if not isinstance(judge, dict) or not isinstance(judge.get("checks"), list):
        return []
    problems: list[str] = []
    for n, raw in enumerate(judge["checks"], 1):
        kind = raw.get("type") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and kind not in _CHECK_TYPES:
            problems.append(f"check {n}: unknown check type {kind!r}; valid: {', '.join(_CHECK_TYPES)}")
            continue
        label = f"check {n} ({kind})" if kind else f"check {n}"
        try:
            problem = check_problem(Check.model_validate(raw))
        except ValidationError as exc:
            problems += [f"{label}: {line}" for line in describe_validation_error(exc, section_style=False)]
            continue
        if problem:
            problems.append(f"{label}: {problem}")
    return problems


def assign_splits(tasks: list[Task], fractions: dict[str, float], seed: int) -> list[Task]:
    """Give every task without a split one, deterministically; returns new Task objects.

    A task's split depends only on (seed, id), so adding tasks never moves existing ones. With
    three or more tasks, train and val are made non-empty by moving auto-assigned tasks.
    """
    weights = _check_fractions(fractions)
    out: list[Task] = []
    auto: list[int] = []
    for task in tasks:
        if task.split is not None:
            out.append(task)
            continue
        auto.append(len(out))
        out.append(task.model_copy(update={"split": _pick(_unit(seed, task.id), weights)}))
    if len(out) >= 3:
        for needed in ("train", "val"):
            _fill(out, auto, needed, seed)
    return out


def _check_fractions(fractions: dict[str, float]) -> list[tuple[str, float]]:
    unknown = sorted(set(fractions) - set(SPLITS))
    if unknown:
        raise ConfigError(f"unknown split name(s) {', '.join(map(repr, unknown))}; use train, val, test")
    if any(v < 0 for v in fractions.values()) or sum(fractions.values()) <= 0:
        raise ConfigError(f"split fractions must be >= 0 with a positive sum, got {fractions}")
    total = sum(fractions.values())
    return [(s, fractions.get(s, 0.0) / total) for s in SPLITS]


def _unit(seed: int, task_id: str) -> float:
    """A number in [0, 1) fixed by the seed and the id."""
    digest = hashlib.sha256(f"{seed}\x00{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _pick(u: float, weights: list[tuple[str, float]]) -> str:
    acc = 0.0
    for split, w in weights:
        acc += w
        if u < acc:
            return split
    return next(s for s, w in reversed(weights) if w > 0)


def _fill(out: list[Task], auto: list[int], needed: str, seed: int) -> None:
    """Move one auto-assigned task into `needed` when it is empty, taken from the biggest split."""
    if any(t.split == needed for t in out):
        return
    protected = {"train", "val"} - {needed}
    sizes: dict[str | None, int] = {s: sum(1 for t in out if t.split == s) for s in SPLITS}
    donors = [i for i in auto if out[i].split not in protected or sizes[out[i].split] > 1]
    if not donors:
        return
    donor = max(donors, key=lambda i: (sizes[out[i].split], -_unit(seed, out[i].id)))
    out[donor] = out[donor].model_copy(update={"split": needed})


def by_split(tasks: Iterable[Task]) -> dict[str, list[Task]]:
    """Group tasks by split (every split present, possibly empty); unsplit tasks are an error."""
    groups: dict[str, list[Task]] = {s: [] for s in SPLITS}
    for task in tasks:
        if task.split is None:
            raise ConfigError(f"task {task.id!r} has no split; call assign_splits() first")
        groups[task.split].append(task)
    return groups
