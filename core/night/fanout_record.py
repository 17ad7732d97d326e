"""The record of a night that trained several skills (a fan-out, core/night/fanout_run.py):
`<data>/fanouts/<NNNN>/fanout.json`, beside the combined report files (core/night/fanout_report.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from skillsleep.core.shared.jsonl import why_unreadable
from skillsleep.core.shared.records import Record, UtcDatetime

__all__ = ["FIRST_RULE", "FanoutResult", "RowStatus", "SkillRow", "newest_fanout"]

RowStatus = Literal["trained", "not-enough-evidence", "not-selected", "not-run"]
FIRST_RULE = "a session that used several writable skills goes to the first one it used"


class SkillRow(Record):
    """One skill of a fan-out: its sessions, its share of the budget, what it spent and got."""

    skill_name: str
    skill_path: str  # the live skill's key (its file, `#section` for a section)
    managed: bool
    sessions: int
    status: RowStatus
    reason: str = ""  # why it was not trained ("not enough evidence (2 sessions; needs 6)", …)
    night: int | None = None
    share_tokens: int | None = None  # None: no token cap
    share_usd: float | None = None
    spent_tokens: int = 0
    spent_usd: float = 0.0
    outcome: str = ""  # its night's outcome (accepted, rejected, no-candidate, stopped-early)
    proposal: str | None = None


class FanoutResult(Record):
    """What one fan-out night did: every group with its row, in the order they ran (trained ones
    first, most sessions first), the cap that was shared and the rules it was shared by."""

    fanout: int
    started: UtcDatetime
    finished: UtcDatetime
    dry_run: bool = False
    cap_tokens: int | None = None
    cap_usd: float | None = None
    needs: int  # sessions a group needs before it is mined
    rows: list[SkillRow] = Field(default_factory=list)
    grouping: str = FIRST_RULE

    def nights(self) -> list[int]:
        return [r.night for r in self.rows if r.night is not None]


def newest_fanout(data: Path, problems: list[str]) -> tuple[FanoutResult, Path] | None:
    """The newest fan-out under `data`/fanouts and its folder (None: none yet); one whose fanout.json
    cannot be read is one of the `problems` (the older ones are not looked at)."""
    root = data / "fanouts"
    numbers = (
        sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)) if root.is_dir() else []
    )
    if not numbers:
        return None
    path = numbers[-1] / "fanout.json"
    try:
        return FanoutResult.model_validate_json(path.read_bytes()), numbers[-1]
    except (OSError, ValidationError) as exc:
        problems.append(f"{path} cannot be read ({why_unreadable(exc)}); `status` shows no fan-out until the next one")
        return None
