"""A staged proposal and the history's actions as records, with the hashes that tie a proposal to
the live file it would replace, and the message that shows both changes when the user edited it
since (core/report/proposals.py acts on them)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from skillsleep.core.document.newlines import endings_note, style
from skillsleep.core.report.changes import unified_diff
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record, UtcDatetime

ABSENT = "absent"  # base hash of a live file that did not exist yet (a new managed skill)

Status = Literal["staged", "adopted", "rejected", "superseded"]


class Proposal(Record):
    """One night's result for one skill, waiting for the user's decision."""

    id: str
    created: UtcDatetime
    skill_path: str  # the live file this proposal would replace
    base_hash: str  # sha256 of the live file at staging time, or ABSENT
    candidate_hash: str
    accepted: bool  # the gate's verdict
    reason: str  # the gate's reason (why accepted / why not)
    status: Status = "staged"
    baseline_score: float | None = None
    candidate_score: float | None = None
    test_before: float | None = None
    test_after: float | None = None
    night: int | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    adopted_edits: list[int] | None = None  # adopted with --edits: the change numbers put live (None: all)
    superseded_by: str | None = None  # "superseded": the newer proposal of its skill whose adopt did it

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Without `superseded_by` while it is None: a proposal reads and prints as it always did."""
        out: dict[str, Any] = handler(self)
        if out.get("superseded_by", "") is None:
            del out["superseded_by"]
        return out

    def refuse_superseded(self) -> None:
        """A verb given this proposal (adopt, reject, diff) refuses it when it was superseded: a
        ConfigError naming the proposal that superseded it."""
        if self.status != "superseded":
            return
        by = self.superseded_by or "a newer proposal of its skill"
        raise ConfigError(
            f"proposal {self.id} was superseded by {by}: that newer proposal of the same skill was adopted, "
            f"and this one was staged against the file before that adopt, so it can no longer apply; "
            "`skillsleep status` lists what is pending"
        )


class Action(Record):
    """One line of the history: what was done to which proposal / live file."""

    time: UtcDatetime
    kind: Literal["stage", "adopt", "reject", "rollback", "supersede"]
    proposal_id: str | None = None
    skill_path: str | None = None
    detail: str = ""
    backup: str | None = None  # the live file as it was before this action
    restored_from: str | None = None  # a rollback: the backup folder it put back
    forced: bool = False  # done over edits made since the proposal was staged or the last change
    edits: list[int] | None = None  # an adopt of only these numbered changes (`adopt --edits`)


class Adoption(Record):
    """What `Proposals.adopt()` did: the proposal as it is now, and the history line it wrote."""

    proposal: Proposal
    action: Action
    superseded: list[str] = Field(default_factory=list)  # the ids it marked superseded (older, same skill)


class Conflict(ConfigError):
    """The live file changed since the proposal was staged."""


def file_hash(path: Path) -> str:
    """sha256 of a file's bytes, or ABSENT when it does not exist."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return ABSENT


def read_text(path: Path) -> str:
    """A user's file as text, byte for byte (CRLF and a byte order mark kept); undecodable bytes
    shown as U+FFFD (for diffs and messages only: files are copied as bytes, never via this)."""
    return path.read_bytes().decode("utf-8", errors="replace")


def hash_of_base(live: Path, base_text: str | None) -> str:
    """The hash adopt compares the live file with: of `base_text` (the text a candidate was derived
    from), or of the live file now when None; ABSENT for a file that did not exist."""
    if base_text is None:
        return file_hash(live)
    return ABSENT if base_text == "" and not live.exists() else hashlib.sha256(base_text.encode()).hexdigest()


def your_edits(before: str, live: Path, when: str, *, since: str) -> str:
    """The user's edits (`before` → the live file now) as a titled diff, for a refusal."""
    current = read_text(live) if live.exists() else ""
    name = live.name
    yours = unified_diff(before, current, f"{name} ({when})", f"{name} (live now)") or "(file removed)\n"
    endings = endings_note(style(before), style(current), f"the file {when}", "the live file")
    return f"--- your edits {since} ---\n{yours}" + (f"({endings})\n" if endings else "")


def conflict_message(p: Proposal, base: str, candidate: str) -> str:
    """Why adopting `p` is refused: the live file changed since staging; both changes shown."""
    live = Path(p.skill_path)
    theirs = unified_diff(base, candidate, f"{live.name} (when staged)", f"{live.name} (proposal {p.id})")
    return (
        f"{live} changed since proposal {p.id} was staged, so adopting it would drop your edits.\n"
        f"{your_edits(base, live, 'when staged', since='since staging')}"
        f"--- the proposal's edits ---\n{theirs}"
        "Run another night to get a proposal based on your current file, or adopt anyway with --force "
        "(the current file is backed up first)."
    )
