"""A line that is one task's expected answer is refused before it is applied, and the repair call is
asked for the rule (the 1.5B optimizer's `ANSWER: True` on the reasoning family of bench/quality.py);
a bare `ANSWER: 7` under a judge that names the answer line is quoted by its label instead
(core/train/quoting.py). On the scripted backend (chosen by name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.records import Check, Edit, Judge, Task
from skillsleep.core.train.answers import is_answer_line, states_answer
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.edits import EditLimits
from skillsleep.core.train.literals import answer_lines
from skillsleep.core.train.repair import land
from tests.test_repair import Optimizer, calls, config
from tests.test_trainer import RULE, SEED, build

BOOLEAN = Judge(
    checks=[Check(type="last_line_regex", value=r"ANSWER: (True|False)\.?")],
    answer_pattern=r"ANSWER:\s*(.+?)\s*$",
    answer_match="normalized",
)


def boolean_tasks(*answers: str) -> list[Task]:
    return [
        Task(id=f"b{i}", prompt="not ( True ) and ( True ) is", judge=BOOLEAN.model_copy(update={"answer": a}))
        for i, a in enumerate(answers)
    ]


def test_a_line_is_an_answer_only_when_all_of_it_is_one() -> None:
    judge = BOOLEAN.model_copy(update={"answer": "True"})
    assert is_answer_line(judge, "ANSWER: True") and is_answer_line(judge, "  ANSWER: true ")
    assert not is_answer_line(judge, "ANSWER: False")
    assert not is_answer_line(judge, "End your reply with a final line `ANSWER: True` or `ANSWER: False`.")
    assert not is_answer_line(judge, "ANSWER: <answer>") and not is_answer_line(judge, "")
    assert not is_answer_line(Judge(checks=[Check(type="contains", value="x")]), "x")  # no expected answer
    plain = Judge(answer="Paris")  # no answer_pattern: the whole reply is the answer
    assert is_answer_line(plain, "Paris.") and not is_answer_line(plain, "The capital is Paris")


@pytest.mark.parametrize(
    ("op", "content", "refused"),
    [
        ("add", "ANSWER: True", True),
        ("add", "- ANSWER: True", True),  # as a list item of the skill
        ("replace", "ANSWER: False", True),
        ("add", "Each `not` flips the value after it.", False),
        ("add", "End your reply with a final line `ANSWER: True` or `ANSWER: False`.", False),
        ("add", "ANSWER: maybe", False),  # no task's answer
        ("replace", "- Give the result at once, without working. ANSWER: True", True),  # stated in its form
        ("add", "If it is `not False`, the last line is `ANSWER: True`.", False),  # quoted: a format literal
        ("delete", "ANSWER: True", False),
    ],
)
def test_an_answer_some_tasks_expect_and_others_do_not_is_refused(op: str, content: str, refused: bool) -> None:
    refuse = answer_lines(boolean_tasks("True", "False", "True", "False"))
    edit = Edit(op=op, target="- Read the question." if op != "add" else "", content=content)  # type: ignore[arg-type]
    why = refuse(edit)
    assert (why is not None) == refused
    if why is not None:
        assert "expected answer of 2 of this batch's 4 tasks" in why and "rule" in why


def test_an_answer_is_stated_only_in_its_form_and_outside_backticks() -> None:
    judge = BOOLEAN.model_copy(update={"answer": "True"})
    assert states_answer(judge, "Answer at once. ANSWER: True") and not states_answer(
        judge, "Answer at once. ANSWER: False"
    )
    assert not states_answer(judge, "End with `ANSWER: True` or `ANSWER: False`.")
    assert not states_answer(judge, "The answer is True.")  # not in the answer's form
    assert not states_answer(Judge(answer="Paris"), "ANSWER: Paris")  # no answer form to look for


def test_an_answer_every_task_shares_or_a_single_task_is_not_refused() -> None:
    assert answer_lines(boolean_tasks("True", "True", "True"))(Edit(op="add", content="ANSWER: True")) is None
    assert answer_lines(boolean_tasks("True"))(Edit(op="add", content="ANSWER: True")) is None


async def test_the_refused_answer_goes_to_the_repair_call_with_its_reason() -> None:
    opt = Optimizer(rewrite="Each `not` flips the value after it.")
    llm = LLM(ScriptedBackend(BackendSettings(model="opt"), opt), ledger=Ledger())
    edit = Edit(op="add", content="ANSWER: True", rationale="the failures expected True")
    landed = await land(
        llm,
        Skill(SEED),
        [edit],
        EditLimits(max_edits=2),
        redactor=Redactor(),
        refuse=answer_lines(boolean_tasks("True", "False", "False")),
    )
    assert (
        landed.asked
        and landed.asked[0].edit is edit
        and "expected answer of 1 of this batch's 3" in landed.asked[0].reason
    )
    assert [e.content for e in landed.applied] == ["Each `not` flips the value after it."]
    assert landed.refused == [] and "ANSWER: True" not in landed.skill.text
    assert "expected answer of 1 of this batch's 3 tasks" in opt.prompts["rewrites"][0]


def every_train_task(tmp_path: Path, steps: int) -> TrainConfig:
    """A batch of all six train tasks (answers 3, 5, 7, 9, 11, 13): `ANSWER: 7` is one task's answer."""
    cfg = config(tmp_path, steps)
    return cfg.model_copy(update={"train": cfg.train.model_copy(update={"batch_size": 6, "minibatch_size": 6})})


