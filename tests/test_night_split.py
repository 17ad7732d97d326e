"""`core.night.split_tasks`: one split per cluster, real tasks held out, splits stable across nights."""

from __future__ import annotations

from skillsleep.core.mine.intents import Outcomes
from skillsleep.core.mine.mining import MinedTask
from skillsleep.core.mine.splits import split_tasks
from skillsleep.core.shared.records import Task


def mined(tid: str, cluster: str | None = None) -> MinedTask:
    return MinedTask(
        task=Task(id=tid, prompt=f"do {tid}"),
        cluster=cluster or f"c-{tid}",
        recurrence=2,
        sessions=2,
        recurrent=True,
        priority=2.0,
        outcomes=Outcomes(),
        instances=[],
    )


def test_fewer_than_two_clusters_cannot_be_split() -> None:
    assert split_tasks([mined("a"), mined("b", "c-a")], {}) == {}
    assert split_tasks([], {}) == {}


def test_every_split_gets_a_cluster_and_clusters_never_straddle() -> None:
    tasks = [mined(f"t{i}") for i in range(10)] + [mined("t0-twin", "c-t0"), mined("t5-twin", "c-t5")]
    got = split_tasks(tasks, {})
    assert set(got) == {m.task.id for m in tasks}
    assert got["t0-twin"] == got["t0"] and got["t5-twin"] == got["t5"]
    per_cluster = {m.cluster: got[m.task.id] for m in tasks}
    counts = {s: list(per_cluster.values()).count(s) for s in ("train", "val", "test")}
    assert counts == {"train": 5, "val": 3, "test": 2}  # 10 clusters: 30 % val, 20 % test
    assert split_tasks(list(reversed(tasks)), {}) == got  # input order does not matter


def test_two_and_three_clusters_still_train_and_validate() -> None:
    assert sorted(split_tasks([mined("a"), mined("b")], {}).values()) == ["train", "val"]
    assert sorted(split_tasks([mined("a"), mined("b"), mined("c")], {}).values()) == ["test", "train", "val"]


def test_earlier_splits_are_kept_and_a_cluster_takes_its_most_protected_one() -> None:
    tasks = [mined(f"t{i}") for i in range(6)]
    first = split_tasks(tasks, {})
    test_id = next(t for t, s in first.items() if s == "test")
    train_id = next(t for t, s in first.items() if s == "train")
    # A new task joins the test task's cluster, and a train task is now related to it as well.
    later = [*tasks, mined("new", f"c-{test_id}")]
    for m in later:
        if m.task.id == train_id:
            m.cluster = f"c-{test_id}"
    again = split_tasks(later, first)
    assert again["new"] == again[train_id] == again[test_id] == "test"  # test data never becomes training data
    assert all(again[t] == s for t, s in first.items() if t != train_id)


def test_a_held_out_task_never_trains_and_only_a_new_cluster_can() -> None:
    tasks = [mined("a"), mined("b"), mined("c")]
    assert split_tasks(tasks, {"a": "val", "b": "val", "c": "test"}) == {}  # nothing new to train on
    got = split_tasks([*tasks, mined("d")], {"a": "val", "b": "val", "c": "test"})
    assert got == {"a": "val", "b": "val", "c": "test", "d": "train"}
    assert split_tasks([mined("a"), mined("b")], {"a": "test", "b": "test"}) == {}  # never from test
    fresh_test = split_tasks([mined("a"), mined("b"), mined("n1"), mined("n2")], {"a": "val", "b": "val"})
    assert [fresh_test[t] for t in ("a", "b")] == ["val", "val"] and "train" in fresh_test.values()


def test_a_task_holding_requests_of_an_earlier_held_out_task_stays_held_out() -> None:
    split_in_two = mined("new-id")
    split_in_two.earlier = ["old-test-task"]
    merged = mined("train-task")
    merged.earlier = ["train-task", "old-val-task"]
    tasks = [split_in_two, merged, mined("x"), mined("y"), mined("z")]
    got = split_tasks(tasks, {"old-test-task": "test", "old-val-task": "val", "train-task": "train"})
    assert got["new-id"] == "test" and got["train-task"] == "val"
