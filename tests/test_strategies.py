"""Several candidates come from different strategies (core/train/strategies.py): the optimizer's
edits, the quoted-literal form (no model call), a worked example (from a passing reply of the
batch, else asked of the optimizer in one counted call); the winner's strategy is reported."""

from __future__ import annotations

from pathlib import Path

from test_candidates import BAD, GOOD, HALF, QUOTED, QUOTING, SEED, train

from skillsleep.core.shared.records import Check, Judge, Task
from skillsleep.core.train.edits import EditLimits
from skillsleep.core.train.quoting import choices, demands, literal_prefix
from skillsleep.core.train.step_record import StepRecord
from skillsleep.core.train.strategies import example_content, quoted_edit, unmet

EXAMPLE = "Example of a good reply"


async def test_two_candidates_come_from_different_strategies_and_the_quoted_one_costs_no_call(tmp_path: Path) -> None:
    trainer, _, ob, _ = train(tmp_path, [HALF, GOOD], [1, 2], n=2)
    st = await trainer.run()
    step = st.steps[0]
    assert step.strategies == {1: "optimizer", 2: "quoted literals"}
    one, two = ((tmp_path / f"runs/t/candidates/e0s0c{n}.md").read_text() for n in (1, 2))
    assert HALF in one and QUOTED not in one and QUOTED in two and HALF not in two
    assert [str((r.json_schema or {}).get("required")) for r in ob.requests] == [
        "['findings']",
        "['groups']",
        "['order']",
    ]  # reflect, merge, rank: the quoted-literal candidate asked nothing
    assert step.chosen == 1 and step.strategy == "optimizer"  # HALF passes half; the target ignores the quote


async def test_the_worked_example_is_built_from_a_passing_reply_of_the_batch(tmp_path: Path) -> None:
    trainer, _, ob, events = train(tmp_path, [BAD], [1], n=2, seed=QUOTING, zero_passes=True, follows=(EXAMPLE,))
    st = await trainer.run()
    step = st.steps[0]
    assert step.strategies == {1: "optimizer", 2: "worked example"} and step.chosen == 2
    assert step.strategy == "worked example"
    assert [e.content for e in step.applied] == [
        'Example of a good reply (to "What is 0+3?"):\n> 0 plus <answer>.\n> ANSWER: <answer>'
    ]  # the reply of 0+3, which passed, with its task's answer written as a placeholder
    assert "ANSWER: 3" not in st.current and st.current_score == 1.0
    assert not [r for r in ob.requests if "reply" in str(r.json_schema)]  # no model call for it
    assert any(e.describe().endswith("kept candidate 2 (worked example)") for e in events)


async def test_the_worked_example_is_asked_of_the_optimizer_when_no_reply_passed(tmp_path: Path) -> None:
    trainer, _, ob, _ = train(
        tmp_path, [BAD], [1], n=2, seed=QUOTING, follows=(EXAMPLE,), example="Sum first.\nANSWER: <answer>"
    )
    st = await trainer.run()
    step = st.steps[0]
    asked = [r for r in ob.requests if "reply" in str(r.json_schema)]
    assert len(asked) == 1 and "What is" in asked[0].messages[-1].content
    assert trainer.optimizer.ledger.by_role()["example"]["calls"] == 1  # counted like every optimizer call
    assert step.strategies == {1: "optimizer", 2: "worked example"} and step.strategy == "worked example"
    [edit] = step.applied
    assert edit.content is not None and edit.content.startswith(f'{EXAMPLE} (to "What is ')
    assert edit.content.endswith('"):\n> Sum first.\n> ANSWER: <answer>')


async def test_an_asked_example_that_misses_its_tasks_own_checks_is_no_candidate(tmp_path: Path) -> None:
    trainer, _, ob, _ = train(
        tmp_path, [BAD], [1], n=2, seed=QUOTING, follows=(EXAMPLE,), example="The sum is <answer>."
    )
    st = await trainer.run()
    step = st.steps[0]
    assert len([r for r in ob.requests if "reply" in str(r.json_schema)]) == 1  # asked once, and checked
    assert "worked example" not in step.strategies.values() and 2 not in step.candidate_gates  # no gate pass on it
    assert EXAMPLE not in st.current
    [problem] = [f for f in step.failures if f.role == "example"]
    assert problem.error.startswith("the optimizer's example reply misses its task's own checks, no example: ")
    assert "ANSWER: .+" in problem.error  # the check's own feedback says what the reply lacked


def test_an_example_is_checked_with_its_answer_placeholder_read_as_the_tasks_answer() -> None:
    task = Task(
        id="x", prompt="p", judge=Judge(checks=[Check(type="regex", value=r"^ANSWER: \d+$")], answer="7")
    )  # fmt: skip
    assert unmet(task, "Add them.\nANSWER: <answer>") == []
    assert unmet(task, "Add them.\nANSWER: seven") != []
    no_answer = task.model_copy(update={"judge": Judge(checks=task.judge.checks)})
    assert unmet(no_answer, "ANSWER: <answer>") != []  # nothing to read it as: the pattern wants digits