async def test_a_rewrite_copying_the_prompts_line_number_and_the_answer_stays_refused() -> None:
    # the 1.5B's repair on bench/quality.py's reasoning family: the numbered line copied, the answer appended
    opt = Optimizer(rewrite="  4| - Read the question. ANSWER: True")
    llm = LLM(ScriptedBackend(BackendSettings(model="opt"), opt), ledger=Ledger())
    edit = Edit(op="add", content="ANSWER: True")
    landed = await land(
        llm, Skill(SEED), [edit], EditLimits(), redactor=Redactor(), refuse=answer_lines(boolean_tasks("True", "False"))
    )
    assert [e.content for e in landed.rewrites] == ["- Read the question. ANSWER: True"]  # the number dropped
    assert landed.applied == [] and landed.refused == landed.asked and landed.asked[0].edit is edit
    assert any(r.rewrite and "expected answer of 1 of this batch's 2" in r.reason for r in landed.skipped)


async def test_a_step_proposing_one_tasks_answer_lands_the_label_rule_without_a_call(tmp_path: Path) -> None:
    """The judges name the answer line (`ANSWER: .+`): `ANSWER: 7` is quoted by its label alone, a rule
    that states no answer, and lands with no repair call (core/train/quoting.py)."""
    opt, ledger = Optimizer(rewrite=RULE, findings=("ANSWER: 7",)), Ledger()
    trainer, _, _ = build(every_train_task(tmp_path, 1), tmp_path, opt, ledger=ledger)
    st = await trainer.run()
    step = st.steps[0]
    label_rule = "Every reply must include a line starting with `ANSWER:`."
    assert [e.content for e in step.applied] == [label_rule] and step.gate is not None and step.gate.accepted
    assert calls(ledger, "repair") == 0 and "ANSWER: 7" not in st.current


async def test_an_answer_stated_in_a_sentence_goes_to_the_repair_and_its_answer_rewrite_is_quoted(
    tmp_path: Path,
) -> None:
    """A sentence stating one task's answer is no literal line: refused as an answer, the repair asked;
    its rewrite `ANSWER: 9` (another task's answer) is quoted by its label, so no answer lands."""
    sentence = "- Give the result at once. ANSWER: 7"
    opt, ledger = Optimizer(rewrite="ANSWER: 9", findings=(sentence,)), Ledger()
    trainer, _, _ = build(every_train_task(tmp_path, 1), tmp_path, opt, ledger=ledger)
    st = await trainer.run()
    step = st.steps[0]
    assert calls(ledger, "repair") == 1
    assert "expected answer of 1 of this batch's 6 tasks" in opt.prompts["rewrites"][0]
    assert [e.content for e in step.applied] == ["Every reply must include a line starting with `ANSWER:`."]
    assert "ANSWER: 9" not in st.current and "ANSWER: 7" not in st.current
