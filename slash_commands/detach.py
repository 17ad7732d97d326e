"""`skillsleep run --detach`: a night in the background, so `/sleep run` in an agent returns at once.

The parent checks the settings and the state lock (a night that holds it is named, with its pid
and log, and nothing starts), then starts the same `skillsleep run` with the same settings as a
child in a session of its own (stdin /dev/null, stdout and stderr to a log under <data>/logs/),
and waits only until the child has recorded its night (night.json names its pid and log) or has
died (the log's tail says why). The child takes the lock itself, so of two `--detach` at once one
night starts and the other parent says which. Once the child knows its night's number it moves
its output to <data>/logs/night-NNNN.log (appended to, for a resumed night) and records that.
The child writes its progress there as JSON lines (one event a line, slash_commands/progress.py),
then its summary as text; the tail shown when a night did not start is rendered back as lines.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from skillsleep.core.models.rundir import private_dir
from skillsleep.core.night.lock import held_by, who
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord
from skillsleep.core.shared.display import md_line, plain_line
from skillsleep.core.shared.errors import Busy, SkillsleepError
from skillsleep.core.shared.records import Record
from skillsleep.slash_commands.progress import plain_lines
from skillsleep.slash_commands.runtime import RUN, check_night, check_night_backends
from skillsleep.slash_commands.wiring import SLEEP_FLAGS, data_dir

POLL_S = 0.1
TAIL_LINES = 20


class Detached(Record):
    """What `run --detach` prints: the night started (or resumed) in the background, its process,
    and where its log is."""

    night: int
    pid: int
    log: str | None
    resumed: bool  # the night was stopped before and goes on now
    skill: str
    data_dir: str


def child_args(flags: Mapping[str, object | None], *, dry_run: bool, chat_dirs: Sequence[Path]) -> list[str]:
    """The `skillsleep run` arguments that give the child the settings the user gave this one."""
    args: list[str] = []
    for key, value in flags.items():
        if isinstance(value, bool):
            args.append(SLEEP_FLAGS[key] if value else "--no-" + SLEEP_FLAGS[key].removeprefix("--"))
        elif value is not None:
            args += [SLEEP_FLAGS[key], str(value)]
    for folder in chat_dirs:
        args += ["--chat-dir", str(Path(folder).absolute())]
    return args + (["--dry-run"] if dry_run else [])


def detach(
    flags: Mapping[str, object | None], *, dry_run: bool, chat_dirs: Sequence[Path], executor: str | None = None
) -> Detached:
    """Start the night in the background; return its number, pid and log once it has recorded them.
    `executor` is the `--executor` given, passed on to the child."""
    check_night_backends(check_night(flags))
    data = data_dir()
    _refuse_while_running(data)
    logs = data / "logs"
    private_dir(logs)
    pending = logs / f"starting-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}.log"
    argv = [
        sys.executable,
        "-m",
        "skillsleep.slash_commands.cli",
        "run",
        *child_args(flags, dry_run=dry_run, chat_dirs=chat_dirs),
        *(["--executor", executor] if executor else []),
        "--detached-log",
        str(pending),
    ]
    fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        spawned = datetime.now(UTC)
        pid = os.posix_spawn(
            sys.executable,
            argv,
            dict(os.environ),
            setsid=True,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
            ],
        )
    finally:
        os.close(fd)
    record = _wait_for_night(data, pid, pending)
    return Detached(
        night=record.night,
        pid=pid,
        log=record.log,
        resumed=record.started < spawned,
        skill=record.skill_name or record.skill_path,
        data_dir=str(data),
    )


def _night_of(data: Path, pid: object) -> NightRecord | None:
    return next((r for r in reversed(Nights(data).list()) if r.pid == pid and r.status == "running"), None)


def _refuse_while_running(data: Path) -> None:
    """Busy when a cycle holds the lock, naming the night it runs (waiting for a night that is
    still harvesting to record its number)."""
    while (holder := held_by(data)) is not None:
        record = _night_of(data, holder.get("pid"))
        if record is not None:
            log = record.log or "none: it was not started with --detach"
            raise Busy(
                f"night {record.night} is already running (pid {record.pid}, since "
                f"{record.started:%Y-%m-%d %H:%M} UTC; log: {log}); nothing was started. `skillsleep status` "
                "shows its progress"
            )
        if holder.get("purpose") != RUN:
            raise Busy(
                f"another skillsleep cycle is running on {data} ({who(holder)}); nothing was started: try "
                "again when it has finished"
            )
        time.sleep(POLL_S)  # a night that is still harvesting: its number comes once it has recorded it


def _wait_for_night(data: Path, pid: int, pending: Path) -> NightRecord:
    """The child's night once it is recorded; when the child exits before that, why."""
    while True:
        exited, status = os.waitpid(pid, os.WNOHANG)
        record = next((r for r in reversed(Nights(data).list()) if r.pid == pid and r.log), None)
        if record is not None:  # (it may even have finished already)
            return record
        if exited:
            _refuse_while_running(data)  # it lost the race for the lock to another night
            tail = plain_lines(pending.read_text(encoding="utf-8", errors="replace").splitlines())[-TAIL_LINES:]
            raise SkillsleepError(
                f"the night did not start (`skillsleep run` exited with {os.waitstatus_to_exitcode(status)}); "
                f"the end of its log {pending}:\n" + "\n".join(tail)
            )
        time.sleep(POLL_S)


def claim_log(pending: Path) -> Callable[[NightRecord], NightRecord]:
    """For the child: once its night has a number, its output goes on in <logs>/night-NNNN.log
    (what it wrote before comes first; a resumed night's earlier log is kept above), named in the
    night's record."""

    def on_start(record: NightRecord) -> NightRecord:
        log = pending.parent / f"night-{record.night:04d}.log"
        sys.stdout.flush()
        sys.stderr.flush()
        with os.fdopen(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as out:
            out.write(pending.read_bytes())
            out.flush()
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
        pending.unlink()
        return record.model_copy(update={"log": str(log)})

    return on_start


def detach_text(d: Detached, plain: bool = True, prefix: str = "skillsleep") -> str:
    """One line: the night, its pid and log, and how to follow it."""
    status = f"{prefix} status" if plain else f"`{prefix} status`"
    how = "resumed" if d.resumed else "started"
    log = plain_line(d.log) if plain else md_line(d.log)
    return f"Night {d.night} {how} in the background (pid {d.pid}); log: {log}. {status} shows its progress."
