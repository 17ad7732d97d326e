"""Mine tasks (sleep, step 2): the requests a user keeps giving the agent → ranked, judged Tasks.

    sessions (read one at a time) → instances (intent + outcome + evidence; `intents`) → lexical
    groups → optimizer merge of the plausible paraphrases only (one call, none when no groups are
    plausibly one task; `grouping`) → ids kept from earlier nights (`identity`) → tasks ranked by
    recurrence and failure → one judge call per kept task (`judge_writing`)

Clusters (for the splitter). Tasks whose texts are near each other at the looser
RELATED_THRESHOLD (e.g. "Reply with the word hello" / "... goodbye") are distinct tasks but share
a `cluster`: near-duplicates of a training task must not reach val/test, so keep every cluster in
one split (`MineResult.clusters`, `near_duplicates()`). Tasks holding requests of one earlier
night's task (it split in two) share a cluster too.

Tasks and ranking. A task is a final group. Its representative wording is the most frequent
normalized text (ties: shorter, then alphabetical); `Task.prompt` is the latest instance with that
wording, `Task.workdir` its session's cwd, `provenance` every "harness:session_id". The id is the
one an earlier night gave the task (`known`, matched by shared or near-identical requests), else
"mine-" + a hash of the set of its normalized requests (`identity`): never one member's wording,
so new instances, paraphrases and the order of the sessions leave it alone; `MinedTask.earlier`
names every earlier task whose requests it holds (the splitter keeps their most protected
split). recurrence = instances; tasks with fewer
than `min_recurrence` are kept but rank after every recurrent one. Within a tier,
priority = recurrence × (1 + failure rate) (failures / instances; unknown is not failure), then
distinct sessions, then id. `max_tasks` cuts the ranked list (before any judge call). With
`llm=None` only the lexical pass runs and every task keeps DEFAULT_RUBRIC.

Safety. Sessions are redacted at harvest; every text taken from them here passes through a
`Redactor` again (idempotent, cheap) before it reaches a task or a prompt. Every transcript text
in a prompt is fenced with `prompts.data_block` (fence markers inside it are defused) and the
prompts say it is data, never instructions. A reply that cannot be used is recorded in
`MineResult.problems` and never crashes mining; `BackendError` and `BudgetExceeded` propagate as in
every other stage. Optimizer calls are made in the role MINE_ROLE ("mine"), so the ledger shows
what mining cost.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from skillsleep.core.mine.grouping import Group, UnionFind, lexical, paraphrases
from skillsleep.core.mine.identity import Identified, Known, identify
from skillsleep.core.mine.intents import Evidence, Instance, Intake, Outcomes, extract_instances
from skillsleep.core.mine.judge_writing import DEFAULT_RUBRIC, write_judge
from skillsleep.core.models.llm import LLM
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.records import Judge, Record, Role, Task, UnusableReply
from skillsleep.core.shared.session import Session

MINE_ROLE: Role = "mine"  # the ledger's role of mining's optimizer calls (grouping, judge writing)
TASK_EVIDENCE = 20


class MinedTask(Record):
    """A task and what mining knows about it: how often, how it went, what the user corrected."""

    task: Task
    cluster: str  # tasks sharing a cluster are near-duplicates: keep them in one split
    recurrence: int  # instances
    sessions: int  # distinct sessions
    recurrent: bool  # recurrence >= min_recurrence
    priority: float
    outcomes: Outcomes
    instances: list[Instance]
    evidence: list[Evidence] = Field(default_factory=list)  # distinct, up to TASK_EVIDENCE
    wordings: list[str] = Field(default_factory=list)  # distinct requests, most frequent first
    merged_from: int = 1  # lexical groups the optimizer merged into this task
    earlier: list[str] = Field(default_factory=list)  # earlier nights' tasks whose requests it holds
    judge_source: Literal["optimizer", "default"] = "default"
    dropped_checks: list[str] = Field(default_factory=list)

    def keys(self) -> list[str]:
        """The task's normalized requests, most frequent first (what its identity remembers)."""
        counts = Counter(i.key for i in self.instances)
        return sorted(counts, key=lambda k: (-counts[k], k))


