"""The path every agent CLI replay follows (docs/agents.md has each agent's recipe):

    a slot → a usable CLI → its key set → a run folder (run_folder.py: a temporary working copy and
    agent state, whose sessions harvest never stores) → argv and env
    → the process (its group killed at the timeout) → its stdout parsed → the failure classified

A subclass supplies only what differs: `prepare()` (the agent's temporary state, argv and env),
`parse()` (its output as a `Parsed`), and where needed `problem()` (settings it cannot run with)
and `special()` (a failure only that agent knows). The failure messages come from one table
(`failures.py`), filled with the subclass's `words`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Run, Task
from skillsleep.harnesses.agent_cli import (
    AgentCLI,
    AgentSettings,
    CLIResult,
    HarnessStatus,
    agent_env,
    probe,
    run_cli,
    tail,
)
from skillsleep.harnesses.failures import Failure, Wording, explain
from skillsleep.harnesses.run_folder import run_folder

__all__ = ["CLIHarness", "Invocation", "Parsed"]


@dataclass
class Invocation:
    """One prepared agent process: its command line, its environment, and what `finish` needs."""

    argv: list[str]
    env: dict[str, str]
    state: Path  # the run's temporary folder (the agent's state lives under it)
    skill: str | None = None  # the name the candidate skill was installed under, if any


@dataclass
class Parsed:
    """What the agent printed: the episode, and whether the output reached its final record."""

    run: Run
    complete: bool


class CLIHarness:
    """What every CLI harness's `run()` does: wait for one of `settings.concurrency` slots, check
    the CLI (missing / too old → an error Run naming the install) and that `api_key_env` is set when
    a `base_url` needs it, then replay in a temporary working copy and state folder, deleted after;
    a failure to prepare them is an error Run too. `settings` are the agent's `[harness.<name>]`
    (an instance of its `Agent.settings_model`); `env` is the base environment of the agent process
    (None → this process's), with `settings.env` on top."""

    name: str
    cli: ClassVar[AgentCLI]
    words: ClassVar[Wording]

    def __init__(self, settings: AgentSettings, *, env: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.env = env
        self._slots = asyncio.Semaphore(self.settings.concurrency)

    def base_env(self) -> dict[str, str]:
        return agent_env(self.env, self.settings.env)

    def status(self) -> HarnessStatus:
        """Installed, version, usable (and why not) — `skillsleep harnesses`."""
        return probe(self.cli, self.settings, self.base_env())

    def server(self) -> str:
        """The model server a replay is pointed at (`base_url`), as messages name it; "" for none."""
        return self.settings.base_url.rstrip("/")

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run:
        """One episode; `timeout_s` bounds the agent process, not the wait for a slot. A failed
        episode is `Run.error`, never an exception. (`sample` only keys the engine's memo: the
        agent CLIs take no seed.)"""
        async with self._slots:
            status = await asyncio.to_thread(self.status)
            if not status.usable or not status.command:
                return Run(error=f"the {self.name} harness cannot run: {status.reason}")
            base = self.base_env()
            problem = self._key_problem(base) or self.problem()
            if problem:
                return Run(error=problem)
            try:
                return await self.replay(status.command, task, skill, base, timeout_s)
            except OSError as exc:  # the working copy or the temporary agent state could not be made
                return Run(
                    error=f"{self.name} could not prepare the replay ({exc}); check disk space and that "
                    f"the task's folder {task.workdir or '(none)'} is readable"
                )

    def _key_problem(self, base: dict[str, str]) -> str | None:
        s = self.settings
        if not (s.base_url and s.api_key_env and not base.get(s.api_key_env)):
            return None
        return (
            f"{self.name} harness: `api_key_env` names {s.api_key_env}, which is not set in the "
            f"environment; export {s.api_key_env}=<the key for {s.base_url}>, or set "
            f'`api_key_env` to "" for a server that needs no key.'
        )

    def problem(self) -> str | None:
        """Why these settings cannot run at all (checked before anything runs), or None."""
        return None

    async def replay(self, command: str, task: Task, skill: Skill, base: dict[str, str], timeout_s: float) -> Run:
        """Run the agent once (`command` is the CLI's path, `base` the environment to start from)."""
        with run_folder(task) as folder:
            call = self.prepare(command, task, skill, base, cwd=folder.work, tmp=folder.agent, timeout_s=timeout_s)
            result = await run_cli(call.argv, cwd=folder.work, env=call.env, timeout_s=timeout_s)
            return await asyncio.to_thread(self.finish, result, call, timeout_s)

    def prepare(
        self, command: str, task: Task, skill: Skill, base: dict[str, str], *, cwd: Path, tmp: Path, timeout_s: float
    ) -> Invocation:
        """Install the skill into `cwd`, the agent's state into `tmp`; the process to start."""
        raise NotImplementedError

    def parse(self, result: CLIResult, call: Invocation) -> Parsed:
        """The episode in the process's output (pure, except what the agent wrote under `call.state`)."""
        raise NotImplementedError

    def special(self, result: CLIResult, parsed: Parsed, call: Invocation) -> str | None:
        """A failure only this agent knows, worded; checked after the timeout and before the rest."""
        return None

    def stderr(self, result: CLIResult) -> str:
        """The agent's stderr as error messages quote it (an agent may drop its known noise)."""
        return result.stderr

    def finish(self, result: CLIResult, call: Invocation, timeout_s: float) -> Run:
        """The episode: what `parse` read, the process's wall time and exit status, and the failure."""
        parsed = self.parse(result, call)
        run = parsed.run.model_copy(update={"latency_s": result.duration_s, "exit_status": result.returncode})
        error = self._failure(result, parsed, call, timeout_s)
        return run if error is None else run.model_copy(update={"error": error})

    def _failure(self, result: CLIResult, parsed: Parsed, call: Invocation, timeout_s: float) -> str | None:
        """The cascade: killed at the timeout → the agent's own → no final record → a non-zero exit."""
        if result.timed_out:
            return explain(Failure.KILLED, self.words, server=self.server(), timeout_s=timeout_s)
        special = self.special(result, parsed, call)
        if special is not None:
            return special
        stderr = tail(self.stderr(result)) or "no stderr"
        rc = result.returncode
        if not parsed.complete:
            return explain(Failure.NO_RESULT, self.words, f"{parsed.run.error}; stderr: {stderr}", returncode=rc)
        if parsed.run.error is None and rc != 0:
            return explain(Failure.EXIT, self.words, stderr, returncode=rc)
        return None