async def test_one_candidate_records_no_strategy_and_asks_nothing_more_when_the_clip_lands(tmp_path: Path) -> None:
    trainer, _, ob, _ = train(tmp_path, [GOOD], [1], n=1)
    st = await trainer.run()
    assert st.steps[0].strategies == {} and st.steps[0].strategy is None and QUOTED not in st.current
    assert len(ob.requests) == 1  # reflect: one finding needs no merge nor rank
    assert trainer.plan()["calls_per_step"] == 3 + 1 + 3 + 4  # batch, reflect, merge+rank+repair, gate
    two, _, _, _ = train(tmp_path / "two", [GOOD], [1], n=2)
    assert two.plan()["calls_per_step"] == 3 + 1 + 3 + 2 * 4 + 1  # and a worked example asked at most once


def test_a_step_record_written_before_strategies_still_loads() -> None:
    old = {"epoch": 0, "step": 0, "learning_rate": 1, "batch": ["t0"], "train_score": 0.0, "proposed": 1}
    record = StepRecord.model_validate({**old, "merged": 1, "selected": [], "applied": [], "candidates": 2})
    assert record.strategies == {} and record.strategy is None


def test_a_pattern_of_a_label_and_plain_alternatives_is_quoted_with_each_line_it_allows() -> None:
    assert choices(r"^Label: (plausible|implausible)\.?[ \t]*$") == ["Label: plausible", "Label: implausible"]
    assert choices(r"Verdict\: (?:yes|no|not sure)") == ["Verdict: yes", "Verdict: no", "Verdict: not sure"]
    assert choices(r"^ANSWER: .+") is None and choices(r"^Score: (\d+|n/a)") is None  # not plain words
    assert choices(r"^(yes|no)$") is None  # no label before the choice
    labels = _task(("regex", r"^Label: (plausible|implausible)\.?[ \t]*$"), ("regex", r"^Sport: \S"))
    edit = quoted_edit([labels], demands([labels]))
    assert edit is not None and edit.content == (
        "Every reply must include a line `Label: plausible` or `Label: implausible` and a line starting with `Sport:`."
    )


def test_the_literal_prefix_of_a_pattern() -> None:
    assert literal_prefix("ANSWER: .+") == "ANSWER:"
    assert literal_prefix(r"^Score:\s*\d+") == "Score:"
    assert literal_prefix(r"^#+ Findings") is None  # `#+` leaves `#`, no letter
    assert literal_prefix(r"Verdict\: (yes|no)") == "Verdict:"
    assert literal_prefix(r"\d+") is None and literal_prefix("yes|no") is None


def _task(*checks: tuple[str, str]) -> Task:
    return Task(id="x", prompt="p", judge=Judge(checks=[Check(type=t, value=v) for t, v in checks]))


def test_the_quoted_literal_edit_quotes_every_demanded_line_in_the_judges_order() -> None:
    mixed = _task(("section_present", "Findings"), ("contains", "Score:"), ("max_chars", "400"))
    failing = [mixed, mixed.model_copy(update={"id": "y"})]
    edit = quoted_edit(failing, demands(failing))
    assert edit is not None and edit.op == "add"
    assert edit.content == "Every reply must include the heading `## Findings` and a line starting with `Score:`."
    last = [_task(("last_line_regex", "ANSWER: .+"))]
    assert (quoted_edit(last, demands(last)) or edit).content == QUOTED
    assert quoted_edit([_task(("max_chars", "400"))], demands([_task(("max_chars", "400"))])) is None
    assert quoted_edit([], demands([])) is None


def test_a_long_example_reply_keeps_its_first_and_last_lines_within_the_limits() -> None:
    limits = EditLimits(max_content_lines=4, max_content_chars=200)
    reply = "## Findings\n\nline two\nline three\n" + "x" * 400 + "\nScore: 3"
    content = example_content("Review this " + "very " * 40 + "long diff", reply, limits)
    assert content is not None and len(content) <= 200 and len(content.split("\n")) == 4
    lines = content.split("\n")
    assert lines[1:] == ["> ## Findings", "> …", "> Score: 3"] and lines[0].startswith(f'{EXAMPLE} (to "Review')
    assert example_content("p", "  \n", limits) is None and SEED


def test_a_report_names_the_kept_strategies_and_one_without_them_writes_what_it_wrote_before() -> None:
    from skillsleep.core.report.files import read_json, render_json
    from tests.test_report import full_report

    before = full_report()
    assert "kept_strategies" not in render_json(before)
    kept = before.model_copy(update={"kept_strategies": ["worked example", "worked example"]})
    assert read_json(render_json(kept)).kept_strategies == ["worked example", "worked example"]


async def test_a_quoted_form_the_optimizer_already_proposed_leaves_its_place_to_the_worked_example(
    tmp_path: Path,
) -> None:
    """The optimizer's clip is the quoted instruction itself: the quoted-literal strategy would gate the
    same skill twice, so the second candidate is the worked example."""
    trainer, _, _, _ = train(tmp_path, [QUOTED], [1], n=2, zero_passes=True, follows=(EXAMPLE,))
    st = await trainer.run()
    step = st.steps[0]
    assert step.strategies == {1: "optimizer", 2: "worked example"} and step.chosen == 2
    one = (tmp_path / "runs/t/candidates/e0s0c1.md").read_text()
    assert QUOTED in one and EXAMPLE not in one


