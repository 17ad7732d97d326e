"""Ties teach (issue 27): an edit the gate rejected without moving any held-out task was applied and
the target did not follow it. It is remembered as such (stage "ignored": not a refusal, not a
regression), shown to the next reflection with the instruction to try another form of instruction,
dropped before ranking when proposed again in the same words on any skill text (the drop recorded),
and named in the report in words. A regression, and a tie of several edits together, are
remembered as before. Files written before (tests/fixtures/ties_before/, by skillsleep 74ec757 on
the tie below) still load, their tie a gate rejection as it was written.

The scripted world is tests/test_trainer.py's (real SQLite store): the target ends its reply with an
ANSWER line only when the skill asks for one, so "Be brief." changes nothing (every held-out task
0.000 → 0.000) and "Reply in French only." breaks a skill that passed (1.000 → 0.000)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.prompts import describe_memory
from skillsleep.core.night.nights import Nights, SkillMemory
from skillsleep.core.report.files import read_json, render_json, report_files
from skillsleep.core.shared.records import CompletionRequest, Edit, GateDecision
from skillsleep.core.shared.rejected import IGNORED, RejectedEdit
from skillsleep.core.train.gate import GateConfig, decide, untouched
from skillsleep.core.train.memory import drop_remembered, unfollowed
from skillsleep.core.train.state import TrainState
from tests.sleep_kit import Recorder, optimizer_rules
from tests.test_night_engine import (
    live_file,
    night,
    root,  # noqa: F401  (a fixture: pytest finds it by name)
    settings,
)
from tests.test_repair import HEADING, PASSING, Optimizer, calls, config
from tests.test_repair import IGNORED as BRIEF
from tests.test_report import full_report
from tests.test_trainer import BAD, RULE, build

BEFORE = Path(__file__).parent / "fixtures" / "ties_before"
FORMS = ("a template of the reply to fill in", "a short example reply", "an exact count", "a fixed order")


def section(prompt: str) -> str:
    """The reflection's section of rejected and refused edits."""
    return prompt.split("## Edits already rejected or refused")[1].split("## The skill")[0]


class Sequence(Optimizer):
    """The optimizer of tests/test_repair.py, proposing `per_step[i]` at the i-th reflection."""

    def __init__(self, *per_step: tuple[str, ...], rewrite: str | None = RULE) -> None:
        super().__init__(rewrite, findings=per_step[0])
        self.per_step = per_step

    def __call__(self, request: CompletionRequest) -> str:
        if (request.json_schema or {}).get("required") == ["findings"]:
            self.findings = self.per_step[min(len(self.prompts["findings"]), len(self.per_step) - 1)]
        return super().__call__(request)


