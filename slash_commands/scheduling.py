"""What `skillsleep schedule` / `unschedule` do (schedule_cmd.py holds their click commands and text):
the night runs by itself, every night.

    schedule(…)     check the run flags as `run` would, build the NightJob, install it where asked
                    (schedulers.py: the crontab, a systemd user timer) or only show it (--print):
                    a ScheduleResult
    unschedule(via) remove what `schedule` wrote there, and only that: an UnscheduleResult

The job runs cron/run_sleep_cron.sh with absolute paths (cron's PATH is /usr/bin:/bin and its
environment nearly empty): the `skillsleep` of this installation, the folder `schedule` ran in,
HOME and the variables that say where things are (data, config, the agents' homes), the log
folder, and the PATH folders of the agent CLI a CLI harness replays with. A secret is never
written: API keys reach the night through the user's own env file (`night.env` beside
config.toml), which the script reads; settings set only in this shell's environment are named.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record

if TYPE_CHECKING:
    from skillsleep.core.night.user_config import SleepSection
    from skillsleep.slash_commands.cron_table import When
    from skillsleep.slash_commands.night_job import NightJob

__all__ = ["CARRIED", "ScheduleResult", "UnscheduleResult", "schedule", "unschedule"]

SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
# Where things are, put on the line when set here (cron sets none of them): skillsleep's data and
# config folders, and the agents' homes the night harvests transcripts from and replays with.
CARRIED = (
    "SKILLSLEEP_HOME",
    "SKILLSLEEP_CONFIG",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "OPENCLAW_HOME",
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_PROFILE",
)
_NAME = re.compile(r"^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=", re.MULTILINE)


class ScheduleResult(Record):
    """What `schedule --json` prints: when and where the night runs, the line or units (installed, or
    only shown with --print), what it runs, and what the user still has to do or know."""

    via: str  # crontab, systemd or openclaw
    when: str  # "03:00 daily"
    schedule: str  # cron's five fields
    where: str  # "the crontab of ada", the units' folder
    installed: bool  # False: --print
    replaced: bool  # an earlier skillsleep schedule was replaced
    preview: str  # the crontab block or the unit files
    command: str  # the night's command line, as a shell runs it
    cwd: str
    run: list[str]  # `skillsleep run` and its flags, as the user gave them
    log_dir: str
    env_file: str  # where the night reads the user's keys from
    written: list[str]  # files written
    todo: list[str]  # commands the user still has to run
    notes: list[str]  # what this shell has that the night will not see


class UnscheduleResult(Record):
    """What `unschedule --json` prints: what was removed, and what the user still has to do."""

    via: str
    where: str
    removed: bool  # False: nothing was scheduled there
    written: list[str]  # files removed
    todo: list[str]


def log_dir() -> Path:
    """Where run_sleep_cron.sh writes `cron-*.log`."""
    from skillsleep.slash_commands import cron_log
    from skillsleep.slash_commands.wiring import data_dir

    return cron_log.log_dir(data_dir().absolute())


def env_file() -> Path:
    """The user's own NAME=value file the night reads first (their API keys): beside config.toml."""
    from skillsleep.slash_commands.wiring import config_file

    return config_file().path.parent / "night.env"


def schedule(
    at: str | None, cron: str | None, *, via: str, run_flags: Sequence[str], params: Mapping[str, object], preview: bool
) -> ScheduleResult:
    """Install (or with `preview` only show) the night `skillsleep run RUN_FLAGS` at `at` / `cron`;
    `params` are RUN_FLAGS as `run`'s own parser read them."""
    from skillsleep.slash_commands.schedulers import schedulers

    when = _when(at, cron, via)
    scheduler = schedulers()[via]()
    job, settings = night_job(when, run_flags, params)
    notes = _notes(settings)
    shown = scheduler.preview(job)
    change = None if preview else scheduler.install(job)
    return ScheduleResult(
        via=via,
        when=when.describe(),
        schedule=when.fields,
        where=scheduler.where(),
        installed=change is not None,
        replaced=bool(change and change.replaced),
        preview=shown,
        command=job.shell(),
        cwd=str(job.cwd),
        run=["skillsleep", "run", *run_flags],
        log_dir=job.env["SKILLSLEEP_LOG_DIR"],
        env_file=job.env["SKILLSLEEP_ENV_FILE"],
        written=change.written if change else [],
        todo=change.todo if change else [],
        notes=notes,
    )


