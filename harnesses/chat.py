"""The direct-chat harness: the skill is the system prompt, the task is the user turn."""

from __future__ import annotations

from skillsleep.core.llm import LLM
from skillsleep.core.records import Message, Run, Task
from skillsleep.core.skill import Skill


def chat_messages(task: Task, skill: Skill) -> list[Message]:
    """The messages one direct-chat episode sends (frontmatter is metadata, not prompt)."""
    system = skill.body.strip()
    user = task.prompt if not task.context else f"{task.context}\n\n{task.prompt}"
    messages = [Message(role="system", content=system)] if system else []
    return [*messages, Message(role="user", content=user)]


class ChatHarness:
    """Runs a task as one chat completion through any backend of the engine."""

    name = "chat"

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run:
        """One episode; `timeout_s` limits each attempt of the model call, not time spent queued.
        A backend that keeps failing is systemic and raises (see `Harness`)."""
        request = self.llm.request(chat_messages(task, skill), sample=sample)
        completion = await self.llm.complete("target", request, timeout_s=timeout_s)
        return Run(
            response=completion.text,
            usage=completion.usage,
            cost_usd=self.llm.ledger.cost(self.llm.backend.name, self.llm.backend.model, completion.usage),
            latency_s=completion.latency_s,
        )
