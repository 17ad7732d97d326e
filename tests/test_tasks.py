"""Task files: parsing, shorthand judges, line-numbered errors, split assignment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Task
from skillsleep.core.train.tasks import assign_splits, by_split, load_tasks

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "answer-format"


def write_lines(tmp_path: Path, *lines: str | dict) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def task(i: int, **extra: object) -> dict:
    return {"id": f"t{i}", "prompt": f"question {i}", "answer": str(i), **extra}


def test_valid_file_with_comments_blank_lines_and_full_judge(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        "// a comment",
        "",
        {
            "id": "a",
            "prompt": "2+2?",
            "split": "val",
            "context": "math",
            "judge": {
                "checks": [{"type": "regex", "value": r"\d+", "feedback": "give a number"}],
                "answer": "4",
                "answer_match": "number",
                "answer_pattern": r"ANSWER:\s*(.+)$",
            },
        },
        {"id": "b", "prompt": "Say hi", "judge": {"rubric": "friendly greeting"}},
    )
    tasks = load_tasks(path)
    assert [t.id for t in tasks] == ["a", "b"]
    assert tasks[0].split == "val" and tasks[0].context == "math"
    assert tasks[0].judge.checks[0].feedback == "give a number"
    assert tasks[1].split is None and tasks[1].judge.rubric == "friendly greeting"


def test_shorthand_judge_keys_move_into_judge(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        {
            "id": "a",
            "prompt": "p",
            "answer": "42",
            "answer_match": "number",
            "checks": [{"type": "contains", "value": "42"}],
            "rubric": "r",
        },
    )
    (t,) = load_tasks(path)
    assert t.judge.answer == "42" and t.judge.answer_match == "number"
    assert t.judge.checks[0].type == "contains" and t.judge.rubric == "r"


def test_shorthand_and_judge_together_merge_but_conflicts_fail(tmp_path: Path) -> None:
    ok = write_lines(tmp_path, {"id": "a", "prompt": "p", "answer": "1", "judge": {"rubric": "r"}})
    (t,) = load_tasks(ok)
    assert t.judge.answer == "1" and t.judge.rubric == "r"
    bad = write_lines(tmp_path, {"id": "a", "prompt": "p", "answer": "1", "judge": {"answer": "2"}})
    with pytest.raises(
        ConfigError, match=r"tasks\.jsonl:1: task 'a': 'answer' given both at the top level and inside 'judge'"
    ):
        load_tasks(bad)


def test_invalid_json_and_missing_prompt_are_reported_with_line_numbers(tmp_path: Path) -> None:
    path = write_lines(tmp_path, task(1), "// skipped", '{"id": "x", "prompt": ', task(2), {"id": "y", "answer": "1"})
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "2 problem(s)" in msg
    assert "tasks.jsonl:3: invalid JSON" in msg
    assert "tasks.jsonl:5: task 'y': missing 'prompt'" in msg


def test_non_object_line_and_unknown_field(tmp_path: Path) -> None:
    path = write_lines(tmp_path, "[1, 2]", task(1, promt="typo"))
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "tasks.jsonl:1: expected a JSON object, got list" in msg
    assert "tasks.jsonl:2: task 't1': unknown key 'promt' (did you mean 'prompt'?)" in msg


def test_bad_split_value_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tasks\.jsonl:1: task 't1': split: .*'train', 'val' or 'test'"):
        load_tasks(write_lines(tmp_path, task(1, split="dev")))


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = write_lines(tmp_path, task(1), task(2), task(1))
    with pytest.raises(ConfigError, match=r"tasks\.jsonl:3: duplicate id 't1' \(first on line 1\)"):
        load_tasks(path)


def test_unknown_check_type_lists_valid_types(tmp_path: Path) -> None:
    path = write_lines(tmp_path, task(1, checks=[{"type": "regexp", "value": "x"}]))
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "tasks.jsonl:1: task 't1': check 1: unknown check type 'regexp'; valid:" in msg
    assert "last_line_regex" in msg and "contains" in msg


def test_invalid_regex_in_a_check_is_reported(tmp_path: Path) -> None:
    path = write_lines(tmp_path, task(1), task(2, checks=[{"type": "regex", "value": "(unclosed"}]))
    with pytest.raises(
        ConfigError,
        match=r"tasks\.jsonl:2: task 't2': check 1 \(regex\): the pattern '\(unclosed' is not a valid regular expression",
    ):
        load_tasks(path)


def test_answer_pattern_needs_a_valid_regex_with_a_group(tmp_path: Path) -> None:
    path = write_lines(tmp_path, task(1, answer_pattern="ANSWER: .+"), task(2, answer_pattern="[oops"))
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "tasks.jsonl:1: task 't1': answer_pattern 'ANSWER: .+' needs exactly one capture group" in msg
    assert "tasks.jsonl:2: task 't2': answer_pattern: the pattern '[oops' is not a valid regular expression" in msg


def test_numeric_check_needs_an_integer_value(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"task 't1': check 1 \(max_chars\): needs a whole number ≥ 0 as its value, got \"10\""
    ):
        load_tasks(write_lines(tmp_path, task(1, checks=[{"type": "max_chars", "value": "10"}])))


def test_task_without_any_judge_is_refused(tmp_path: Path) -> None:
    path = write_lines(tmp_path, {"id": "lonely", "prompt": "p"})
    with pytest.raises(ConfigError, match=r"tasks\.jsonl:1: task 'lonely': it cannot be judged"):
        load_tasks(path)


def test_at_most_five_problems_are_listed(tmp_path: Path) -> None:
    path = write_lines(tmp_path, *["not json"] * 8)
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "8 problem(s)" in msg and "tasks.jsonl:5:" in msg and "tasks.jsonl:6:" not in msg
    assert "and 3 more" in msg


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="task file not found"):
        load_tasks(tmp_path / "none.jsonl")
    with pytest.raises(ConfigError, match="holds no tasks"):
        load_tasks(write_lines(tmp_path, "// only a comment"))


def make(n: int, **extra: object) -> list[Task]:
    return [Task(id=f"task-{i}", prompt="p", **extra) for i in range(n)]


FRACTIONS = {"train": 0.5, "val": 0.3, "test": 0.2}


def test_split_assignment_is_deterministic_and_seed_dependent() -> None:
    tasks = make(40)
    a = [t.split for t in assign_splits(tasks, FRACTIONS, seed=1)]
    assert a == [t.split for t in assign_splits(tasks, FRACTIONS, seed=1)]
    assert a != [t.split for t in assign_splits(tasks, FRACTIONS, seed=2)]
    assert set(a) == {"train", "val", "test"}
    assert all(t.split is None for t in tasks)  # inputs are not mutated


def test_split_assignment_is_stable_when_tasks_are_added() -> None:
    before = {t.id: t.split for t in assign_splits(make(30), FRACTIONS, seed=0)}
    after = {t.id: t.split for t in assign_splits(make(45), FRACTIONS, seed=0)}
    assert all(after[k] == v for k, v in before.items())


def test_explicit_splits_are_kept() -> None:
    tasks = make(20, split="test")
    assert all(t.split == "test" for t in assign_splits(tasks, FRACTIONS, seed=0))
    mixed = [Task(id="fixed", prompt="p", split="val"), *make(10)]
    assert assign_splits(mixed, {"train": 1.0}, seed=0)[0].split == "val"


def test_train_and_val_are_never_empty_from_three_tasks() -> None:
    for seed in range(20):
        out = by_split(assign_splits(make(3), {"test": 1.0}, seed=seed))
        assert len(out["train"]) == 1 and len(out["val"]) == 1 and len(out["test"]) == 1
        out = by_split(assign_splits(make(4), {"train": 1.0}, seed=seed))
        assert out["val"] and out["train"]


def test_two_tasks_are_left_as_hashed() -> None:
    out = assign_splits(make(2), {"train": 1.0}, seed=0)
    assert [t.split for t in out] == ["train", "train"]


def test_bad_fractions_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown split name"):
        assign_splits(make(3), {"dev": 1.0}, seed=0)
    with pytest.raises(ConfigError, match="positive sum"):
        assign_splits(make(3), {"train": 0.0}, seed=0)


def test_by_split_groups_and_refuses_unsplit_tasks() -> None:
    groups = by_split([Task(id="a", prompt="p", split="val"), Task(id="b", prompt="p", split="train")])
    assert [t.id for t in groups["val"]] == ["a"] and groups["test"] == []
    with pytest.raises(ConfigError, match="has no split"):
        by_split(make(1))


def test_shipped_example_loads_with_designed_splits() -> None:
    tasks = load_tasks(EXAMPLE / "tasks.jsonl")
    groups = by_split(tasks)
    assert {k: len(v) for k, v in groups.items()} == {"train": 10, "val": 8, "test": 6}
    for t in tasks:
        assert t.judge.checks[0].type == "last_line_regex" and t.judge.checks[0].feedback
        assert t.judge.answer and t.judge.answer_pattern
    skill = (EXAMPLE / "SKILL.md").read_text()
    assert skill.startswith("---\nname: ") and "ANSWER" not in skill


# --- every check, answer and id the scorer could not use is refused when the file is read ----------

# (check, words the problem must contain): one bad value for every check type that takes one
BAD_CHECKS = [
    ({"type": "contains", "value": ""}, "non-empty text"),
    ({"type": "not_contains", "value": "   "}, "non-empty text"),
    ({"type": "starts_with", "value": 5}, "text"),
    ({"type": "ends_with"}, "non-empty text"),
    ({"type": "section_present", "value": ""}, "non-empty text"),
    ({"type": "tool_called", "value": None}, "non-empty text"),
    ({"type": "regex", "value": "(unclosed"}, "not a valid regular expression"),
    ({"type": "not_regex", "value": ""}, "non-empty"),
    ({"type": "last_line_regex", "value": 3}, "text"),
    ({"type": "max_chars", "value": "10"}, "whole number"),
    ({"type": "min_chars", "value": -1}, "whole number ≥ 0"),
    ({"type": "max_lines", "value": True}, "whole number"),
    ({"type": "max_words", "value": 2.5}, "whole number"),
    ({"type": "min_words"}, "whole number"),
    ({"type": "max_sentences", "value": "3"}, "whole number"),
    ({"type": "language", "value": "spanish"}, "one of en (English), es (Spanish)"),
    ({"type": "language"}, 'give it as "value": "es"'),
]


@pytest.mark.parametrize(("bad", "words"), BAD_CHECKS, ids=[c["type"] for c, _ in BAD_CHECKS])
def test_a_check_the_scorer_cannot_use_is_refused_with_line_task_and_fix(tmp_path: Path, bad: dict, words: str) -> None:
    good = {"type": "contains", "value": "ok"}
    path = write_lines(tmp_path, task(1), task(2, checks=[good, bad]))
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert f"tasks.jsonl:2: task 't2': check 2 ({bad['type']})" in msg, msg
    assert words in msg and "tasks.jsonl:1" not in msg


def test_every_check_type_with_a_value_has_a_bad_value_case() -> None:
    from typing import get_args

    from skillsleep.core.shared.records import CheckType

    assert {c["type"] for c, _ in BAD_CHECKS} == set(get_args(CheckType)) - {"json_valid"}


@pytest.mark.parametrize(
    ("judge", "words"),
    [
        ({"answer": "4", "answer_pattern": "ANSWER: .+"}, "exactly one capture group"),
        ({"answer": "4", "answer_pattern": "(ANSWER): (.+)"}, "exactly one capture group"),
        ({"answer": "4", "answer_pattern": "[oops"}, "not a valid regular expression"),
        ({"answer": "forty-two", "answer_match": "number"}, "not a number"),
        ({"answer": "  "}, "answer is empty"),
        ({"rubric": ""}, "rubric is empty"),
        ({"rubric": "r", "rubric_pass": 5}, "rubric_pass"),
    ],
)
def test_an_answer_or_rubric_the_scorer_cannot_use_is_refused(tmp_path: Path, judge: dict, words: str) -> None:
    path = write_lines(tmp_path, {"id": "q", "prompt": "p", "judge": judge})
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "tasks.jsonl:1: task 'q': " in msg and words in msg, msg


def test_json_valid_and_well_formed_checks_of_every_type_load(tmp_path: Path) -> None:
    checks = [
        {"type": "contains", "value": "a"},
        {"type": "regex", "value": r"\d"},
        {"type": "max_chars", "value": 0},
        {"type": "json_valid"},
        {"type": "tool_called", "value": "Edit", "case_sensitive": False},
    ]
    (t,) = load_tasks(write_lines(tmp_path, task(1, checks=checks, answer_pattern=r"(?:ANSWER|A): (\d+)")))
    assert [c.type for c in t.judge.checks] == [c["type"] for c in checks]


@pytest.mark.parametrize(
    ("tid", "words"),
    [
        ("", "id is empty"),
        ("   ", "id is empty"),
        ("a\nb", "control character"),
        (7, "id: expected a string"),
    ],
)
def test_a_degenerate_id_is_refused_with_its_line(tmp_path: Path, tid: object, words: str) -> None:
    path = write_lines(tmp_path, task(1), {"id": tid, "prompt": "p", "answer": "1"})
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "tasks.jsonl:2: " in msg and words in msg and "tasks.jsonl:1" not in msg, msg


def test_an_empty_prompt_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tasks\.jsonl:1: task 'q': prompt: the prompt is empty"):
        load_tasks(write_lines(tmp_path, {"id": "q", "prompt": " \n", "answer": "1"}))


# --- hostile files: read when they are text, one clean error when they are not ---------------------

LINES = [task(1), task(2, split="val"), task(3, context="caf\u00e9 \u2014 na\u00efve")]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be-bom", "utf-32"])
def test_a_task_file_with_a_byte_order_mark_is_read(tmp_path: Path, encoding: str) -> None:
    text = "\r\n".join(json.dumps(x, ensure_ascii=False) for x in LINES) + "\r\n"  # as PowerShell's `>` writes
    data = ("\ufeff" + text).encode("utf-16-be") if encoding == "utf-16-be-bom" else text.encode(encoding)
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(data)
    (tmp_path / "utf8").mkdir()
    assert load_tasks(path) == load_tasks(write_lines(tmp_path / "utf8", *LINES))


def test_a_latin1_task_file_names_the_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(json.dumps(task(1)).encode() + b'\n{"id": "t2", "prompt": "caf\xe9", "answer": "2"}\n')
    with pytest.raises(
        ConfigError, match=r"tasks\.jsonl is not UTF-8 text: the byte 0xe9 at line 2 \(byte offset \d+\).*UTF-8"
    ):
        load_tasks(path)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("folder", "is a folder, not a file; give a JSONL task file"),
        ("/dev/zero", "is a device, not a regular file"),
        (b"\x00\x01binary\xff", "not UTF-8 text"),
        (b'{"id": "a", "prompt": "p\x00", "answer": "1"}\n', "NUL character at line 1"),
    ],
)
def test_a_task_file_that_is_not_text_is_a_clean_error(tmp_path: Path, content: object, words: str) -> None:
    path = tmp_path / "tasks.jsonl"
    if content == "folder":
        path.mkdir()
    elif content == "/dev/zero":
        path = Path("/dev/zero")
    else:
        path.write_bytes(content)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=words):
        load_tasks(path)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"id": "a", "prompt": "p", "answer": ' + "1" * 5000 + "}", "invalid JSON"),
        ('{"id": "\\ud800", "prompt": "p", "answer": "1"}', "lone surrogate"),
        ('{"id": "a", "prompt": "' + "x" * 50_000_000 + '", "answer": "1"}', "line is 50,000,040 characters long"),
    ],
)
def test_a_hostile_line_is_a_problem_of_its_line(tmp_path: Path, line: str, words: str) -> None:
    path = write_lines(tmp_path, task(1), line)
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "tasks.jsonl:2: " in msg and words in msg and len(msg) < 2000, msg[:500]


def test_a_json_array_spread_over_lines_says_a_task_file_is_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps([task(1), task(2)], indent=2))
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "holds one JSON array spread over several lines" in msg and "one task object per line" in msg
    assert "jq -c" in msg and "problem(s)" not in msg


@pytest.mark.parametrize("text", ["", "\n\n  \n", "// only\n// comments\n"])
def test_an_empty_task_file_holds_no_tasks(tmp_path: Path, text: str) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(text)
    with pytest.raises(ConfigError, match="holds no tasks"):
        load_tasks(path)


def test_a_line_separator_inside_a_json_string_does_not_split_the_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        json.dumps(task(1, context="a\u2028b\x0cc"), ensure_ascii=False) + "\n" + json.dumps(task(2)) + "\n"
    )
    assert [t.context for t in load_tasks(path)] == ["a\u2028b\x0cc", None]


def test_a_huge_value_is_not_echoed_whole_in_the_error(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path, {"id": "a", "prompt": list(range(100_000)), "answer": "1"}, task(2, **{"x" * 10_000: 1})
    )
    with pytest.raises(ConfigError) as info:
        load_tasks(path)
    msg = str(info.value)
    assert "tasks.jsonl:1: task 'a': prompt: expected a string" in msg and "tasks.jsonl:2: " in msg and len(msg) < 1500
