"""Codex CLI rollout transcripts, `${CODEX_HOME}/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`:
one file is one session (`rollout.py` builds it). Records are keyed on `type`, never on
position; unknown ones are skipped and counted. How the versions drift and what is read from
which record: docs/agents.md.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from skillsleep.core.harvest.discovery import Found, Parts, walk
from skillsleep.core.shared.jsonl import Reader
from skillsleep.core.shared.session import ParseResult
from skillsleep.harnesses.agent import Env
from skillsleep.harnesses.codex.home import codex_home
from skillsleep.harnesses.codex.items import uuid_in
from skillsleep.harnesses.codex.record import CodexRecord
from skillsleep.harnesses.codex.rollout import Rollout

__all__ = ["codex_session_files", "parse", "parse_codex", "sources", "watch_roots"]


def parse_codex(data: bytes, *, source: str, base_offset: int = 0) -> ParseResult:
    """The session in one rollout's bytes (`data` starts at `base_offset` in the file `source`).

    Never raises for bad input. A half-written last line is left unread: `bytes_read` counts the
    bytes of `data` up to the end of the last complete line, so the next read starts at
    `base_offset + bytes_read`. A continuation chunk has no `session_meta`; its id then comes from the file
    name. Returns no session when no Codex record was recognised.
    """
    reader = Reader(data, base_offset=base_offset)
    rollout = Rollout(source)
    for line in reader.records_as(CodexRecord):
        rollout.feed(line)
    skipped = Counter(reader.skipped) + rollout.skipped
    sessions = [rollout.session()] if rollout.recognised else []
    return ParseResult(sessions=sessions, skipped=skipped, bytes_read=reader.consumed - base_offset)


def codex_session_files(codex_home: Path) -> Found:
    """Rollout files under `codex_home`, each session once: a live `sessions/` copy wins over an
    `archived_sessions/` one, and of two copies in the same place the larger wins; with the
    folders that could not be read and the entries that are no transcript file."""
    archive = codex_home / "archived_sessions"
    found = walk(codex_home / "sessions", wanted=_is_rollout) + walk(archive, wanted=_is_rollout)
    best: dict[str, tuple[tuple[int, int], Path]] = {}
    for path in found.files:
        try:
            size = path.stat().st_size
        except OSError:
            continue  # gone since the walk: nothing to read
        key = _file_session_id(path)
        rank = (-path.is_relative_to(archive), size)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, path)
    return found.model_copy(update={"files": sorted(path for _, path in best.values())})


def _is_rollout(parts: Parts) -> bool:
    return parts[-1].startswith("rollout-") and parts[-1].endswith(".jsonl")


def parse(data: bytes, source: str, offset: int) -> ParseResult:
    """`parse_codex` as harvest calls a parser."""
    return parse_codex(data, source=source, base_offset=offset)


def sources(env: Env) -> Found:
    """Every Codex rollout on this machine (under the Codex home of `env`)."""
    return codex_session_files(codex_home(env))


def watch_roots(env: Env) -> list[Path]:
    home = codex_home(env)
    return [home / "sessions", home / "archived_sessions"]


def _file_session_id(path: Path) -> str:
    """The session id of a rollout file: the uuid in its name, else its session_meta id."""
    found = uuid_in(path.name)
    if found:
        return found
    try:
        with path.open("rb") as fh:
            first = fh.readline(4 * 1024 * 1024)
        value = json.loads(first)
    except (OSError, ValueError):
        return str(path)  # unreadable or not JSON: the path itself is the key (never merged)
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(payload, dict) and isinstance(payload.get("id"), str):
        return str(payload["id"])
    return str(path)
