"""OpenClaw's cron, the `AgentCron` of the OpenClaw record: `openclaw cron list / add / rm` (they
need its gateway running).

A command job runs its argv as it is (`--command-argv`; `--command` would run `sh -lc`, whose
login shell resets PATH), in its folder with its environment, with no time limit (a night may
take hours) and nothing posted to a chat.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

from skillsleep.core.shared.errors import ConfigError, SkillsleepError
from skillsleep.harnesses.agent_cron import CronEntry, CronJob
from skillsleep.harnesses.openclaw.cli import OPENCLAW
from skillsleep.harnesses.openclaw.home import state_dir

__all__ = ["CRON", "OpenClawCron"]

_TIMEOUT_S = 180


class OpenClawCron:
    """OpenClaw's cron, through the `openclaw` on PATH."""

    title = "OpenClaw's cron"
    remove_hint = f"`{OPENCLAW.default_command} cron rm ID`"

    def where(self) -> str:
        return f"OpenClaw's cron, in the gateway of {state_dir(os.environ)}"

    def add_argv(self, job: CronJob) -> list[str]:
        env_args = [arg for key, value in job.env.items() for arg in ("--command-env", f"{key}={value}")]
        return [
            OPENCLAW.default_command,
            "cron",
            "add",
            "--name",
            job.name,
            "--cron",
            job.expr,
            "--description",
            job.description,
            "--command-argv",
            json.dumps(job.argv),
            "--command-cwd",
            str(job.cwd),
            *env_args,
            "--timeout-seconds",
            "0",
            "--no-deliver",
            "--json",
        ]

    def add(self, job: CronJob) -> str:
        return str(_cron(self.add_argv(job)[1:]).get("id", ""))

    def jobs(self) -> list[CronEntry]:
        found = _cron(["cron", "list", "--all", "--json"]).get("jobs", [])
        return [
            CronEntry(id=str(j.get("id")), name=str(j.get("name", "")), description=str(j.get("description") or ""))
            for j in (found if isinstance(found, list) else [])
            if isinstance(j, dict)
        ]

    def remove(self, job_id: str) -> None:
        _cron(["cron", "rm", job_id, "--json"])


CRON = OpenClawCron()


def _cron(args: list[str]) -> dict[str, Any]:
    """`openclaw ARGS` (JSON out); a missing CLI is a ConfigError, a refusal a SkillsleepError."""
    exe = shutil.which(OPENCLAW.default_command)
    if exe is None:
        raise ConfigError(
            "`openclaw` is not on PATH, so no OpenClaw cron job can be written; install OpenClaw "
            "(or put it on PATH), or schedule with the crontab or --systemd instead"
        )
    try:
        done = subprocess.run(
            [exe, *args], capture_output=True, text=True, timeout=_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise SkillsleepError(
            f"`openclaw {' '.join(args[:2])}` did not answer in 3 minutes; nothing was changed "
            "by it: check the gateway (`openclaw gateway status`) and run this again"
        ) from None
    try:
        out = json.loads(done.stdout)
    except ValueError:
        out = None
    error = out.get("error") if isinstance(out, dict) else None
    said = ((error.get("message") if isinstance(error, dict) else None) or done.stderr or done.stdout).strip()
    if done.returncode == 0 and isinstance(out, dict):
        return out
    if "gateway not reachable" in said.lower():
        raise SkillsleepError(
            f"no OpenClaw gateway answers ({said.splitlines()[0]}); OpenClaw keeps its cron jobs in "
            "its gateway: start it (`openclaw gateway run`, or `openclaw gateway start` for its "
            "service) and run this again; nothing was changed"
        )
    raise SkillsleepError(
        f"`openclaw {' '.join(args[:2])}` failed: {' '.join(said.split())[-600:] or done.returncode}"
        "; nothing more was changed"
    )