async def test_a_quoted_form_the_target_did_not_follow_is_not_gated_again(tmp_path: Path) -> None:
    """Step 1 gates the quoted form and the target ignores it (a tie, remembered as not followed);
    step 2's optimizer proposes nothing new: its strategies skip the remembered quote and gate the
    worked example, which the target follows."""
    trainer, _, _, _ = train(tmp_path, [BAD], [1], n=2, steps=2, zero_passes=True, follows=(EXAMPLE,))
    first = (await trainer.run()).steps
    assert first[0].strategies == {1: "optimizer", 2: "quoted literals"}
    assert first[0].chosen is None  # neither moved a selection task
    second = first[1]
    assert second.strategies.get(2) == "worked example" and "quoted literals" not in second.strategies.values()
    assert second.chosen == 2 and second.strategy == "worked example"


async def test_with_one_candidate_a_step_whose_edits_the_memory_drops_gates_another_form(tmp_path: Path) -> None:
    """Step 1 gates the optimizer's line and the target ignores it (a tie, remembered); step 2's
    optimizer proposes the same line, the memory drops it, and instead of an empty step the one
    candidate is the quoted-literal form, which the target follows."""
    trainer, _, ob, _ = train(tmp_path, [BAD], [1], n=1, steps=3, follows=(QUOTED,), fallback=True, unsolved=True)
    st = await trainer.run()
    first, second = st.steps[:2]
    assert first.strategies == {} and first.chosen is None and first.candidates == 1
    assert second.candidates == 1 and second.strategies == {1: "quoted literals"}
    assert second.chosen == 1 and second.strategy == "quoted literals"
    assert [e.content for e in second.applied] == [QUOTED]
    assert QUOTED in (tmp_path / "runs/t/best_skill.md").read_text() and st.best_score == 0.8
    assert st.rejected and st.rejected[0].edit.content == BAD  # step 1's tie, which dropped step 2's own edit
    assert trainer.plan()["calls_per_step"] == 3 + 1 + 3 + 5 + 1  # 5 selection tasks; an example may be asked
    reflections = [r.messages[-1].content for r in ob.requests if "findings" in str(r.json_schema)]
    assert "step 2: (quoted literals, the optimizer's edits changed nothing) accepted" in reflections[2]


async def test_a_rejected_fallback_candidate_is_recorded_as_the_step_s_applied_edits(tmp_path: Path) -> None:
    """The worked example of a step with no edit of its own is gated and rejected (the target does
    not follow it): the step record still says what was applied and gated, as for a rejected clip."""
    trainer, _, _, _ = train(tmp_path, [], [1], n=1, seed=QUOTING, zero_passes=True, fallback=True)
    [step] = (await trainer.run()).steps
    assert step.strategies == {1: "worked example"} and step.chosen is None and step.gate is not None
    assert [e.content for e in step.applied] == [
        'Example of a good reply (to "What is 0+3?"):\n> 0 plus <answer>.\n> ANSWER: <answer>'
    ]


async def test_without_the_fallback_a_step_whose_edits_the_memory_drops_gates_nothing(tmp_path: Path) -> None:
    trainer, _, ob, _ = train(tmp_path, [BAD], [1], n=1, steps=2, follows=(QUOTED,))
    st = await trainer.run()
    assert [s.candidates for s in st.steps] == [1, 1] and st.steps[1].chosen is None and st.steps[1].gate is None
    assert QUOTED not in st.current and not [r for r in ob.requests if "reply" in str(r.json_schema)]


async def test_with_one_candidate_a_step_with_no_edit_gates_a_worked_example_of_a_passing_reply(
    tmp_path: Path,
) -> None:
    """The optimizer proposes nothing; the batch's judges name no literal line the skill lacks (it
    quotes it already); the one candidate is the worked example built from the reply that passed,
    with no model call."""
    trainer, _, ob, _ = train(tmp_path, [], [1], n=1, seed=QUOTING, zero_passes=True, follows=(EXAMPLE,), fallback=True)
    st = await trainer.run()
    [step] = st.steps
    assert step.strategies == {1: "worked example"} and step.chosen == 1 and st.current_score == 1.0
    assert not [r for r in ob.requests if "reply" in str(r.json_schema)]


async def test_with_one_candidate_no_other_form_leaves_the_step_without_a_candidate(tmp_path: Path) -> None:
    """Nothing proposed, nothing to quote, no reply passed and the optimizer's example is empty: no
    candidate is gated and the step says so."""
    trainer, _, ob, _ = train(tmp_path, [], [1], n=1, seed=QUOTING, fallback=True)
    st = await trainer.run()
    [step] = st.steps
    assert step.chosen is None and step.strategies == {} and step.gate is None
    assert len([r for r in ob.requests if "reply" in str(r.json_schema)]) == 1  # the example was asked once
    assert step.candidates == 1 and not (tmp_path / "runs/t/candidates").exists()
