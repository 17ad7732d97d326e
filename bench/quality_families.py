"""The quality benchmark's task families (bench/quality/<family>/): how each is read, how its
fixed splits were drawn, and its tasks built from ../shared/data/tasks.

A family's `draw` is the documented rule its splits came from: the source's items in file order,
kept when their IFEval instructions are all among `instructions` (IFEval-format sources; every
item otherwise) and not in the splits of the families named in `excluding`; then
`random.Random(seed).sample(kept, 24)`: the first 8 are train, the next 6 val, the last 10 test.
`draw_splits` recomputes it, so a test holds family.json to its rule. A family marked `held_out`
is kept for the end (issue 27): the bench runs it only when named (`--families all` or by name),
so its test split is scored once, after development on the other families.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from skillsleep.core.shared.records import Judge, Task

REPO = Path(__file__).resolve().parents[1]
FAMILIES = REPO / "bench" / "quality"
DATA = REPO.parent / "shared" / "data" / "tasks"
SPLIT_SIZES = {"train": 8, "val": 6, "test": 10}


class Draw(BaseModel):
    """The seeded rule a family's splits were drawn by (see the module's docstring)."""

    seed: int
    instructions: list[str] = Field(default_factory=list)  # IFEval instruction ids allowed (empty: any)
    excluding: list[str] = Field(default_factory=list)  # families whose split keys are left out


class Family(BaseModel):
    """One task family: where its tasks come from, its fixed splits and its judge."""

    name: str
    about: str
    source: str  # relative to ../shared/data/tasks
    provenance: str = ""  # the source's PROVENANCE file, relative to ../shared/data/tasks
    # "ifeval" (JSONL keyed by `key`), "examples" (BIG-bench / BBH JSON, by index) or "gsm8k"
    # (JSONL {question, answer}, by line; the target is the number after ####)
    format: str
    prompt: str  # the task prompt, with {input}
    max_tokens: int
    held_out: bool = False  # kept for the end: run only when named
    draw: Draw | None = None  # the rule the splits were drawn by (None: chosen before issue 27)
    splits: dict[str, list[int]]
    judge: dict[str, Any]  # a Judge, with {target} in answer

    @property
    def seed_skill(self) -> Path:
        return FAMILIES / self.name / "seed.md"

    @property
    def reference_skill(self) -> Path:
        return FAMILIES / self.name / "reference.md"


def family_names(*, held_out: bool = True) -> list[str]:
    """The families under bench/quality/, in name order with those kept for the end last (a run of
    them all scores those at its end); without `held_out`, those are left out."""
    names = sorted(p.name for p in FAMILIES.iterdir() if (p / "family.json").is_file())
    kept = {n: load_family(n).held_out for n in names}
    return sorted((n for n in names if held_out or not kept[n]), key=kept.__getitem__)


def load_family(name: str) -> Family:
    path = FAMILIES / name / "family.json"
    if not path.is_file():
        sys.exit(f"no task family {name!r}; the families are: {', '.join(family_names())}")
    try:
        return Family(name=name, **json.loads(path.read_text()))
    except (ValueError, TypeError) as exc:  # bad JSON, or fields pydantic refuses
        sys.exit(
            f"{path} is not a usable family: {exc}\nfix it; its fields are described in docs/benchmarks.md "
            "(the quality benchmark) and typed in bench/quality_families.py (Family)"
        )


def _source(family: Family) -> Path:
    source = DATA / family.source
    if not source.is_file():
        sys.exit(
            f"{source} is missing: the quality bench reads its tasks from ../shared/data/tasks "
            "(beside the repository; see docs/benchmarks.md for what goes there)"
        )
    return source


def read_items(family: Family) -> dict[int, tuple[str, str, list[str]]]:
    """The source's items by key, in file order: (input text, target, IFEval instruction ids)."""
    text = _source(family).read_text()
    if family.format == "ifeval":
        rows = map(json.loads, text.splitlines())
        return {int(row["key"]): (row["prompt"], "", row["instruction_id_list"]) for row in rows}
    if family.format == "gsm8k":
        rows = map(json.loads, text.splitlines())
        return {i: (row["question"], row["answer"].rsplit("####", 1)[-1].strip(), []) for i, row in enumerate(rows)}
    if family.format == "examples":
        return {i: (ex["input"], str(ex["target"]), []) for i, ex in enumerate(json.loads(text)["examples"])}
    sys.exit(f"family {family.name!r}: unknown format {family.format!r}; use 'ifeval', 'examples' or 'gsm8k'")


def draw_splits(family: Family) -> dict[str, list[int]]:
    """The splits `family.draw` gives (see the module's docstring)."""
    if family.draw is None:
        sys.exit(f'family {family.name!r} has no draw rule; give it one as "draw": {{"seed": 27}}')
    allowed, taken = set(family.draw.instructions), set()
    for other in family.draw.excluding:
        taken |= {k for keys in load_family(other).splits.values() for k in keys}
    kept = [
        key
        for key, (_, _, ids) in read_items(family).items()
        if key not in taken and (not allowed or set(ids) <= allowed)
    ]
    drawn = random.Random(family.draw.seed).sample(kept, sum(SPLIT_SIZES.values()))
    splits, at = {}, 0
    for split, size in SPLIT_SIZES.items():
        splits[split], at = drawn[at : at + size], at + size
    return splits


def build_tasks(family: Family) -> list[Task]:
    """The family's tasks with their fixed splits, read from ../shared/data/tasks."""
    items = read_items(family)
    missing = [k for keys in family.splits.values() for k in keys if k not in items]
    if missing:
        sys.exit(
            f"family {family.name!r}: the split keys {missing} are not items of {family.source}; "
            "draw the splits again (draw_splits in bench/quality_families.py) or fix them in family.json"
        )
    tasks = []
    for split, keys in family.splits.items():
        for key in keys:
            text, target, _ = items[key]
            judge = dict(family.judge)
            if "answer" in judge:
                judge["answer"] = judge["answer"].replace("{target}", target)
            tasks.append(
                Task(
                    id=f"{family.name}-{key}",
                    prompt=family.prompt.replace("{input}", text),
                    judge=Judge.model_validate(judge),
                    split=split,  # type: ignore[arg-type]  # train / val / test from family.json
                )
            )
    return tasks


def listing() -> str:
    """One line per family: its name, whether it is kept for the end, its source and what it is about."""
    lines = []
    for name in family_names():
        family = load_family(name)
        mark = "held out (run at the end)" if family.held_out else "developed on"
        lines.append(f"{name:14} {mark:26} {family.source}: {family.about.split('. ')[0].rstrip('.')}.")
    return "\n".join(lines)
