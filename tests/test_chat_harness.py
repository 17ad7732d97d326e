"""The direct-chat harness: the skill is the system prompt, the task the user turn."""

from __future__ import annotations

import asyncio

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings, RetryPolicy
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.models.ledger import Ledger, Price
from skillsleep.core.models.llm import LLM
from skillsleep.core.shared.errors import RetriesExhausted
from skillsleep.core.shared.records import Completion, CompletionRequest, Task
from skillsleep.harnesses.chat import ChatHarness, chat_messages

SKILL = Skill.parse("---\nname: s\n---\n# Rules\n\n- Be brief.\n")


def test_the_body_is_the_system_prompt_and_frontmatter_stays_out() -> None:
    msgs = chat_messages(Task(id="t", prompt="Q?", context="ctx"), SKILL)
    assert msgs[0].role == "system" and msgs[0].content == "# Rules\n\n- Be brief."
    assert msgs[1].role == "user" and msgs[1].content == "ctx\n\nQ?"


async def test_run_returns_text_usage_and_cost() -> None:
    backend = ScriptedBackend(BackendSettings(model="m"), ["fine"])
    llm = LLM(backend, ledger=Ledger(prices={"scripted:m": Price(input=1e6, output=1e6)}))
    run = await ChatHarness(llm).run(Task(id="t", prompt="Q?"), SKILL, sample=2)
    assert run.response == "fine" and run.error is None
    assert run.usage.total > 0 and run.cost_usd == run.usage.total
    assert backend.requests[0].sample == 2


class Slow(ScriptedBackend):
    """Takes `delay` seconds per answer, one at a time."""

    def __init__(self, delay: float) -> None:
        super().__init__(BackendSettings(model="m", concurrency=1, retry=RetryPolicy(attempts=1)), lambda r: "ok")
        self.delay = delay

    async def _send(self, request: CompletionRequest) -> Completion:
        await asyncio.sleep(self.delay)
        return await super()._send(request)


async def test_time_queued_behind_other_calls_does_not_count_against_the_timeout() -> None:
    harness = ChatHarness(LLM(Slow(0.1), ledger=Ledger()))
    tasks = [Task(id=f"t{i}", prompt=f"Q{i}?") for i in range(5)]
    runs = await asyncio.gather(*(harness.run(t, SKILL, timeout_s=0.3) for t in tasks))
    assert all(r.response == "ok" and r.error is None for r in runs)


async def test_a_call_slower_than_the_timeout_fails_with_a_clear_error() -> None:
    harness = ChatHarness(LLM(Slow(0.5), ledger=Ledger()))
    with pytest.raises(RetriesExhausted, match="no answer within"):
        await harness.run(Task(id="t", prompt="Q?"), SKILL, timeout_s=0.1)
