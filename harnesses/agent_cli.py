"""What the agent CLIs share below the replay itself (harnesses/replay.py): finding the CLI, its
version, the status `skillsleep harnesses` prints, a throwaway working copy, a process group that
dies with its timeout, and the skill document an agent loads.

A replay must never touch the user's files: every run gets a fresh temporary copy of the task's
working directory (or an empty one), and the agent's own state goes to a temporary home the
harness prepares, both in one run folder (`run_folder.py`) that is deleted afterwards and whose
sessions harvest never stores.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.document.skill import Skill
from skillsleep.core.document.skill import frontmatter_value as frontmatter_value
from skillsleep.core.models.backends.base import BaseUrl
from skillsleep.core.shared.records import Record, Task
from skillsleep.harnesses.run_folder import WORKDIR_IGNORE as WORKDIR_IGNORE
from skillsleep.harnesses.run_folder import run_folder

KILL_GRACE_S = 3.0  # SIGTERM → SIGKILL
PLACEHOLDER_KEY = "skillsleep-placeholder-key"  # sent to a base_url server when api_key_env is empty
FALLBACK_SKILL_NAME = "skillsleep-candidate"
FALLBACK_DESCRIPTION = "The skill being trained: read it and follow it for this task."
_SKILL_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")  # the Agent Skills name rule


class AgentSettings(BaseModel):
    """Settings every CLI harness takes (each harness adds its own)."""

    model_config = ConfigDict(extra="forbid")

    command: str = ""  # the CLI: a path or a name on PATH; "" → the harness's default name
    target_model: str = ""  # "" → the model the agent is configured with
    base_url: BaseUrl = ""  # a model server to use instead of the agent's configured provider
    api_key_env: str = ""  # environment variable that holds the key for base_url
    concurrency: int = Field(default=2, ge=1)  # runs in parallel
    timeout_s: float = Field(default=600.0, gt=0)  # one replay's wall-clock limit (callers pass it to run())
    extra_args: list[str] = Field(default_factory=list)  # appended to the agent's command line
    env: dict[str, str] = Field(default_factory=dict)  # extra environment for the agent


class HarnessStatus(Record):
    """One line of `skillsleep harnesses`."""

    name: str
    installed: bool
    version: str | None = None
    usable: bool
    reason: str = ""
    command: str | None = None


@dataclass
class CLIResult:
    """What one agent process did."""

    stdout: str
    stderr: str
    returncode: int | None  # None: killed on timeout
    timed_out: bool
    duration_s: float


@dataclass(frozen=True)
class AgentCLI:
    """Facts about one agent CLI: its default command name, install hint and oldest version."""

    harness: str
    default_command: str
    package: str  # npm package
    min_version: tuple[int, ...]
    version_pattern: str = r"(\d+(?:\.\d+)+)"
    tested_version: str = ""  # the version the test suite runs (the install hint names it)

    def install_hint(self) -> str:
        wanted = self.tested_version or ".".join(map(str, self.min_version))
        return f"npm install -g {self.package}@{wanted} (or set the harness's `command` to its path)"


def parse_version(text: str, pattern: str = r"(\d+(?:\.\d+)+)") -> tuple[int, ...] | None:
    m = re.search(pattern, text)
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def resolve_command(cli: AgentCLI, settings: AgentSettings, env: dict[str, str] | None = None) -> str | None:
    """The CLI's absolute path, or None when it is not installed."""
    name = settings.command or cli.default_command
    path = (env or os.environ).get("PATH")
    found = (name if os.access(name, os.X_OK) else None) if os.sep in name else shutil.which(name, path=path)
    return os.path.abspath(found) if found else None  # absolute: the agent runs in a run folder, not here


_STATUS_CACHE: dict[tuple[str, str, str], HarnessStatus] = {}


