"""The split of a night's tasks: train, val and test by cluster, stable across nights.

Near-duplicates (one `MinedTask.cluster`) never straddle splits; val and test hold real tasks
only (dreams are added to train later); a task keeps the split an earlier night gave it, and a
task only ever moves towards test, so a test task never becomes training data.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from skillsleep.core.mine import MinedTask
from skillsleep.core.records import Split

_PROTECTION: dict[str, int] = {"train": 0, "val": 1, "test": 2}  # a task only moves towards test


def split_tasks(
    tasks: list[MinedTask],
    previous: dict[str, Split],
    *,
    val_fraction: float = 0.3,
    test_fraction: float = 0.2,
) -> dict[str, Split]:
    """Task id → split, one split per cluster (near-duplicates never straddle splits).

    A task keeps the split an earlier night gave it; a cluster with members in several splits
    takes the most protected one (test > val > train), so a test task never becomes training
    data. New clusters fill the splits towards the wanted sizes in a stable order (a hash of
    the cluster). At least one cluster trains and one validates; the test split needs three.
    Returns {} when there are fewer than two clusters."""
    clusters: dict[str, list[str]] = {}
    for m in tasks:
        clusters.setdefault(m.cluster or m.task.id, []).append(m.task.id)
    n = len(clusters)
    if n < 2:
        return {}
    want_test = max(1, round(n * test_fraction)) if n >= 3 and test_fraction > 0 else 0
    want_val = max(1, round(n * val_fraction))
    while want_val + want_test > n - 1:
        if want_test > 1 or (want_test == 1 and want_val == 1):
            want_test -= 1
        else:
            want_val -= 1
    want = {"val": want_val, "test": want_test, "train": n - want_val - want_test}
    given: dict[str, Split] = {}
    for cid, ids in clusters.items():
        earlier = [previous[t] for t in ids if t in previous]
        if earlier:
            given[cid] = max(earlier, key=lambda s: _PROTECTION[s])
    for cid in sorted((c for c in clusters if c not in given), key=lambda c: hashlib.sha256(c.encode()).hexdigest()):
        have = Counter(given.values())
        deficit = {s: want[s] - have[s] for s in ("val", "test", "train")}
        best = max(deficit, key=lambda s: deficit[s])
        given[cid] = best if deficit[best] > 0 else "train"  # type: ignore[assignment]
    have = Counter(given.values())
    if not have["train"] and have["val"] >= 2:  # validation tasks were never shown to the reflection
        given[_stable_first(c for c, s in given.items() if s == "val")] = "train"
    elif not have["val"] and have["train"] >= 2:
        given[_stable_first(c for c, s in given.items() if s == "train")] = "val"
    have = Counter(given.values())
    if not have["train"] or not have["val"]:
        return {}
    return {t: given[cid] for cid, ids in clusters.items() for t in ids}


def _stable_first(cids: Iterable[str]) -> str:
    return min(cids, key=lambda c: hashlib.sha256(c.encode()).hexdigest())
