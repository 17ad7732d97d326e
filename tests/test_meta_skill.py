from __future__ import annotations

import json

from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.meta_skill import META_TOKENS, EpochSummary, update_meta_skill


def make_llm(responder, max_tokens: int = 1024) -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(BackendSettings(model="s"), responder)
    return LLM(backend, ledger=Ledger(), max_tokens=max_tokens), backend


SUMMARY = EpochSummary(
    epoch=0,
    start_score=0.25,
    end_score=0.75,
    accepted=[Edit(op="replace", target="Answer in one word.", content="End with ANSWER: x.", support=3)],
    rejected=[
        RejectedEdit(edit=Edit(op="delete", target="Be polite."), stage="gate", before=0.5, after=0.25, epoch=0, step=2)
    ],
    slow_update_counts={"improved": 2, "regressed": 1, "persistent_fail": 0, "stable_success": 4},
)


async def test_meta_update_prompt_shows_the_epoch_and_old_notes():
    llm, backend = make_llm(lambda r: json.dumps({"notes": ["Format fixes helped.", "* Deleting tone lines hurt."]}))
    result = await update_meta_skill(llm, "- Old note.", SUMMARY, max_lines=4)
    assert result.meta == "- Format fixes helped.\n- Deleting tone lines hurt."
    assert result.problem is None
    request = backend.requests[0]
    assert llm.ledger.by_role()["meta"]["calls"] == 1
    text = request.messages[-1].content
    assert "Old note." in text
    assert "Epoch 1" in text and "0.250" in text and "0.750" in text
    assert '"End with ANSWER: x."' in text
    assert '"Be polite."' in text and "before 0.500 → after 0.250" in text
    assert "- regressed: 1" in text
    assert "at most 4 lines" in text
    assert "never sees" in request.messages[0].content


async def test_meta_notes_are_capped_at_max_lines():
    llm, _ = make_llm(lambda r: json.dumps({"notes": [f"note {i}" for i in range(30)]}))
    result = await update_meta_skill(llm, "", SUMMARY, max_lines=12)
    assert len(result.meta.splitlines()) == 12


async def test_parse_error_keeps_old_meta():
    llm, _ = make_llm(lambda r: '{"notes": [')
    result = await update_meta_skill(llm, "- Old note.", SUMMARY)
    assert result.meta == "- Old note."
    assert result.problem and "malformed" in result.problem.line()


async def test_empty_notes_keep_old_meta():
    llm, _ = make_llm(lambda r: json.dumps({"notes": []}))
    result = await update_meta_skill(llm, "- Old note.", SUMMARY)
    assert result.meta == "- Old note." and result.problem


async def test_the_notes_reply_is_capped_below_a_nights_optimizer_limit_and_never_raised():
    """A night's optimizer may answer 2048 tokens; twelve notes need far fewer, and a small model
    that loops would spend minutes filling the rest before the reply is refused as cut off."""
    notes = json.dumps({"notes": ["Quote the literal lines."]})
    for configured, sent in ((2048, META_TOKENS), (512, 512)):
        llm, backend = make_llm(lambda r: notes, max_tokens=configured)
        result = await update_meta_skill(llm, "", SUMMARY)
        assert backend.requests[0].max_tokens == sent and result.meta == "- Quote the literal lines."
