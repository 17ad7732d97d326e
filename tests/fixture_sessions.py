"""Recorded transcript folders under tests/fixtures read as the harvest reads them: each file a
`Source` (SQLite for OpenClaw's database, JSONL otherwise), parsed by its agent's reader."""

from __future__ import annotations

from pathlib import Path

from skillsleep.core.harvest.harvester import Source
from skillsleep.core.shared.session import Session
from skillsleep.harnesses import registry

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_sources(root: Path, harness: str) -> list[Source]:
    """Every transcript file under `root`, as `harness`'s sources."""
    files = sorted(p for p in root.rglob("*") if p.suffix in (".jsonl", ".sqlite"))
    return [Source(harness=harness, path=p, kind="sqlite" if p.suffix == ".sqlite" else "jsonl") for p in files]


def fixture_sessions(harness: str, root: Path) -> list[Session]:
    """The sessions of every transcript file under `root`, parsed by `harness`'s reader."""
    sessions: list[Session] = []
    for source in fixture_sources(root, harness):
        if source.kind == "sqlite":
            sessions += registry.db_readers()[harness](source.path, {})[0].sessions
        else:
            sessions += registry.parsers()[harness](source.path.read_bytes(), str(source.path), 0).sessions
    return sessions


def first_prompt(session: Session) -> str:
    """What the user typed first (a prompt or a slash command)."""
    return next(t.text for t in session.turns if t.kind in ("user", "command"))
