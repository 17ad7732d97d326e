"""An agent CLI as a model provider: one `CompletionRequest` → one headless run of the agent.

`claude-code[:MODEL]` and `codex[:MODEL]` answer any model role (mining, judges, reflect, merge,
rank, repair, dreams, slow update, meta) through the user's own agent and its login, so no API key
is needed (docs/backends.md, "Your agent as the model"). `AgentModelBackend` is what both share:
the request's system messages become the agent's system prompt, its other turns one prompt text,
its JSON schema the agent's structured-output option; the run happens in an empty temporary
folder with a throwaway agent home (no user instructions, hooks, settings, plugins or MCP servers
reach the model), under the concurrency cap and retry loop of `BaseBackend`, and its process group
is killed when the call times out or is cancelled. Each agent's module supplies `prepare()` (argv,
environment, stdin) and `parse()` (its output as an `AgentReply`).

Failures are classified with the agent's `Wording` (failures.py): a rate limit, a 5xx, a dropped
connection or a killed run is a `TransientError` (retried); a refused login is
`BackendUnavailable` naming how to log in; a missing CLI names the install.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from skillsleep.core.models.backends.base import BackendSettings, BaseBackend
from skillsleep.core.shared.errors import BackendError, BackendUnavailable, TransientError
from skillsleep.core.shared.records import Completion, CompletionRequest, Message, Usage
from skillsleep.harnesses.agent_cli import AgentCLI, AgentSettings, CLIResult, HarnessStatus, probe, run_cli, tail
from skillsleep.harnesses.failures import Failure, Wording, classify, explain
from skillsleep.harnesses.run_folder import run_folder

__all__ = ["AgentCall", "AgentModelBackend", "AgentReply", "prompt_text", "system_text"]

DEFAULT_MODEL = "default"  # `claude-code` / `codex` without a model: the agent's own default (no model flag)
DEFAULT_CONCURRENCY = 2  # agent processes at once when a role's `concurrency` is 0
KILL_MARGIN_S = 5.0  # run_cli's own limit beyond the call's (the call's cancellation kills the group first)
_TRANSIENT = {Failure.RATE_LIMIT, Failure.SERVER, Failure.CONNECT, Failure.TIMEOUT, Failure.KILLED}
_LOGIN = {Failure.AUTH, Failure.MISSING_KEY}


@dataclass
class AgentCall:
    """One prepared agent process: its command line, environment and standard input."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes = b""


@dataclass
class AgentReply:
    """What one agent run printed: its answer, or the error it reported (`status`: the HTTP status
    it names); `complete` is False when the output ends before the agent's final record."""

    text: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    finish_reason: str | None = "stop"
    raw_id: str | None = None
    model: str = ""
    error: str | None = None
    status: int | None = None
    complete: bool = True


def system_text(request: CompletionRequest) -> str:
    """The request's system messages, joined: the agent's system prompt."""
    return "\n\n".join(m.content for m in request.messages if m.role == "system")


def prompt_text(messages: list[Message]) -> str:
    """The request's other turns as one prompt: a lone user message as it is, a conversation as
    `User:` / `Assistant:` paragraphs (the agent answers the last one)."""
    turns = [m for m in messages if m.role != "system"]
    if len(turns) == 1 and turns[0].role == "user":
        return turns[0].content
    return "\n\n".join(f"{m.role.capitalize()}: {m.content}" for m in turns)


