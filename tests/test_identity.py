"""`core.mine.identity`: a task keeps the id an earlier night gave it, whatever its wording or order;
the skill's memory keeps identities and protects the splits of held-out requests."""

from __future__ import annotations

from collections import Counter

from skillsleep.core.mine.identity import KEYS_KEPT, Known, TaskIdentity, identify, remembered
from skillsleep.core.mine.intents import Instance, Outcomes
from skillsleep.core.mine.mining import MinedTask
from skillsleep.core.mine.similarity import normalize, task_id
from skillsleep.core.night.nights import SkillMemory
from skillsleep.core.shared.records import Task

LOG = normalize("summarize the git log since yesterday")
LOG_PARAPHRASE = normalize("give me a summary of yesterday's commits")
TESTS = normalize("fix the failing test in tests/a.py")
REPORT = normalize("write the weekly report")


def group(**counts: int) -> Counter[str]:
    names = {"log": LOG, "paraphrase": LOG_PARAPHRASE, "tests": TESTS, "report": REPORT}
    return Counter({names[k]: n for k, n in counts.items()})


def test_a_new_task_is_named_by_all_its_requests_in_any_order() -> None:
    (a,) = identify([group(log=2, paraphrase=3)], Known())
    (b,) = identify([Counter({LOG_PARAPHRASE: 1, LOG: 9})], Known())
    assert a.id == b.id == task_id(LOG_PARAPHRASE, LOG) and a.earlier == []
    assert identify([group(log=1)], Known())[0].id == task_id(LOG)  # one request: the id older versions gave


def test_new_instances_and_a_paraphrase_keep_the_earlier_id() -> None:
    known = Known(tasks=[TaskIdentity(id="mine-log", keys=[LOG])])
    (same,) = identify([group(log=1, paraphrase=7)], known)  # the paraphrase is now the most frequent
    assert same.id == "mine-log" and same.earlier == ["mine-log"]
    near = normalize("summarize the git log since yesterday please")  # no shared request, near-identical
    assert identify([Counter({near: 1})], known)[0].id == "mine-log"
    assert identify([group(report=3)], known)[0].earlier == []  # another task


def test_an_earlier_task_split_in_two_keeps_its_id_on_the_larger_part_and_names_it_on_both() -> None:
    known = Known(tasks=[TaskIdentity(id="mine-log", keys=[LOG, LOG_PARAPHRASE])])
    small, large = identify([group(paraphrase=1), group(log=4)], known)
    assert large.id == "mine-log" and large.earlier == ["mine-log"]
    assert small.id != "mine-log" and small.earlier == ["mine-log"]


def test_two_earlier_tasks_merged_keep_the_stronger_id_and_name_both() -> None:
    known = Known(tasks=[TaskIdentity(id="mine-a", keys=[LOG]), TaskIdentity(id="mine-b", keys=[LOG_PARAPHRASE])])
    (merged,) = identify([group(log=1, paraphrase=2)], known)
    assert merged.id == "mine-b" and merged.earlier == ["mine-b", "mine-a"]


def test_ids_of_a_memory_written_before_identities_are_kept() -> None:
    memory = SkillMemory(skill_path="s", splits={task_id(TESTS): "test", task_id(LOG): "train"})
    known = memory.known()
    assert sorted(known.legacy) == sorted(memory.splits) and known.tasks == []
    tests, log = identify([group(tests=2, report=1), group(log=3)], known)
    assert tests.id == task_id(TESTS) and log.id == task_id(LOG)


def mined(tid: str, earlier: list[str], *keys: str) -> MinedTask:
    instances = [Instance(harness="chat", session_id=f"s{n}", prompt=k, key=k) for n, k in enumerate(keys)]
    return MinedTask(
        task=Task(id=tid, prompt=keys[0]),
        cluster=tid,
        recurrence=len(keys),
        sessions=len(keys),
        recurrent=True,
        priority=1.0,
        outcomes=Outcomes(),
        instances=instances,
        earlier=earlier,
    )


def test_the_memory_learns_identities_and_an_absorbed_task_takes_the_more_protected_split() -> None:
    memory = SkillMemory(skill_path="s", splits={"mine-old-test": "test", "mine-old-train": "train"})
    tonight = [
        mined("mine-new", ["mine-old-test"], TESTS, TESTS),  # requests of a held-out task, now a new id
        mined("mine-log", ["mine-old-train"], LOG, LOG_PARAPHRASE, LOG),
        mined("mine-unsplit", [], REPORT),
    ]
    memory.learn({"mine-new": "test", "mine-log": "val"}, tonight, night=3)
    assert memory.splits == {"mine-old-test": "test", "mine-old-train": "val", "mine-new": "test", "mine-log": "val"}
    assert [(t.id, t.keys, t.first_night, t.last_night) for t in memory.tasks] == [
        ("mine-log", [LOG, LOG_PARAPHRASE], 3, 3),
        ("mine-new", [TESTS], 3, 3),
    ]  # a task without a split has no identity to keep
    assert memory.known().legacy == ["mine-old-test", "mine-old-train"]


def test_remembered_identities_keep_tonights_requests_first_and_stay_bounded() -> None:
    old = TaskIdentity(id="t", keys=[f"old {n}" for n in range(KEYS_KEPT)], first_night=1, last_night=1)
    (kept,) = remembered([old], [TaskIdentity(id="t", keys=["new"])], night=4)
    assert kept.keys[0] == "new" and len(kept.keys) == KEYS_KEPT and (kept.first_night, kept.last_night) == (1, 4)