class MineResult(Record):
    """Ranked tasks, the clusters the splitter must respect, and what happened on the way."""

    tasks: list[MinedTask] = Field(default_factory=list)
    clusters: dict[str, list[str]] = Field(default_factory=dict)  # cluster id → task ids
    intake: Intake = Field(default_factory=Intake)
    groups: int = 0  # lexical groups
    asked: int = 0  # lexical groups shown to the optimizer's paraphrase merge (0: no call)
    merged: int = 0  # lexical groups merged into another by the optimizer
    cut: int = 0  # tasks beyond max_tasks
    dropped_checks: int = 0
    problems: list[UnusableReply] = Field(default_factory=list)

    def cluster_of(self, task_id: str) -> str:
        for mined in self.tasks:
            if mined.task.id == task_id:
                return mined.cluster
        raise KeyError(f"no mined task {task_id!r}; known: {', '.join(m.task.id for m in self.tasks) or 'none'}")

    def near_duplicates(self, task_id: str) -> list[str]:
        """The other tasks in `task_id`'s cluster (keep them in the same split)."""
        return [t for t in self.clusters[self.cluster_of(task_id)] if t != task_id]


class Judged(Record):
    """What writing the judges of some tasks dropped and could not use."""

    dropped_checks: int = 0
    problems: list[UnusableReply] = Field(default_factory=list)


async def mine(
    sessions: Iterable[Session],
    *,
    llm: LLM | None = None,
    min_recurrence: int = 2,
    max_tasks: int | None = 50,
    redactor: Redactor | None = None,
    judges: bool = True,
    known: Known | None = None,
) -> MineResult:
    """Mine the recurring tasks in `sessions`: ranked, judged, with clusters for the splitter.

    `known`: the tasks earlier nights split (their ids are kept, `identity`). `judges=False`
    leaves every task with the default rubric (judge the ones you keep later with `judge_tasks`,
    which costs one optimizer call per task)."""
    if min_recurrence < 1:
        raise ValueError(f"min_recurrence must be at least 1, got {min_recurrence}")
    if max_tasks is not None and max_tasks < 0:
        raise ValueError(f"max_tasks must be >= 0 or None (no limit), got {max_tasks}")
    instances, intake = extract_instances(sessions, redactor=redactor)
    result = MineResult(intake=intake)
    if not instances:
        return result
    groups, group_of_key, related = _lexical_groups(instances)
    result.groups = len(groups)
    final = UnionFind(len(groups))
    if llm is not None and len(groups) >= 2:
        asked = await paraphrases(llm, groups)
        result.asked, result.problems = asked.asked, asked.problems
        for members in asked.merges:
            for other in members[1:]:
                result.merged += final.union(members[0], other)

    merged = [(Group([i for m in members for i in groups[m].instances]), members) for members in final.groups()]
    ids = identify([Counter(i.key for i in g.instances) for g, _ in merged], known or Known())
    ranked = [
        (_mined(g, who, len(members), min_recurrence), members) for (g, members), who in zip(merged, ids, strict=True)
    ]
    ranked.sort(key=lambda r: (not r[0].recurrent, -r[0].priority, -r[0].sessions, r[0].task.id))
    kept = ranked if max_tasks is None else ranked[:max_tasks]
    result.cut = len(ranked) - len(kept)

    # Clusters: tasks joined by a related pair of wordings, or holding requests of one earlier task.
    position = {m: n for n, (_, members) in enumerate(ranked) for m in members}
    links = [(position[group_of_key[a]], position[group_of_key[b]]) for a, b in related]
    links += _shared_ancestry([m for m, _ in ranked])
    result.clusters = _clusters([m for m, _ in kept], len(ranked), links)

    result.tasks = [m for m, _ in kept]
    if llm is not None and judges:
        judged = await judge_tasks(llm, result.tasks)
        result.dropped_checks += judged.dropped_checks
        result.problems += judged.problems
    return result