class AgentModelBackend(BaseBackend):
    """One agent run per call. `settings.base_url` (tests, a proxy) points the agent at another
    model server with `settings.api_key` (or a placeholder); unset, the agent uses its own login.
    `settings.options["command"]` is the CLI's path (default: its name on PATH)."""

    cli: ClassVar[AgentCLI]
    words: ClassVar[Wording]
    login_hint: ClassVar[str]  # how to log the agent in, for a refused login

    def __init__(self, settings: BackendSettings) -> None:
        super().__init__(settings)
        self.env: dict[str, str] | None = None  # the agent's base environment (None: this process's)
        self._status: HarnessStatus | None = None  # its CLI, probed on the first call

    @property
    def model_flag(self) -> str | None:
        """The model to name on the agent's command line; None: the agent's default."""
        return None if self.model in ("", DEFAULT_MODEL) else self.model

    @classmethod
    def status(cls, settings: BackendSettings, env: dict[str, str] | None = None) -> HarnessStatus:
        """Whether the CLI is installed here (and new enough)."""
        return probe(cls.cli, AgentSettings(command=str(settings.options.get("command", ""))), env)

    @classmethod
    def check(cls, settings: BackendSettings) -> tuple[bool, str]:
        """Installed, and logged in (or pointed at a server): one row of `skillsleep backends`."""
        status = cls.status(settings)
        if not status.usable:
            return False, status.reason
        where = f"{status.command} {status.version}"
        if settings.base_url:
            return True, f"{where}, talking to {settings.base_url}"
        login = cls.login_problem(dict(os.environ))
        return (False, f"{where}, but {login}") if login else (True, f"{where}, logged in")

    @classmethod
    def login_problem(cls, env: dict[str, str]) -> str | None:
        """Why the agent has no credentials here (with what to do), or None."""
        return None

    def prepare(self, command: str, request: CompletionRequest, env: dict[str, str], tmp: Path) -> AgentCall:
        """The process for `request` (its state under `tmp`; `env` is the base environment)."""
        raise NotImplementedError

    def parse(self, result: CLIResult) -> AgentReply:
        """The agent's answer in the process's output."""
        raise NotImplementedError

    async def _send(self, request: CompletionRequest) -> Completion:
        if self._status is None:  # probed once per backend: `--version` of a Node CLI costs a process start
            self._status = await asyncio.to_thread(self.status, self.settings, self.env)
        status = self._status
        if not status.usable or not status.command:
            raise BackendUnavailable(f"the {self.name} provider cannot run: {status.reason}")
        base = dict(os.environ if self.env is None else self.env)
        login = None if self.settings.base_url else self.login_problem(base)  # fail at once, not after retries
        if login:
            raise BackendUnavailable(f"the {self.name} provider cannot run: {login}")
        limit = self.settings.retry.timeout_s + KILL_MARGIN_S
        # a run folder (harnesses/run_folder.py): its `work` is empty, so no project instructions are found,
        # and whatever the agent writes about the call anyway is recognised as skillsleep's own at harvest
        with run_folder() as folder:
            call = self.prepare(status.command, request, base, folder.agent)
            result = await run_cli(call.argv, cwd=folder.work, env=call.env, timeout_s=limit, stdin=call.stdin)
        return self.finish(result, limit)

    def finish(self, result: CLIResult, limit: float) -> Completion:
        """The completion in `result`, or the error its failure is (see the module's docstring)."""
        if result.timed_out:
            raise TransientError(explain(Failure.KILLED, self.words, server=self.endpoint, timeout_s=limit))
        reply = self.parse(result)
        if reply.error is not None:
            raise self.failure(reply.error, reply.status)
        if not reply.complete or result.returncode != 0:
            stderr = tail(result.stderr) or "no stderr"
            if result.returncode != 0 and classify(stderr) != Failure.OTHER:
                raise self.failure(stderr, None)
            kind = Failure.NO_RESULT if not reply.complete else Failure.EXIT
            raise BackendError(explain(kind, self.words, stderr, returncode=result.returncode))
        return Completion(
            text=reply.text,
            usage=reply.usage,
            finish_reason=reply.finish_reason,
            raw_id=reply.raw_id,
            model=reply.model or self.model,
            cost_usd=reply.cost_usd,
        )

    def failure(self, detail: str, status: int | None) -> BackendError:
        """The error an agent's reported failure is: retried, a login to do, or permanent."""
        kind = classify(detail, status=status)
        if kind in _LOGIN and not self.settings.base_url:
            return BackendUnavailable(f"{self.words.name} is not logged in ({detail[:300]}): {self.login_hint}")
        message = explain(kind, self.words, detail[:600], server=self.endpoint).rstrip(".")
        if kind in _TRANSIENT:
            return TransientError(message)
        return BackendError(message)
