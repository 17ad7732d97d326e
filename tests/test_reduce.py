"""A whole-skill replace is reduced, with no model call, to the lines it adds or changes
(core/train/reduce.py), and those land through the same rules as any rewrite (core/train/repair.py)."""

from __future__ import annotations

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import BackendError
from skillsleep.core.shared.records import CompletionRequest, Edit
from skillsleep.core.train.edits import EditLimits, apply_edits
from skillsleep.core.train.quoting import Demands
from skillsleep.core.train.reduce import reduced, whole_skill
from skillsleep.core.train.repair import land

SEED = (
    "---\nname: chat-widget-writer\ndescription: Answer visitors.\n---\n# Chat widget writer\n\n"
    "- Answer the request directly.\n- Use plain, friendly language.\n- Keep replies short.\n"
)
NEW = "The reply must have at most 3 sentences in all."
# what the 1.5B optimizer proposed in the quality bench's brief family (seed 2): the seed again, one line more
WHOLE = (
    "# Chat widget writer\n\n- Answer the request directly.\n- Use plain, friendly language.\n- Keep replies short.\n- "
    + NEW
)


def _whole(content: str, target: str = "SKILL") -> Edit:
    return Edit(op="replace", target=target, content=content, rationale="at most 3 sentences", support=2)


def test_the_seed_again_with_one_line_more_is_that_line_added() -> None:
    skill = Skill.parse(SEED)
    [add] = reduced(skill, _whole(WHOLE))
    assert (add.op, add.target, add.content) == ("add", "", f"- {NEW}")
    assert add.rationale == "at most 3 sentences" and add.support == 2  # the refused edit's own
    assert apply_edits(skill, [add], EditLimits()).skill.text == SEED + f"- {NEW}\n"


def test_a_changed_line_replaces_the_line_it_is_closest_to_and_left_out_lines_stay() -> None:
    skill = Skill.parse(SEED)
    content = "# Chat widget writer\n- Answer the request directly.\n- Keep replies short: three sentences at most."
    [replace] = reduced(skill, _whole(content))
    assert (replace.op, replace.target) == ("replace", "- Keep replies short.")
    after = apply_edits(skill, [replace], EditLimits()).skill.text
    assert "- Keep replies short: three sentences at most." in after and "friendly language" in after


def test_the_frontmatter_headings_and_lines_the_skill_has_give_nothing() -> None:
    skill = Skill.parse(SEED)
    same = "---\nname: other\n---\n# Chat widget writer\n## Rules\n* answer the request directly\n- Keep replies short"
    assert reduced(skill, _whole(same)) == []
    titled = _whole(WHOLE, target="")  # content opening with the skill's title is a whole-skill edit too
    assert whole_skill(skill, titled) and [e.content for e in reduced(skill, titled)] == [f"- {NEW}"]


def test_only_a_whole_skill_replace_without_a_fenced_block_is_reduced() -> None:
    skill = Skill.parse(SEED)
    assert reduced(skill, Edit(op="replace", target="- Keep replies short.", content=NEW)) == []
    assert reduced(skill, Edit(op="add", target="SKILL", content=WHOLE)) == []
    assert reduced(skill, _whole(WHOLE + "\n```\nexample\n```")) == []


def _no_calls(request: CompletionRequest) -> str:
    raise BackendError("the reduction needs no model call")


async def test_a_whole_skill_replace_lands_its_new_line_without_a_repair_call() -> None:
    skill, ledger = Skill.parse(SEED), Ledger()
    llm = LLM(ScriptedBackend(BackendSettings(model="opt"), _no_calls), ledger=ledger)
    whole = _whole(WHOLE)
    landed = await land(llm, skill, [whole], EditLimits(), redactor=Redactor(), demands=Demands())
    assert [e.content for e in landed.applied] == [f"- {NEW}"] and landed.skill.text == SEED + f"- {NEW}\n"
    assert landed.repaired == [(whole, landed.applied[0])] and landed.refused == []
    assert landed.asked == [] and ledger.by_role() == {}  # the repair call was not made
    assert landed.record()["rewrites"] == landed.applied


async def test_a_reduced_line_the_judges_name_is_quoted_and_one_the_rules_refuse_is_remembered() -> None:
    skill, llm = Skill.parse(SEED), LLM(ScriptedBackend(BackendSettings(model="opt"), _no_calls), ledger=Ledger())
    labelled = _whole(WHOLE.replace(f"- {NEW}", "Sport:"))
    landed = await land(llm, skill, [labelled], EditLimits(), redactor=Redactor(), demands=Demands(texts={"Sport:"}))
    assert [e.content for e in landed.applied] == ["Every reply must include a line starting with `Sport:`."]
    long = _whole(WHOLE + "\n" + "x" * 600)  # the new lines' second one is over the edit's character limit
    landed = await land(llm, skill, [long], EditLimits(), redactor=Redactor())
    assert [e.content for e in landed.applied] == [f"- {NEW}"]
    assert [r.edit.content for r in landed.refused] == ["x" * 600] and landed.refused[0].rewrite
