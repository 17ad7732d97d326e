"""Harvesting as the verbs do it (`harvest`, `watch`, `run`, `doctor`, the session hook): find the
agents' transcripts, read what is new, redact, store."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from skillsleep.core.harvest.discovery import Found
from skillsleep.core.harvest.harvester import DbReader, Harvester, HarvestReport, Parser, Source
from skillsleep.core.harvest.read import default_workers
from skillsleep.core.models.store import Store
from skillsleep.core.night.since import parse_since
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record
from skillsleep.core.shared.session import ParseResult
from skillsleep.harnesses import registry
from skillsleep.harnesses.chat_logs import chat_log_files, parse_chat_log
from skillsleep.slash_commands.wiring import EffectiveSettings, data_dir, origin_label, state_db

LAST_HARVEST = "last_harvest"  # Store.meta key of the LastHarvest record
WORKERS_ENV = "SKILLSLEEP_HARVEST_WORKERS"  # processes reading transcripts in a large harvest (1: this one)


class HarvestResult(HarvestReport):
    """What `skillsleep harvest` prints (`--json`): core's report of the harvest, its `sessions`
    counted for every harness it read (0 for one with nothing new), and the redactions by kind."""

    redactions: dict[str, int] = Field(default_factory=dict)


class LastHarvest(Record):
    """The newest harvest, as the state database keeps it for `skillsleep status`."""

    time: str  # ISO UTC
    sessions: dict[str, int]  # new or updated sessions by harness
    errors: int


def _parse_chat(data: bytes, source: str, offset: int) -> ParseResult:
    """The direct-chat parser as a harvest calls it (a module function: worker processes import it)."""
    return parse_chat_log(data, source=source, base_offset=offset)


PARSERS: dict[str, Parser] = {**registry.parsers(), "chat": _parse_chat}
DB_READERS: dict[str, DbReader] = registry.db_readers()


def discover(harness: str) -> Found:
    """Every transcript of one agent on this machine (its home from the agent's own env vars), with
    the folders that could not be read and the entries that are no transcript file."""
    return registry.get(harness).sources(os.environ)


def chat_folders(settings: EffectiveSettings) -> list[Path]:
    """The effective chat-log folders (`--chat-dir`, SKILLSLEEP_CHAT_DIRS or `[harvest] chat_dirs`).

    One that does not exist, is a file or cannot be read is a ConfigError naming where it was set:
    a harvest, watch or night that silently read nothing there would look like a working one."""
    folders = settings.harvest.chat_dir_paths()
    for folder in folders:
        try:
            with os.scandir(folder):
                continue
        except FileNotFoundError:
            problem, fix = "does not exist", "create it, or stop listing it there"
        except NotADirectoryError:
            problem, fix = "is a file, not a folder", "name the folder that holds the *.jsonl logs instead"
        except OSError as exc:
            problem, fix = (
                f"cannot be read ({exc.strerror or exc})",
                "give your user access to it (chmod u+rx), or stop listing it there",
            )
        where = origin_label(settings.harvest.chat_dirs.source, "harvest.chat_dirs", settings.config_file)
        raise ConfigError(f"chat-log folder {folder} {problem} (set by {where}): {fix}")
    return folders


def _source(harness: str, path: Path) -> Source:
    return Source(harness=harness, path=path, kind="sqlite" if path.suffix == ".sqlite" else "jsonl")


def _check_transcript(harness: str | None, path: Path) -> Source:
    """The one transcript `harvest --transcript` reads, once it is one; else a ConfigError."""
    agents = registry.agent_names()
    if harness not in agents:
        raise ConfigError(
            f"--transcript needs --harness {', '.join(agents[:-1])} or {agents[-1]}: the agent "
            "that wrote the file (its parser reads it)"
        )
    if path.is_dir():
        raise ConfigError(
            f"{path} is a folder, not a transcript file; name one file (`skillsleep harvest` alone "
            "reads every transcript)"
        )
    if not path.exists():
        raise ConfigError(f"no transcript at {path}: the file does not exist")
    return _source(harness, path.absolute())


def harvest_workers() -> int:
    """Worker processes for a large harvest: SKILLSLEEP_HARVEST_WORKERS, else one per core (at
    most 4). Small harvests are read in this process whatever it says."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if not raw:
        return default_workers()
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise ConfigError(
            f"{WORKERS_ENV}={raw!r}: give a whole number from 1 to 64 (1 reads every transcript in the "
            f"harvesting process), or unset it to use one worker per core"
        )
    return int(raw)


def run_harvest(
    harness: str | None,
    since: str | None,
    redact_patterns: tuple[str, ...],
    chat_dirs: Sequence[Path] = (),
    *,
    transcript: Path | None = None,
    busy_timeout_s: float = 30.0,
) -> HarvestResult:
    """Harvest one harness, or every one when `harness` is None; returns what it found.

    Direct-chat logs are read from `chat_dirs` (never from skillsleep's own data directory) when
    `harness` is None or "chat"; another harness name reads only that agent's transcripts.
    `transcript` reads that one file of `harness` instead (same cursors: a later full harvest
    does not read it again). `busy_timeout_s`: how long to wait while another process writes
    the state database. The caller layers flags, env and config file (`wiring.effective_settings()`)."""
    only = _check_transcript(harness, transcript) if transcript is not None else None
    if harness == "chat" and not chat_dirs:
        raise ConfigError(
            "--harness chat: no chat-log folders are set; pass --chat-dir DIR (repeatable), set "
            "SKILLSLEEP_CHAT_DIRS, or list them under [harvest] chat_dirs in the config file "
            "(`skillsleep config` shows where it is)"
        )
    names = [harness] if harness and harness != "chat" else [] if harness else list(registry.agent_names())
    cutoff = parse_since(since, now=datetime.now(UTC)) if since else None
    redactor = Redactor(redact_patterns)
    store = Store(state_db(), timeout_s=busy_timeout_s)
    try:
        found = {name: discover(name) for name in names} if only is None else {}
        if chat_dirs and harness in (None, "chat"):
            names.append("chat")
            found["chat"] = chat_log_files([Path(d) for d in chat_dirs], exclude=[data_dir()])
        sources = [only] if only else [_source(name, p) for name, files in found.items() for p in files.files]
        harvester = Harvester(store, PARSERS, redactor, db_readers=DB_READERS, workers=harvest_workers())
        report = harvester.harvest(sources, since=cutoff)
        for files in found.values():
            report.add_found(files)
        result = HarvestResult.model_validate(
            {
                **report.model_dump(),
                "sessions": {name: report.sessions.get(name, 0) for name in names},
                "redactions": dict(redactor.counts),
            }
        )
        last = LastHarvest(time=datetime.now(UTC).isoformat(), sessions=result.sessions, errors=report.errors)
        store.set_meta(LAST_HARVEST, json.dumps(last.model_dump()))
    finally:
        store.close()
    return result


def left_out_lines(report: HarvestReport) -> list[str]:
    """What a harvest report (`run_harvest()`'s) left out and why, in lines a person can act on."""
    lines = []
    if report.before_since:
        lines.append(
            f"{report.before_since} session(s) stored for later use, ended before --since "
            "(not counted above; `skillsleep run --since` mines them)"
        )
    if report.own_sessions:
        lines.append(
            f"skillsleep's own: {report.own_sessions} session(s) not stored (its replays and model calls, "
            "or nothing but /sleep verbs): a night never learns from itself"
        )
    if report.waiting_files:
        lines.append(
            f"the last line of {report.waiting_files} file(s) is not finished ({report.waiting_bytes} "
            "bytes): it is read once a newline ends it; a file nothing writes any more needs a final newline"
        )
    if report.skipped:
        lines.append("skipped: " + ", ".join(f"{k} {v}" for k, v in sorted(report.skipped.items())))
    for problem in report.unreadable[:10]:
        lines.append(
            f"could not read {problem} (give your user read access: chmod u+r for a file, u+rx for a "
            "folder, or move it out of the transcript folders; it is retried next time)"
        )
    if len(report.unreadable) > 10:
        lines.append(f"… and {len(report.unreadable) - 10} more that could not be read (`--json` lists them all)")
    return lines