# --- what a tie is -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "moved_nothing"),
    [
        ({"a": 0.0, "b": 0.0}, {"a": 0.0, "b": 0.0}, True),  # the target ignored it (the 0 → 0)
        ({"a": 0.5, "b": 1.0}, {"a": 0.5 + 1e-12, "b": 1.0}, True),  # float noise is no move
        ({"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 0.0}, False),  # a mean tie, but two tasks moved
        ({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, False),  # every task at the top: nothing could move
        ({"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.0}, False),  # a regression
        ({"a": 0.0, "b": 0.0}, {"a": 1.0, "b": 0.0}, False),  # accepted
    ],
)
def test_a_tie_is_a_rejected_candidate_that_moved_no_held_out_task(
    before: dict[str, float], after: dict[str, float], moved_nothing: bool
) -> None:
    decision = decide(GateConfig(), before, after, baseline_hash="a", candidate_hash="b")
    assert untouched(decision) is moved_nothing
    without_tasks = decision.model_copy(update={"deltas": []})
    assert not untouched(without_tasks)  # no per-task scores: nothing to tell


def test_only_an_add_or_a_replace_gated_alone_counts_as_not_followed() -> None:
    tie = decide(GateConfig(), {"a": 0.0}, {"a": 0.0}, baseline_hash="a", candidate_hash="b")
    worse = decide(GateConfig(), {"a": 1.0}, {"a": 0.0}, baseline_hash="a", candidate_hash="c")
    brief, french = Edit(op="add", content=BRIEF), Edit(op="add", content=BAD)
    replace = Edit(op="replace", target="- Read the question.", content=BRIEF)
    delete = Edit(op="delete", target="- Read the question.")
    assert unfollowed([([brief], tie), ([replace], tie)]) == [(brief, tie), (replace, tie)]
    assert unfollowed([([brief, french], tie)]) == []  # in company one edit can mask another
    assert unfollowed([([delete], tie)]) == []  # a line removed that changed nothing is no rule ignored
    assert unfollowed([([french], worse)]) == []


# --- remembered, shown, dropped ----------------------------------------------------------------


async def test_a_tie_is_remembered_as_ignored_not_as_refused_nor_as_a_regression(tmp_path: Path) -> None:
    trainer, _, _ = build(config(tmp_path, 1), tmp_path, Optimizer(findings=(BRIEF,)))
    st = await trainer.run()
    (gate,) = [s.gate for s in st.steps]
    assert gate and not gate.accepted and gate.reason.startswith("no improvement")
    (memory,) = st.rejected
    assert (memory.stage, memory.edit.content, memory.before, memory.after) == ("ignored", BRIEF, 0.0, 0.0)
    assert memory.reason == f"{IGNORED}: none of the 4 held-out task(s) scored differently"
    assert memory.why() == memory.reason and memory.skill is None and (memory.epoch, memory.step) == (0, 0)
    saved = json.loads((tmp_path / "runs/t/state.json").read_text())["rejected"]
    assert [(r["stage"], r["before"], r["after"]) for r in saved] == [("ignored", 0.0, 0.0)]
    assert TrainState.model_validate_json((tmp_path / "runs/t/state.json").read_bytes()).rejected == st.rejected


async def test_the_next_reflection_is_shown_the_ignored_edit_and_asked_for_another_form(tmp_path: Path) -> None:
    opt = Sequence((BRIEF,), (RULE,))
    trainer, _, _ = build(config(tmp_path, 2), tmp_path, opt)
    await trainer.run()
    first, later = map(section, opt.prompts["findings"])
    assert "(none)" in first and "did not follow" not in first
    assert f'content: "{BRIEF}"' in later
    assert "result: applied, but the target did not follow it: no held-out task scored differently" in later
    assert "The same instruction in other words will be ignored too" in later
    assert all(form in later for form in FORMS), later
    steps = opt.prompts["findings"][1].split("## Earlier steps of this epoch")[1].split("##")[0]
    assert f"step 1: rejected — applied; the target did not follow it (0.000 → 0.000): add '{BRIEF}'" in steps


async def test_the_same_words_proposed_again_are_dropped_before_ranking_on_any_skill_text(tmp_path: Path) -> None:
    # step 1: ignored; step 2: the rule is accepted (a new skill text); step 3: the same words again
    opt, ledger = Sequence((BRIEF,), (RULE,), ("  be   BRIEF. ",)), Ledger()
    trainer, tb, _ = build(config(tmp_path, 3), tmp_path, opt, ledger=ledger)
    st = await trainer.run()
    first, second, third = st.steps
    assert first.gate and not first.gate.accepted and second.gate and second.gate.accepted
    assert third.selected == [] and third.gate is None and RULE in st.current and BRIEF not in st.current
    (dropped,) = [r for r in third.skipped if r.stage == "memory"]
    assert dropped.edit.content == "  be   BRIEF. " and dropped.reason == (
        "dropped before ranking, applied before (epoch 1, step 1) and the target did not follow it: "
        "the same words would not move it either"
    )
    saved = json.loads((tmp_path / "runs/t/steps/e0s2/step.json").read_text())["skipped"]
    assert [(s["stage"], s["reason"]) for s in saved] == [("memory", dropped.reason)]
    assert sum(BRIEF in r.messages[0].content for r in tb.requests) == len(trainer.val)  # gated once


def test_an_ignored_add_is_its_words_wherever_it_would_go() -> None:
    """The 0.5B optimizer proposed an ignored reminder note again as a skill line "after" itself (an
    anchor the skill lacks: the end of the body), and it was gated a second time."""
    line = "The sentence is plausible."
    ignored = RejectedEdit(edit=Edit(op="add", content=line, kind="execution_lapse"), stage="ignored", reason="tie")
    again = Edit(op="add", target=line, content=f" {line.upper()} ", kind="skill_defect")
    elsewhere = Edit(op="add", target="- Read the question.", content=line)
    kept, dropped = drop_remembered([again, elsewhere], [ignored], Skill.parse("# S\n\n- Read the question.\n"))
    assert kept == [] and [d.edit for d in dropped] == [again, elsewhere]
    replaced = RejectedEdit(edit=Edit(op="replace", target="- a", content=line), stage="ignored", reason="tie")
    other = Edit(op="replace", target="- b", content=line)
    assert drop_remembered([other], [replaced], Skill.parse("# S\n\n- a\n- b\n"))[0] == [other]  # another line


def test_an_ignored_rule_again_without_its_full_stop_is_the_same_words() -> None:
    """`language` seed 1 (1.5B optimizer): step 2 proposed step 1's ignored rule again, the full stop
    dropped, and it was gated a second time (0.00 → 0.00 again)."""
    rule = "The reply must be written in Spanish (the students read Spanish), even though the problem is in English."
    ignored = RejectedEdit(edit=Edit(op="add", content=rule), stage="ignored", reason="tie")
    skill = Skill.parse("# S\n\n- Read the question.\n")
    again = [Edit(op="add", content=rule.rstrip(".")), Edit(op="add", content=rule[:-1] + "!  ")]
    kept, dropped = drop_remembered(again, [ignored], skill)
    assert kept == [] and [d.edit for d in dropped] == again
    other = [Edit(op="add", content=rule[:-1] + " (use Spanish numerals)."), Edit(op="add", content=rule + "\nAnswer:")]
    assert drop_remembered(other, [ignored], skill)[0] == other  # more words, or another line, are not the same
    stop = RejectedEdit(edit=Edit(op="replace", target="- a.", content="- b."), stage="ignored", reason="tie")
    line = Edit(op="replace", target="- a", content="- b")  # the line it changes must be the line, as it is
    assert drop_remembered([line], [stop], Skill.parse("# S\n\n- a\n- a.\n"))[0] == [line]


async def test_a_repair_the_target_ignored_is_remembered_with_its_proposal_and_both_are_dropped(
    tmp_path: Path,
) -> None:
    opt, ledger = Optimizer(BRIEF), Ledger()  # the heading is refused and repaired into "Be brief."
    trainer, _, _ = build(config(tmp_path, 2), tmp_path, opt, ledger=ledger)
    st = await trainer.run()
    first, second = st.steps
    assert [e.content for e in first.applied] == [BRIEF] and first.gate and not first.gate.accepted
    by_content = {r.edit.content: r for r in st.rejected}
    original, repair = by_content[HEADING], by_content[BRIEF]
    assert (original.stage, repair.stage) == ("ignored", "ignored") and original.repair == repair.edit
    assert original.reason == f"its repair was {IGNORED}: none of the 4 held-out task(s) scored differently"
    assert calls(ledger, "repair") == 1 and second.selected == [] and second.gate is None
    assert any(
        r.stage == "memory" and r.reason.startswith("dropped before ranking, its repair was applied before")
        for r in second.skipped
    )
    shown = section(opt.prompts["findings"][1])  # the pair once: the proposal, its repair, what became of it
    assert shown.count("## Answer") == 1 and shown.count(BRIEF) == 1
    assert "then repaired as" in shown and "and the repair was applied, but the target did not follow it" in shown


async def test_a_repair_in_the_words_of_an_ignored_edit_is_held_back_not_gated_again(tmp_path: Path) -> None:
    # step 1: "Be brief." is applied and ignored; step 2: a refused heading is repaired into "Be brief."
    opt, ledger = Sequence((BRIEF,), (HEADING,), rewrite=f"  {BRIEF.upper()} "), Ledger()
    trainer, tb, _ = build(config(tmp_path, 2), tmp_path, opt, ledger=ledger)
    st = await trainer.run()
    first, second = st.steps
    assert first.gate and not first.gate.accepted and [e.content for e in first.applied] == [BRIEF]
    assert calls(ledger, "repair") == 1 and BRIEF not in st.current
    assert all(e.content != f"  {BRIEF.upper()} " for e in second.applied)
    (held,) = [r for r in second.skipped if r.stage == "memory"]
    assert held.rewrite and held.edit.content == f"  {BRIEF.upper()} "
    assert held.reason == (
        "held back from the repair, applied before (epoch 1, step 1) and the target did not follow it: "
        "the same words would not move it either"
    )
    saved = json.loads((tmp_path / "runs/t/steps/e0s1/step.json").read_text())["skipped"]
    assert [(s["stage"], s.get("rewrite")) for s in saved if s.get("stage") == "memory"] == [("memory", True)]
    assert sum("be brief" in r.messages[0].content.lower() for r in tb.requests) == len(trainer.val)  # gated once
    # the fix the heading's refusal names is other words: tried (and, ignored too, remembered with it)
    (fix,) = second.applied
    assert fix.content.startswith("Every reply must include the heading `## Answer`")
    (original,) = [r for r in st.rejected if r.edit.content == HEADING]
    assert original.stage == "ignored" and original.repair == fix


async def test_a_regression_and_a_tie_in_company_are_remembered_as_gate_rejections_as_before(
    tmp_path: Path,
) -> None:
    opt = Optimizer(findings=(BAD,))
    trainer, _, _ = build(config(tmp_path / "worse", 2), tmp_path / "worse", opt)
    trainer.seed_skill = PASSING
    st = await trainer.run()
    (memory,) = st.rejected
    assert (memory.stage, memory.before, memory.after) == ("gate", 0.75, 0.0) and memory.skill == PASSING.hash
    assert "rejected by the gate" in section(opt.prompts["findings"][1])
    assert "did not follow" not in opt.prompts["findings"][1]
    # two edits gated together tie: neither is known to be ignored ("Reply in French only." masks the other)
    trainer, _, _ = build(config(tmp_path / "both", 1, edits=2), tmp_path / "both", Optimizer(findings=(BRIEF, BAD)))
    st = await trainer.run()
    assert sorted((r.stage, r.edit.content, r.skill) for r in st.rejected) == [
        ("gate", BRIEF, None),
        ("gate", BAD, None),
    ]


async def test_with_several_candidates_the_edit_that_tied_alone_is_the_one_remembered_as_ignored(
    tmp_path: Path,
) -> None:
    cfg = config(tmp_path, 1, edits=2)
    # the clip, the quoted literal (no worked example comes back), then the first ranked edit alone
    cfg = cfg.model_copy(update={"train": cfg.train.model_copy(update={"candidates": 3})})
    trainer, _, _ = build(cfg, tmp_path, Optimizer(findings=(BRIEF, BAD)))
    st = await trainer.run()
    assert st.steps[0].strategies == {1: "optimizer", 2: "quoted literals", 3: "optimizer"}
    by_content = {r.edit.content: r for r in st.rejected}
    assert by_content[BRIEF].stage == "ignored" and by_content[BAD].stage == "gate"  # only "Be brief." gated alone


# --- on disk, in files of earlier versions, in the report --------------------------------------


def test_an_ignored_entry_is_written_with_its_stage_and_scores_and_a_skills_memory_keeps_it(tmp_path: Path) -> None:
    entry = RejectedEdit(
        edit=Edit(op="add", content=BRIEF),
        stage="ignored",
        reason=f"{IGNORED}: x",
        before=0.0,
        after=0.0,
        epoch=0,
        step=1,
    )
    assert entry.model_dump(mode="json") == {
        "edit": Edit(op="add", content=BRIEF).model_dump(mode="json"),
        "stage": "ignored",
        "reason": f"{IGNORED}: x",
        "before": 0.0,
        "after": 0.0,
        "epoch": 0,
        "step": 1,
    }
    nights = Nights(tmp_path)
    memory = nights.memory("/skills/sums/SKILL.md")
    memory.rejected = [entry]
    nights.save_memory(memory)
    assert Nights(tmp_path).memory("/skills/sums/SKILL.md").rejected == [entry]


def test_files_written_before_ties_taught_load_with_their_tie_a_gate_rejection_as_written() -> None:
    st = TrainState.model_validate_json((BEFORE / "state.json").read_bytes())
    (tie,) = st.rejected
    assert (tie.stage, tie.before, tie.after) == ("gate", 0.0, 0.0) and tie.skill == Skill(st.seed_skill).hash
    assert st.steps[0].gate and st.steps[0].gate.deltas  # the per-task scores are in the step, not the entry
    memory = SkillMemory.model_validate_json((BEFORE / "memory.json").read_bytes())
    assert memory.rejected == st.rejected
    assert describe_memory(memory.rejected) + "\n" == (BEFORE / "memory_prompt.txt").read_text()  # shown as before
    again = Edit(op="add", content=BRIEF)
    assert drop_remembered([again], memory.rejected, Skill(st.seed_skill))[0] == []  # dropped where it was
    assert drop_remembered([again], memory.rejected, Skill("# Other\n"))[0] == [again]  # and only there


def test_the_report_names_an_ignored_edit_in_words_a_user_understands() -> None:
    ignored = RejectedEdit(
        edit=Edit(op="add", content="Answers must be at most 300 characters."),
        stage="ignored",
        reason=f"{IGNORED}: none of the 4 held-out task(s) scored differently",
        before=0.25,
        after=0.25,
    )
    r = full_report()
    r = r.model_copy(update={"rejected_edits": [*r.rejected_edits, ignored]})
    files = report_files(r)
    words = "applied; the target did not follow it: none of the 4 held-out task(s) scored differently"
    assert f"add “Answers must be at most 300 characters.” — {words} (0.250 → 0.250)" in files["report.md"]
    assert "2 rejected by the gate (1 of them applied; the target did not follow them)" in files["report.md"]
    assert (
        words in files["report.html"] and "(1 of them applied; the target did not follow them)" in files["report.html"]
    )
    written = json.loads(files["report.json"])["rejected_edits"]
    assert [e.get("stage") for e in written] == [None, "ignored"]  # a gate rejection keeps its layout
    assert read_json(render_json(r)) == r
    decision = GateDecision(
        baseline=0.0, candidate=0.0, accepted=False, reason="x", baseline_hash="a", candidate_hash="b"
    )
    assert not untouched(decision)


# --- across nights ------------------------------------------------------------------------------


def test_a_night_reports_the_ignored_edit_and_the_next_night_drops_it_and_asks_for_another_form(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    brief = {"kind": "skill_defect", "diagnosis": "too long", "op": "add", "target": "", "content": BRIEF}
    (root / "opt.json").write_text(json.dumps(optimizer_rules(findings=[brief])))
    skill = live_file(root)
    rec = Recorder(monkeypatch)
    first = night(root, settings(root), skill)
    assert first.outcome == "rejected"
    (reported,) = first.rejected_edits
    assert reported.stage == "ignored" and reported.reason.startswith(IGNORED)
    report = next((root / "data").rglob("report.md")).read_text()
    assert f"add “{BRIEF}” — applied; the target did not follow it: none of the" in report
    assert "(1 of them applied; the target did not follow them)" in report
    (memory,) = Nights(root / "data").memory(skill.key()).rejected
    assert memory.stage == "ignored" and memory.edit.content == BRIEF and memory.skill is None
    rec.seen.clear()
    second = night(root, settings(root), skill)
    assert second.night == 2 and second.outcome == "no-candidate"
    assert second.reason.startswith("none of the") and "the target did not follow some of them before" in second.reason
    assert not any(BRIEF in text for text in rec.texts("target"))  # dropped before ranking, never gated again
    reflections = rec.texts("reflect")
    assert reflections and all("applied, but the target did not follow it" in t for t in reflections)
    assert all(all(form in t for form in FORMS) for t in reflections)
    steps = sorted((root / "data").rglob("step.json"), key=lambda p: p.stat().st_mtime)
    skipped = json.loads(steps[-1].read_text())["skipped"]
    assert any(s["stage"] == "memory" and "the target did not follow it" in s["reason"] for s in skipped)