def probe(cli: AgentCLI, settings: AgentSettings, env: dict[str, str] | None = None) -> HarnessStatus:
    """Is the CLI installed, which version, and can skillsleep replay with it? (cached per command and PATH)"""
    command = resolve_command(cli, settings, env)
    if command is None:
        wanted = settings.command or cli.default_command
        return HarnessStatus(
            name=cli.harness,
            installed=False,
            usable=False,
            reason=f"`{wanted}` was not found; install it: {cli.install_hint()}",
        )
    key = (cli.harness, command, (env or os.environ).get("PATH", ""))  # PATH picks the node it runs on
    if key in _STATUS_CACHE:
        return _STATUS_CACHE[key]
    try:
        out = subprocess.run(
            [command, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env
        )
        text = (out.stdout + out.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return HarnessStatus(
            name=cli.harness,
            installed=True,
            usable=False,
            command=command,
            reason=f"`{command} --version` failed ({exc}); reinstall it: {cli.install_hint()}",
        )
    version = parse_version(out.stdout, cli.version_pattern) if out.returncode == 0 else None
    if version is None:
        last = text.splitlines()[-1] if text else "no output"
        status = HarnessStatus(
            name=cli.harness,
            installed=True,
            usable=False,
            command=command,
            reason=f"`{command} --version` did not report a version ({last[:200]}); reinstall it: {cli.install_hint()}",
        )
    elif version < cli.min_version:
        shown = ".".join(map(str, version))
        status = HarnessStatus(
            name=cli.harness,
            installed=True,
            version=shown,
            usable=False,
            command=command,
            reason=f"version {shown} is older than {'.'.join(map(str, cli.min_version))}, "
            f"the oldest skillsleep replays with; upgrade: {cli.install_hint()}",
        )
    else:
        status = HarnessStatus(
            name=cli.harness, installed=True, version=".".join(map(str, version)), usable=True, command=command
        )
    _STATUS_CACHE[key] = status
    return status


@contextlib.contextmanager
def workdir(task: Task) -> Iterator[Path]:
    """A fresh copy of the task's working directory (or an empty one) in a run folder
    (`harnesses/run_folder.py`: its sessions are never harvested), deleted after.

    `.git`, `node_modules`, virtual environments and caches are not copied."""
    with run_folder(task) as folder:
        yield folder.work


def agent_env(base: dict[str, str] | None, extra: dict[str, str]) -> dict[str, str]:
    """The environment for one agent process: the caller's, plus `extra`."""
    env = dict(os.environ if base is None else base)
    env.update(extra)
    return env


async def run_cli(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], timeout_s: float, stdin: bytes | None = None
) -> CLIResult:
    """Run one agent process in its own process group; on timeout the whole group is killed.

    stdin is closed (or fed `stdin` then closed): an agent waiting for input would hang."""
    start = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=env,
        start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout_s)
        timed_out = False
    except TimeoutError:
        await _kill_group(proc)
        try:  # a process that left the group may still hold the pipes: don't wait on it forever
            out, err = await asyncio.wait_for(proc.communicate(), KILL_GRACE_S)
        except TimeoutError:
            out, err = b"", b""
        timed_out = True
    except asyncio.CancelledError:
        await _kill_group(proc)
        raise
    return CLIResult(
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        returncode=None if timed_out else proc.returncode,
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
    )


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
            break
        except TimeoutError:
            continue
    # children that left the group are not ours to chase; the group leader is gone.


def task_text(task: Task) -> str:
    """What one episode asks: the task's context, a blank line, then its prompt."""
    return task.prompt if not task.context else f"{task.context}\n\n{task.prompt}"


def mentioned_task(task: Task, name: str | None) -> str:
    """What one episode asks with the skill `name` invoked the way Codex and OpenClaw invoke one,
    `$name ` in front (none without a skill); a task recorded with that mention already (its
    prompt starts `$name …`) is asked as recorded, with no second one."""
    text = task_text(task)
    if not name or re.match(rf"\${re.escape(name)}(?![\w-])", task.prompt.lstrip()):
        return text
    return f"${name} {text}"


# --- the skill as an agent loads it ------------------------------------------------------------


def skill_name(skill: Skill) -> str:
    """The skill's frontmatter `name` when it is a valid skill name, else FALLBACK_SKILL_NAME."""
    name = frontmatter_value(skill.frontmatter, "name") or ""
    return name if _SKILL_NAME.fullmatch(name) else FALLBACK_SKILL_NAME


def skill_document(skill: Skill, name: str) -> str:
    """The SKILL.md an agent will load: the skill unchanged when its frontmatter has this `name`
    and a non-empty `description`; else with `name` set and a description added, other keys and
    the body kept (agents refuse a skill without both)."""
    has_name = frontmatter_value(skill.frontmatter, "name") == name
    has_description = bool(frontmatter_value(skill.frontmatter, "description"))
    if has_name and has_description:
        return skill.text
    inner = skill.frontmatter.rstrip("\n").split("\n")[1:-1] if skill.frontmatter else []
    inner = [ln for ln in inner if not re.match(r"name:|description:[ \t]*(\"\"|'')?[ \t]*$", ln)]
    head = [f"name: {name}"] + ([] if has_description else [f"description: {FALLBACK_DESCRIPTION}"])
    return "---\n" + "\n".join(head + inner) + "\n---\n" + skill.body


def tail(text: str, n: int = 600) -> str:
    """The last `n` characters of an agent's stderr, for an error message."""
    text = text.strip()
    return text if len(text) <= n else "…" + text[-n:]
