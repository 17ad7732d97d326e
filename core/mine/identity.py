"""Task identity across nights: a mined task keeps the id an earlier night gave it.

A task's id is never read off one member's wording. Each night the skill's memory keeps, per
task it split, a `TaskIdentity`: the id and the normalized requests (`similarity.normalize`)
that made the task, most frequent first (up to KEYS_KEPT). Tonight's tasks (final groups of
normalized requests with their counts) are matched against them:

- a tonight's task and an earlier one match when they share a normalized request, or when one
  of tonight's requests is as close to one of the earlier task's as two requests of one task
  are (`GROUP_THRESHOLD`);
- the strongest matches are taken first (instances tonight whose request the earlier task
  held, then the best similarity), one earlier task per tonight's task and the other way round:
  the winner keeps the earlier id;
- a tonight's task that matches no earlier one gets a new id from all of its requests
  (`similarity.task_id`, a hash of the sorted set), the same for the same set night after night;
- every earlier task a tonight's task matched is listed in `Identified.earlier` (its own id
  first when it kept one): the splitter gives it the most protected of their splits, so
  requests that were held out (val, test) never come back as training data, also when an
  earlier task split in two or two of them merged.

Memories written before identities were kept only know split ids, which were
`task_id(representative request)`: a request whose hash is such an id matches that task
(`Known.legacy`), so old ids keep their split.
"""

from __future__ import annotations

from collections import Counter

from pydantic import Field

from skillsleep.core.mine.similarity import GROUP_THRESHOLD, Features, feature_similarity, features, task_id
from skillsleep.core.shared.records import Record

KEYS_KEPT = 50  # normalized requests an identity remembers (most frequent first)
KEYS_COMPARED = 20  # of tonight's task's requests compared by similarity (most frequent first)


class TaskIdentity(Record):
    """A task an earlier night split: its id and the normalized requests that made it."""

    id: str
    keys: list[str] = Field(default_factory=list)  # most frequent first, up to KEYS_KEPT
    first_night: int = 0
    last_night: int = 0


class Known(Record):
    """What earlier nights know of their tasks."""

    tasks: list[TaskIdentity] = Field(default_factory=list)
    legacy: list[str] = Field(default_factory=list)  # split ids without an identity (older memories)


class Identified(Record):
    """Tonight's task's id and the earlier tasks whose requests it holds (its own id first)."""

    id: str
    earlier: list[str] = Field(default_factory=list)


def identify(groups: list[Counter[str]], known: Known) -> list[Identified]:
    """An id for each group of normalized requests (with their counts), stable across nights."""
    index = _Index(known)
    matches = [index.matches(keys) for keys in groups]
    pairs = sorted((-shared, -sim, n, tid) for n, found in enumerate(matches) for tid, (shared, sim) in found.items())
    given: dict[int, str] = {}
    for _, _, n, tid in pairs:
        if n not in given and tid not in given.values():  # one earlier task per task, and back
            given[n] = tid
    taken = {t.id for t in known.tasks} | set(known.legacy) | set(given.values())
    out: list[Identified] = []
    for n, keys in enumerate(groups):
        tid = given.get(n) or _new_id(keys, taken)
        taken.add(tid)
        others = sorted(t for t in matches[n] if t != tid)
        out.append(Identified(id=tid, earlier=[tid, *others] if tid in matches[n] else others))
    return out


def remembered(known: list[TaskIdentity], tonight: list[TaskIdentity], night: int) -> list[TaskIdentity]:
    """The identities to keep after `night`: tonight's tasks (their requests first, then the ones
    remembered before) and every earlier one."""
    by_id = {t.id: t for t in known}
    for task in tonight:
        before = by_id.get(task.id)
        keys = list(dict.fromkeys([*task.keys, *(before.keys if before else [])]))[:KEYS_KEPT]
        first = before.first_night if before and before.first_night else night
        by_id[task.id] = TaskIdentity(id=task.id, keys=keys, first_night=first, last_night=night)
    return sorted(by_id.values(), key=lambda t: (t.first_night, t.id))


class _Index:
    """Earlier tasks by request (exact) and by word (similarity), built once a night."""

    def __init__(self, known: Known) -> None:
        self.owners: dict[str, list[str]] = {}  # normalized request → earlier task ids
        for task in known.tasks:
            for key in dict.fromkeys(task.keys):
                self.owners.setdefault(key, []).append(task.id)
        self.legacy = set(known.legacy)
        self.by_word: dict[str, list[tuple[str, Features]]] = {}  # word → (task id, features of its request)
        for task in known.tasks:
            for key in dict.fromkeys(task.keys):
                feats = features(key)
                for word in feats[0]:
                    self.by_word.setdefault(word, []).append((task.id, feats))

    def matches(self, keys: Counter[str]) -> dict[str, tuple[int, float]]:
        """Earlier task id → (tonight's instances whose request it held, best similarity), for
        every earlier task this group of requests matches."""
        shared: Counter[str] = Counter()
        for key, count in keys.items():
            old = task_id(key)
            for tid in {*self.owners.get(key, ()), *([old] if old in self.legacy else [])}:
                shared[tid] += count
        out = {tid: (n, 1.0) for tid, n in shared.items()}
        for key, _ in keys.most_common(KEYS_COMPARED):
            ours = features(key)
            for word in ours[0]:
                for tid, theirs in self.by_word.get(word, ()):
                    if tid not in shared and (s := feature_similarity(ours, theirs)) >= GROUP_THRESHOLD:
                        out[tid] = (0, max(s, out.get(tid, (0, 0.0))[1]))
        return out


def _new_id(keys: Counter[str], taken: set[str]) -> str:
    """The id of a task no earlier night knew: from the set of all its requests."""
    tid, salt = task_id(*keys), 0
    while tid in taken:  # a hash collision with another task: never share an id
        salt += 1
        tid = task_id(*keys, f"#{salt}")
    return tid
