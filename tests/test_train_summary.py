"""`skillsleep train` printed byte for byte: its `--json` document (the same bytes as summary.json)
and its text, against tests/fixtures/train_summary.json and train_summary.txt, for one scripted run
whose optimizer writes replies that cannot be used at a step and at an epoch's end; and a state.json
that the version before issue 25 wrote, stopped by the budget in the second epoch, resumed to the
same summary that version printed (tests/fixtures/train_state_before.json, train_resumed.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import OPTIMIZER, invoke, project

from skillsleep.core.train.config import load_config
from skillsleep.core.train.run import TrainResult
from skillsleep.core.train.state import TrainState, config_hash
from skillsleep.slash_commands.train_runner import train_text

__all__ = ["project"]  # the fixture, shared with test_cli

FIXTURES = Path(__file__).parent / "fixtures"
GARBAGE = "Sure! Here is what I would change: <html>{"
UNUSABLE = ('"guidance"', '"notes"')  # slow update and meta skill replies it cannot use
NO_TARGET = {"kind": "skill_defect", "diagnosis": "a stray line", "op": "delete", "target": "", "content": ""}


def unusable_replies(project: Path) -> Path:
    """The run config of `project` with an optimizer whose slow-update and meta replies are garbage and
    whose reflection adds a finding it cannot use (a delete without a target) to the one it can."""
    rules = [r if r["match"] not in UNUSABLE else {"match": r["match"], "reply": GARBAGE} for r in OPTIMIZER]
    findings = json.loads(rules[0]["reply"])["findings"]
    rules[0] = {"match": '"findings"', "reply": json.dumps({"findings": [*findings, NO_TARGET]})}
    (project / "opt.json").write_text(json.dumps(rules))
    return project / "run.toml"


def stable(out: str, root: Path) -> str:
    return out.replace(str(root), "<ROOT>")


def test_train_json_and_text_are_printed_byte_for_byte(project: Path) -> None:
    config = unusable_replies(project)
    code, out, err = invoke("train", "--config", str(config), "--json")
    assert code == 0, err
    assert stable(out, project) == (FIXTURES / "train_summary.json").read_text(encoding="utf-8")
    assert (project / "runs" / "cli" / "summary.json").read_text(encoding="utf-8") == out
    code, text, err = invoke("train", "--config", str(config))  # finished: its summary shown again, as text
    assert code == 0 and "already finished" in err, err
    assert stable(text, project) == (FIXTURES / "train_summary.txt").read_text(encoding="utf-8")


def test_a_state_written_before_issue_25_resumes_to_the_same_summary(project: Path) -> None:
    config = unusable_replies(project)
    before = json.loads((FIXTURES / "train_state_before.json").read_text(encoding="utf-8"))
    assert before["epoch"] == 1 and not before["done"] and before["stopped"].startswith("budget:")
    assert isinstance(before["epochs"][0]["meta_failure"], str)  # the old shapes: unusable replies as lines
    assert all(isinstance(f, str) for s in before["steps"] for f in s["failures"])
    before["config_hash"] = config_hash(load_config(config, []))  # the hash of this test's paths
    run = project / "runs" / "cli"
    run.mkdir(parents=True)
    (run / "state.json").write_text(json.dumps(before))
    malformed = f"the reply is not valid JSON (Expecting value at char 0): {GARBAGE!r}"
    problems = TrainState.model_validate(before).problems()
    assert [p.role for p in problems] == ["reflect", "slow_update", "meta"]
    assert [p.line() for p in problems] == [
        "epoch 1 step 1: reflect minibatch 1/1: finding 2 dropped: delete needs the exact existing line as target",
        f"end of epoch 1: slow update: malformed reply, old guidance kept: {malformed}",
        f"end of epoch 1: meta skill: malformed reply, old notes kept: {malformed}",
    ]
    code, out, err = invoke("train", "--config", str(config), "--json")
    assert code == 0, err
    assert "resuming" in err
    assert stable(out, project) == (FIXTURES / "train_resumed.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["train_summary.json", "train_resumed.json"])
def test_the_pinned_summaries_name_the_unusable_replies(name: str) -> None:
    problems = json.loads((FIXTURES / name).read_text(encoding="utf-8"))["problems"]
    assert any(p.startswith("end of epoch 1: meta skill: malformed reply") for p in problems), problems


def test_the_test_split_is_compared_paired_and_an_older_summary_still_reads() -> None:
    """Issue 29: the pinned summary holds the best skill against the seed on the test split, paired per
    task (A = seed, B = best); a summary.json written before it (no `test_paired`) reads and prints
    as it did, without the paired lines."""
    new = json.loads((FIXTURES / "train_summary.json").read_text(encoding="utf-8"))
    paired = new["test_paired"]
    assert [t["id"] for t in paired["tasks"]] == ["q8", "q9"] and paired["b_only"] == 2
    assert paired["verdict"].startswith("no detectable difference: +1.00 [1.00, 1.00], p = 0.500, 2 tasks")
    text = (FIXTURES / "train_summary.txt").read_text(encoding="utf-8")
    assert f"test split, best against seed (paired per task): {paired['verdict']}\n" in text
    # one sample per task: the interval covers the variation across tasks only, and the text says so
    note = "one sample per task: the interval covers the variation across tasks only; sampling noise is not measured"
    assert (
        f"\n  repeatability: {note} ([train] rollouts_k = 3 with the target's temperature above 0 measures it)\n"
        in text
    )
    old = {k: v for k, v in new.items() if k != "test_paired"}
    result = TrainResult.model_validate(old)
    assert result.test_paired is None
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("test split, best against seed"))
    end = next(i for i, line in enumerate(lines) if line.startswith("calls:"))
    assert end - start == 5  # the verdict, repeatability, the table's heading, a row per test task
    assert train_text(result) == "\n".join(lines[:start] + lines[end:])
