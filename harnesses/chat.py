"""The direct-chat harness: the skill is the system prompt, the task is the user turn.

With a `log_dir`, every episode is appended as one line of the chat-log format that
`harnesses.chat_logs.parse_chat_log` reads:

    {"messages": [system?, user, assistant], "model": <model>, "provider": <backend>,
     "harness": "chat", "task_id": …, "sample": …, "time": <ISO UTC>, "created": <unix s>,
     "usage": {"prompt_tokens", "completion_tokens", "total_tokens",
               "prompt_tokens_details": {"cached_tokens"}}, "cached": <from the response cache>}

to `<log_dir>/YYYY-MM-DD.jsonl` (the UTC day of the episode). `created` repeats `time` as the
OpenAI field the chat-log reader takes a session's start from. Each line is one `os.write` on
a descriptor opened with O_APPEND, so concurrent episodes — in this process or another —
never interleave. A failure to write the log never fails the episode: it is reported once per
harness through `on_log_error` (default: `warnings.warn(..., RuntimeWarning)`), later failures
are only counted in `log_failures`. The train/eval commands log to `<data dir>/chat-logs`,
which harvest never reads.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import PRIVATE_FILE, private_dir
from skillsleep.core.shared.records import Completion, CompletionRequest, Message, Run, Task
from skillsleep.harnesses.agent_cli import task_text


def chat_messages(task: Task, skill: Skill) -> list[Message]:
    """The messages one direct-chat episode sends (frontmatter is metadata, not prompt)."""
    system = skill.body.strip()
    messages = [Message(role="system", content=system)] if system else []
    return [*messages, Message(role="user", content=task_text(task))]


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=2)


class ChatHarness:
    """Runs a task as one chat completion through any backend of the engine.

    `log_dir`: where to append each episode as a chat-log line (None: no log, e.g. unit tests).
    `on_log_error`: gets one plain-words message the first time a log line cannot be written.
    """

    name = "chat"

    def __init__(
        self,
        llm: LLM,
        *,
        log_dir: Path | None = None,
        on_log_error: Callable[[str], None] | None = None,
    ) -> None:
        self.llm = llm
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.on_log_error = on_log_error or _warn
        self.log_failures = 0

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run:
        """One episode; `timeout_s` limits each attempt of the model call, not time spent queued.
        A backend that keeps failing is systemic and raises (see `Harness`)."""
        request = self.request(task, skill, sample=sample)
        completion = await self.llm.complete("target", request, timeout_s=timeout_s)
        return self.finish(task, sample, request, completion)

    def request(self, task: Task, skill: Skill, *, sample: int = 0) -> CompletionRequest:
        """The request one episode sends (a cluster's driver checks its cache key before dispatch)."""
        return self.llm.request(chat_messages(task, skill), sample=sample)

    def finish(self, task: Task, sample: int, request: CompletionRequest, completion: Completion) -> Run:
        """The episode's Run from the model's answer, appended to the chat log when there is one."""
        if self.log_dir is not None:
            self._log(self.log_dir, task, sample, request.messages, completion)
        return Run(
            response=completion.text,
            usage=completion.usage,
            cost_usd=self.llm.ledger.cost(self.llm.backend.name, self.llm.backend.model, completion.usage),
            latency_s=completion.latency_s,
        )

    def _log(self, log_dir: Path, task: Task, sample: int, messages: list[Message], completion: Completion) -> None:
        now = datetime.now(UTC)
        path = log_dir / f"{now:%Y-%m-%d}.jsonl"
        data = (json.dumps(self._record(task, sample, messages, completion, now), ensure_ascii=False) + "\n").encode()
        try:
            private_dir(log_dir)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
            try:
                written = os.write(fd, data)
            finally:
                os.close(fd)
            if written != len(data):
                raise OSError(f"only {written} of {len(data)} bytes were written (is the disk full?)")
        except OSError as exc:
            self.log_failures += 1
            if self.log_failures == 1:
                self.on_log_error(
                    f"could not append to the chat log {path} ({exc}); episodes still run, but are not logged "
                    "until it is writable — check that folder's permissions and free space"
                )

    def _record(
        self, task: Task, sample: int, messages: list[Message], completion: Completion, now: datetime
    ) -> dict[str, Any]:
        usage = completion.usage
        return {
            "messages": [*(m.model_dump() for m in messages), {"role": "assistant", "content": completion.text}],
            "model": completion.model or self.llm.backend.model,
            "provider": self.llm.backend.name,
            "harness": self.name,
            "task_id": task.id,
            "sample": sample,
            "time": now.isoformat(),
            "created": int(now.timestamp()),
            "usage": {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.total,
                "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
            },
            "cached": completion.cached,
        }
