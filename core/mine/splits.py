"""The split of a night's tasks: train, val and test by cluster, stable across nights.

Near-duplicates (one `MinedTask.cluster`) never straddle splits; val and test hold real tasks
only (dreams are added to train later); a task keeps the split an earlier night gave it (by its
stable id, and the splits of every earlier task whose requests it holds, `MinedTask.earlier`),
and a task only ever moves towards test, so a val or test task never becomes training data.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from skillsleep.core.mine.mining import MinedTask
from skillsleep.core.shared.records import Split

PROTECTION: dict[str, int] = {"train": 0, "val": 1, "test": 2}  # a task only moves towards test


def split_tasks(
    tasks: list[MinedTask],
    previous: dict[str, Split],
    *,
    val_fraction: float = 0.3,
    test_fraction: float = 0.2,
) -> dict[str, Split]:
    """Task id → split, one split per cluster (near-duplicates never straddle splits).

    A task keeps the split an earlier night gave it; a cluster whose tasks (or the earlier tasks
    whose requests they hold) had several splits takes the most protected one (test > val >
    train), so held-out requests never become training data. New clusters fill the splits
    towards the wanted sizes in a stable order (a hash of the cluster). At least one cluster
    trains (only a new one can) and one validates; the test split needs three. Returns {} when
    there are fewer than two clusters, or no new cluster can train."""
    clusters: dict[str, list[MinedTask]] = {}
    for m in tasks:
        clusters.setdefault(m.cluster or m.task.id, []).append(m)
    n = len(clusters)
    if n < 2:
        return {}
    given: dict[str, Split] = {}
    for cid, members in clusters.items():
        earlier = [previous[t] for m in members for t in {m.task.id, *m.earlier} if t in previous]
        if earlier:
            given[cid] = max(earlier, key=lambda s: PROTECTION[s])
    fresh = sorted((c for c in clusters if c not in given), key=_hash)
    want = _wanted(n, val_fraction, test_fraction)
    for cid in fresh:
        have = Counter(given.values())
        deficit = {s: want[s] - have[s] for s in ("val", "test", "train")}
        best = max(deficit, key=lambda s: deficit[s])
        given[cid] = best if deficit[best] > 0 else "train"  # type: ignore[assignment]
    have = Counter(given.values())
    if not have["train"]:  # only a cluster new tonight may train: it was never held out
        movable = [c for c in fresh if given[c] == "test" or have["val"] >= 2]
        if movable:
            given[min(movable, key=lambda c: -have[given[c]])] = "train"
    elif not have["val"] and have["train"] >= 2:
        given[_stable_first(c for c, s in given.items() if s == "train")] = "val"
    have = Counter(given.values())
    if not have["train"] or not have["val"]:
        return {}
    return {m.task.id: given[cid] for cid, members in clusters.items() for m in members}


def _wanted(n: int, val_fraction: float, test_fraction: float) -> dict[str, int]:
    """How many of `n` clusters each split wants: val and train at least one, test from three."""
    want_test = max(1, round(n * test_fraction)) if n >= 3 and test_fraction > 0 else 0
    want_val = max(1, round(n * val_fraction))
    while want_val + want_test > n - 1:
        if want_test > 1 or (want_test == 1 and want_val == 1):
            want_test -= 1
        else:
            want_val -= 1
    return {"val": want_val, "test": want_test, "train": n - want_val - want_test}


def _hash(cid: str) -> str:
    return hashlib.sha256(cid.encode()).hexdigest()


def _stable_first(cids: Iterable[str]) -> str:
    return min(cids, key=_hash)


def unsplit(recurring: int, relevant: int, clusters: int, min_recurrence: int) -> str:
    """Why a night's tasks could not be split (`split_tasks` gave {}), and what to do."""
    if recurring == 0:
        return (
            f"no task recurred {min_recurrence}+ times in the harvested sessions yet; keep working "
            "and run again later (or lower --min-recurrence)"
        )
    if relevant == 0:
        return (
            f"none of the {recurring} recurring tasks is about this skill; pick another with --skill, or leave "
            "--skill empty to train the managed learned skill"
        )
    if clusters >= 2:
        return (
            f"all {clusters} distinct recurring task(s) for this skill were held out (val or test) by earlier "
            "nights, and a held-out task never becomes training data; a night needs a new one to train on — "
            "keep working and run again later"
        )
    return (
        f"only {clusters} distinct recurring task(s) for this skill; a night needs at least 2 (one to train "
        "on, one held out to judge the result) — keep working and run again later"
    )