def unschedule(via: str) -> UnscheduleResult:
    """Remove the night `schedule` wrote via `via`; nothing there is no error."""
    from skillsleep.slash_commands.schedulers import schedulers

    change = schedulers()[via]().remove()
    return UnscheduleResult(via=via, where=change.where, removed=change.done, written=change.written, todo=change.todo)


def _when(at: str | None, cron: str | None, via: str) -> When:
    from skillsleep.slash_commands.cron_table import When

    if at is not None and cron is not None:
        raise ConfigError("give --at or --cron, not both")
    if cron is not None:
        if via != "crontab":
            raise ConfigError(f"--cron works with the crontab only; with --{via} give --at HH:MM")
        return When.cron(cron)
    if at is None:
        raise ConfigError(
            "give --at HH:MM (every day at that time) or --cron 'EXPR' (five cron fields), "
            "e.g. `skillsleep schedule --at 03:00 --backend deepseek`"
        )
    return When.daily(at)


# `run` flags a scheduled night refuses: the script runs the night itself, in the foreground, and
# reads its exit code; its output goes to the log
UNATTENDED = {  # `run`'s parameter → (its flag, why)
    "detach": ("--detach", "the cron script already runs the night in the background and needs its exit code"),
    "fmt": ("--format", "the night's output goes to its log, not to a person or an agent"),
}


def night_job(when: When, run_flags: Sequence[str], params: Mapping[str, object]) -> tuple[NightJob, SleepSection]:
    """The job for `skillsleep run RUN_FLAGS` and its settings, checked now as `run` checks them."""
    from skillsleep.core.night.user_config import SleepSection
    from skillsleep.slash_commands.night_job import NightJob
    from skillsleep.slash_commands.runtime import check_night
    from skillsleep.slash_commands.wiring import effective_settings

    for param, (flag, why) in UNATTENDED.items():
        if params.get(param) not in (None, False):
            raise ConfigError(f"{flag} has no place in a scheduled night: {why}; drop it from `schedule`")
    settings = check_night({key: value for key, value in params.items() if key in SleepSection.model_fields})
    _refuse_credentials(params.get("base_url"), settings)
    chat_dirs = params.get("chat_dirs")  # run's --chat-dir: a tuple of paths
    effective_settings(chat_dirs if isinstance(chat_dirs, tuple) else ())  # the chat-log folders and patterns too
    env = {"HOME": os.environ.get("HOME") or str(Path.home())}
    env |= {name: os.environ[name] for name in CARRIED if os.environ.get(name)}
    env |= {
        "SKILLSLEEP_LOG_DIR": str(log_dir()),
        "SKILLSLEEP_ENV_FILE": str(env_file()),
        "PATH": ":".join(dict.fromkeys([*_agent_dirs(settings), *SYSTEM_PATH])),
    }
    job = NightJob(when=when, cwd=Path.cwd(), env=env, argv=["/bin/sh", str(_script()), str(_skillsleep()), *run_flags])
    for text in [str(job.cwd), *job.env.values(), *job.argv]:
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise ConfigError(
                f"{text!r} holds a line break or another control character, which a crontab line or "
                "unit file cannot hold; put that setting in config.toml ([sleep]) instead of a flag"
            )
    return job, settings


def _refuse_credentials(base_url: object, settings: SleepSection) -> None:
    """A `--base-url` holding a user or password would be written into the crontab (or unit file)
    and the night's log, as a key would: refused, naming where it belongs instead."""
    from urllib.parse import urlsplit

    from skillsleep.core.models.backends.registry import provider_infos

    if not isinstance(base_url, str) or "@" not in urlsplit(base_url).netloc:
        return
    info = next((i for i in provider_infos() if i.name == settings.backend.partition(":")[0]), None)
    where = env_file()
    instead = (
        f"put {info.base_url_env}=<the URL> in {where} (yours alone: chmod 600), which the night reads"
        if info and info.base_url_env
        else "set base_url in [sleep] of config.toml (yours alone: chmod 600)"
    )
    raise ConfigError(
        "--base-url holds a user name or password (user:…@host), which `schedule` would write into the "
        f"schedule's line and the night's log; drop --base-url and {instead}"
    )


