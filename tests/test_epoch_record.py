"""The record of an epoch's end (`EpochRecord`, core/train/state.py): the keys of epochs/e<N>.json and
of state.json's `epochs` are those the version before issue 25 wrote (a stage that did not run has
no key), its unusable replies are objects, and a record that version wrote reads back."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import invoke, project
from test_train_summary import FIXTURES, unusable_replies

from skillsleep.core.train.state import EpochRecord, TrainState

__all__ = ["project"]  # the fixture, shared with test_cli


def test_a_record_written_before_issue_25_reads_back_with_the_same_keys() -> None:
    old = json.loads((FIXTURES / "train_state_before.json").read_text(encoding="utf-8"))["epochs"][0]
    record = EpochRecord.model_validate(old)
    assert record.meta_ran and record.slow_update is not None and record.slow_update_gate is None
    again = json.loads(record.model_dump_json())
    assert list(again) == list(old) == ["epoch", "start_score", "slow_update", "meta_failure", "end_score"]
    assert list(again["slow_update"]) == list(old["slow_update"])
    where, _, error = old["meta_failure"].partition(": ")
    assert again["meta_failure"] == {"role": "meta", "where": where, "error": error}
    assert again["slow_update"]["failure"]["role"] == "slow_update"
    assert EpochRecord.model_validate(again) == record


def test_a_stage_that_did_not_run_leaves_no_key() -> None:
    record = EpochRecord(epoch=0, start_score=0.5, end_score=0.5)
    assert json.loads(record.model_dump_json()) == {"epoch": 0, "start_score": 0.5, "end_score": 0.5}
    assert not record.meta_ran and record.problems() == []
    record.meta_failure = None  # the meta skill ran, and its reply was usable
    assert record.meta_ran
    assert list(json.loads(record.model_dump_json())) == ["epoch", "start_score", "meta_failure", "end_score"]
    back = EpochRecord.model_validate_json(record.model_dump_json())
    assert back.meta_ran and back == record


def test_the_epoch_files_of_a_run_hold_what_each_epoch_end_did(project: Path) -> None:
    config = unusable_replies(project)
    # one selection task fails whatever the skill, so the run never has every held-out task at the
    # top score and its second epoch runs (with all at the top, the steps left are skipped)
    target = json.loads((project / "target.json").read_text())
    (project / "target.json").write_text(json.dumps([{"match": "Question 7:", "reply": "It is 4."}, *target]))
    code, _, err = invoke("train", "--config", str(config), "--json")
    assert code == 0, err
    run = project / "runs" / "cli"
    files = [json.loads((run / "epochs" / f"e{n}.json").read_text()) for n in (0, 1)]
    assert [list(f) for f in files] == [
        ["epoch", "start_score", "slow_update", "meta_failure", "end_score"],  # no gate: no guidance came
        ["epoch", "start_score", "meta_failure", "end_score"],  # the skill did not change: no slow update
    ]
    assert files[1]["meta_failure"]["role"] == "meta" and files[1]["meta_failure"]["where"] == "meta skill"
    state = TrainState.model_validate_json((run / "state.json").read_text())
    assert [json.loads(e.model_dump_json()) for e in state.epochs] == files


def test_without_the_meta_skill_an_epoch_file_has_no_meta_failure(project: Path) -> None:
    code, _, err = invoke("train", "--config", str(project / "run.toml"), "meta.enabled=false", "--json")
    assert code == 0, err
    first = json.loads((project / "runs" / "cli" / "epochs" / "e0.json").read_text())
    assert list(first) == ["epoch", "start_score", "slow_update", "slow_update_gate", "end_score"]
    assert first["slow_update_gate"]["accepted"] and first["slow_update"]["failure"] is None