def _shared_ancestry(ranked: list[MinedTask]) -> list[tuple[int, int]]:
    """Links between tasks (positions) holding requests of one earlier task: one split for them."""
    holder: dict[str, int] = {}
    links: list[tuple[int, int]] = []
    for n, mined in enumerate(ranked):
        for earlier in mined.earlier:
            if earlier in holder:
                links.append((holder[earlier], n))
            holder.setdefault(earlier, n)
    return links


def _lexical_groups(instances: list[Instance]) -> tuple[list[Group], dict[str, int], list[tuple[str, str]]]:
    """The lexical groups, largest first; each normalized text's group; related pairs of texts."""
    key_counts = Counter(i.key for i in instances)
    keys = sorted(key_counts, key=lambda k: (-key_counts[k], k))
    members_of, related = lexical(keys)
    by_key: dict[str, list[Instance]] = {}
    for instance in instances:
        by_key.setdefault(instance.key, []).append(instance)
    groups = [Group([i for k in members for i in by_key[keys[k]]]) for members in members_of]
    groups.sort(key=lambda g: (-g.size, g.key))
    group_of_key = {k: n for n, g in enumerate(groups) for k in g.keys}
    return groups, group_of_key, [(keys[a], keys[b]) for a, b in related]


async def judge_tasks(llm: LLM, tasks: list[MinedTask]) -> Judged:
    """Give each task a judge written by the optimizer (concurrently). A reply that cannot be read
    leaves the default rubric and is named in the result's `problems`."""
    written = await asyncio.gather(
        *(write_judge(llm, m.task.id, m.wordings, m.evidence, m.outcomes, m.instances) for m in tasks)
    )
    judged = Judged()
    for mined_task, w in zip(tasks, written, strict=True):
        mined_task.task.judge = w.judge
        mined_task.judge_source = w.source
        mined_task.dropped_checks = w.dropped
        judged.dropped_checks += len(w.dropped)
        judged.problems += w.problems
    return judged


def _clusters(kept: list[MinedTask], total: int, links: list[tuple[int, int]]) -> dict[str, list[str]]:
    """Join ranked tasks (positions 0..total-1, `kept` first) along `links`; set each kept
    task's cluster and return cluster id → kept task ids."""
    uf = UnionFind(total)
    for a, b in links:
        uf.union(a, b)
    by_root: dict[int, list[str]] = {}
    for n, mined in enumerate(kept):
        by_root.setdefault(uf.find(n), []).append(mined.task.id)
    names = {
        root: "cluster-" + hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:12]
        for root, ids in by_root.items()
    }
    for n, mined in enumerate(kept):
        mined.cluster = names[uf.find(n)]
    return {names[root]: ids for root, ids in by_root.items()}


def _mined(group: Group, who: Identified, merged_from: int, min_recurrence: int) -> MinedTask:
    outcomes = Outcomes.model_validate(Counter(i.outcome for i in group.instances))
    evidence: list[Evidence] = []
    for instance in sorted(group.instances, key=lambda i: (i.when, i.session_id), reverse=True):
        for e in instance.evidence:
            if e not in evidence and len(evidence) < TASK_EVIDENCE:
                evidence.append(e)
    texts = Counter(i.prompt for i in group.instances)
    rep = group.representative.prompt
    wordings = [rep] + [t for t in sorted(texts, key=lambda t: (-texts[t], t)) if t != rep]
    sources = list(dict.fromkeys(i.source for i in sorted(group.instances, key=lambda i: (i.when, i.source))))
    task = Task(
        id=who.id,
        prompt=rep,
        workdir=group.representative.project,
        judge=Judge(rubric=DEFAULT_RUBRIC),
        origin="real",
        provenance=sources,
    )
    recurrence = group.size
    return MinedTask(
        task=task,
        cluster="",
        recurrence=recurrence,
        sessions=len(sources),
        recurrent=recurrence >= min_recurrence,
        priority=recurrence * (1 + outcomes.failure_rate),
        outcomes=outcomes,
        instances=sorted(group.instances, key=lambda i: (i.when, i.source)),
        evidence=evidence,
        wordings=wordings,
        merged_from=merged_from,
        earlier=who.earlier,
    )