def _script() -> Path:
    script = Path(str(resources.files("skillsleep.cron") / "run_sleep_cron.sh"))
    if not script.is_file():
        raise ConfigError(f"this skillsleep installation lacks {script}; reinstall skillsleep")
    return script


def _skillsleep() -> Path:
    """The `skillsleep` command of this installation (beside its Python), else the one on PATH."""
    beside = Path(sys.executable).parent / "skillsleep"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside.absolute()
    found = shutil.which("skillsleep")
    if found is None:
        raise ConfigError(
            f"cannot find the skillsleep command beside {sys.executable} or on PATH; "
            "run `skillsleep schedule` from an installed skillsleep"
        )
    return Path(found).absolute()


def _agent_dirs(settings: SleepSection) -> list[str]:
    """PATH folders of the agent CLI a CLI harness replays with: its own, and the one of the
    interpreter its `#!/usr/bin/env NAME` line needs (node). An agent not usable here fails now."""
    from skillsleep.slash_commands.runtime import usable_agent

    if settings.harness == "chat":
        return []
    harness = usable_agent(settings.harness, target_model=settings.target_model, base_url=None)
    command = Path(harness.status().command or harness.cli.default_command)  # a usable CLI has its path
    dirs = [str(command.absolute().parent)]
    try:
        with command.open("rb") as f:
            first = f.readline(256)
    except OSError:
        first = b""
    words = first[2:].decode(errors="replace").split() if first.startswith(b"#!") else []
    if words and words[0].endswith("/env"):
        name = next((w for w in words[1:] if not w.startswith("-")), None)
        found = shutil.which(name) if name else None
        if found:
            dirs.append(str(Path(found).absolute().parent))
    return dirs


def _notes(settings: SleepSection) -> list[str]:
    """What this shell has that the night will not: settings from the environment, and keys."""
    from skillsleep.slash_commands.wiring import CHAT_DIRS_ENV, REDACT_PATTERNS_ENV, SLEEP_ENVS, SLEEP_FLAGS

    where = env_file()
    notes = []
    how = {env: f"pass {SLEEP_FLAGS[key]}, or set [sleep] {key} in config.toml" for key, env in SLEEP_ENVS.items()}
    how |= {
        CHAT_DIRS_ENV: "pass --chat-dir, or set [harvest] chat_dirs in config.toml",
        REDACT_PATTERNS_ENV: "set [harvest] redact_patterns in config.toml",
    }
    notes += [
        f"{name} is set in this shell, but the night will not see it: {fix} (or put it in {where})"
        for name, fix in how.items()
        if os.environ.get(name)
    ]
    defined = _env_file_names(where)
    notes += [
        f"{name} is set in this shell, but cron will not see it: add {name}=… to {where} (yours alone: "
        f"chmod 600); skillsleep never copies its value"
        for name in _secret_names(settings)
        if os.environ.get(name) and name not in defined
    ]
    return notes


def _secret_names(settings: SleepSection) -> list[str]:
    """The environment variables the night's backend and agent read a key or server from."""
    from skillsleep.core.models.backends.registry import provider_infos
    from skillsleep.slash_commands.wiring import harness_settings

    infos = {info.name: info for info in provider_infos()}
    info = infos.get(settings.backend.partition(":")[0])
    names = [info.key_env, info.base_url_env] if info else []
    agent = harness_settings().get(settings.harness)
    names.append(agent.api_key_env if agent is not None else None)
    return [name for name in names if name]


def _env_file_names(path: Path) -> set[str]:
    """The names the env file sets (never its values); it must be the user's alone, as it is run."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return set()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}; fix its permissions") from None
    if st.st_uid != os.geteuid():
        raise ConfigError(
            f"{path} belongs to another user; the night runs it as shell code, so it must be yours: "
            "move it away and create your own (chmod 600)"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(
            f"{path} can be written by other users, and the night runs it as shell code: chmod 600 {path}"
        )
    try:
        return set(_NAME.findall(path.read_text(encoding="utf-8", errors="replace")))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}; fix its permissions") from None
