"""Staged proposals and the only code that writes a user's live skill: adopt, reject, rollback.

    <data>/staging/<id>/proposal.json   the Proposal record (status changes are atomic rewrites)
    <data>/staging/<id>/SKILL.md        the candidate skill
    <data>/staging/<id>/base.md         the live file as it was when the proposal was staged
    <data>/staging/<id>/diff.patch      unified diff live → candidate
    <data>/staging/<id>/adopted.md      what `adopt --edits` wrote: the base with the chosen changes
    <data>/backups/<n>-<id>/            the live file before each adopt / rollback (core/report/backups.py)
    <data>/history.jsonl                every action (stage, adopt, reject, rollback, supersede), one line each

Rules: the live file is written only by `adopt` and `rollback`, always backed up first and
replaced atomically (a reader, or a kill at any instant, sees the old or the new file, never a
torn one). `adopt` refuses when the live file changed since staging (the user edited it) unless
`force`, and the refusal shows both changes: the user's (base → live) and the proposal's
(base → candidate). `adopt --edits 1,3` writes only some of the proposal's numbered changes
(core/report/changes.py) into the base, after the same checks plus the bounded-edit rules and the safety
screen on what it adds; the proposal is then "adopted" with those numbers. An adopt supersedes
the older pending proposals of its skill (core/report/supersede.py). `rollback` refuses in
the same way when the live file changed since the
adopt or rollback it undoes wrote it, and refuses to act at all on a history with a line it
cannot read (that line may be the very change it would skip over).
"""

from __future__ import annotations

import builtins
import hashlib
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillsleep.core.document.newlines import endings_note, style
from skillsleep.core.models.rundir import append_line, file_mode, write_atomic, write_private
from skillsleep.core.privacy.safety import screen_all
from skillsleep.core.report import backups
from skillsleep.core.report import changes as numbered
from skillsleep.core.report.changes import Change, unified_diff
from skillsleep.core.report.proposal_record import (
    Action,
    Adoption,
    Conflict,
    Proposal,
    conflict_message,
    file_hash,
    hash_of_base,
    read_text,
    your_edits,
)
from skillsleep.core.report.proposal_skills import Found, ProposalSkill, by_id_or_skill, file_to_roll_back, skill_of
from skillsleep.core.report.supersede import supersede
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.jsonl import line_label, read_records, why_unreadable
from skillsleep.core.shared.records import Edit
from skillsleep.core.train.edits import structure_problems


def _now() -> datetime:
    return datetime.now(UTC)


class Proposals:
    """The staging area, backups and history under one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir)
        self.staging = self.root / "staging"
        self.backups = self.root / "backups"
        self.history_path = self.root / "history.jsonl"
        self.unreadable: list[tuple[Path, str]] = []  # (proposal.json, why) of proposals the last list() skipped
        self.bad_history: list[tuple[int, str]] = []  # (line number, why) of history() lines skipped

    # --- staging -------------------------------------------------------------------------------

    def stage(
        self,
        skill_path: Path,
        candidate: str,
        *,
        accepted: bool,
        reason: str,
        files: dict[str, str] | None = None,
        base_text: str | None = None,
        **fields: Any,
    ) -> Proposal:
        """Stage a candidate for `skill_path` (the live file is only read). `files` are extra
        report files written next to it (report.md, report.json, report.html …).

        `base_text` is the live file as the candidate was derived from it (None: as it is now; ""
        with no file: a new skill). When the live file changed since then, adopt sees a conflict,
        so edits the user made during a night are never overwritten silently."""
        live = Path(skill_path).expanduser().resolve()
        base = base_text if base_text is not None else (live.read_bytes().decode("utf-8") if live.exists() else "")
        base_hash = hash_of_base(live, base_text)
        pid = _now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        folder = self.staging / pid
        write_private(folder / "SKILL.md", candidate.encode(), mode=file_mode(live))  # copies: the live file's mode
        write_private(folder / "base.md", base.encode(), mode=file_mode(live))
        write_private(folder / "diff.patch", unified_diff(base, candidate, f"a/{live.name}", f"b/{live.name}").encode())
        for name, text in (files or {}).items():
            write_private(folder / name, text)
        proposal = Proposal(
            id=pid,
            created=_now(),
            skill_path=str(live),
            base_hash=base_hash,
            candidate_hash=hashlib.sha256(candidate.encode()).hexdigest(),
            accepted=accepted,
            reason=reason,
            **fields,
        )
        self._save(proposal)  # proposal.json last: a proposal without it was never staged
        self._record(
            Action(
                time=_now(),
                kind="stage",
                proposal_id=pid,
                skill_path=str(live),
                detail=("accepted: " if accepted else "not accepted: ") + reason,
            )
        )
        return proposal

    def restage_files(self, p: Proposal, files: dict[str, str]) -> None:
        """Write the report files staged with `p` again: after an auto-adopt, the report of the night
        that tried it (of a proposal an earlier night staged too), so every copy says what it did.
        Each is replaced atomically and keeps its mode."""
        for name, text in files.items():
            write_private(self.staging / p.id / name, text)

    def find_pending(
        self, skill_path: Path, candidate: str, *, base_text: str | None, accepted: bool
    ) -> Proposal | None:
        """The newest pending proposal that `stage()` with these arguments would repeat: same live
        file, same base, same candidate, same verdict (a night that re-learned what still waits)."""
        live = Path(skill_path).expanduser().resolve()
        want = (str(live), hash_of_base(live, base_text), hashlib.sha256(candidate.encode()).hexdigest(), accepted)
        for p in reversed(self.list()):
            if p.status == "staged" and (p.skill_path, p.base_hash, p.candidate_hash, p.accepted) == want:
                return p
        return None

    def list(self) -> list[Proposal]:
        """Every staged proposal, oldest first. A folder without proposal.json is a staging that
        was interrupted (it is written last) and is skipped; one whose proposal.json cannot be
        read is skipped too, but named in `unreadable` so `status` can tell the user."""
        out = []
        self.unreadable = []
        if self.staging.is_dir():
            for folder in sorted(self.staging.iterdir()):
                p = self._load(folder)
                if p is not None:
                    out.append(p)
        # by creation time: ids carry whole seconds only, so two staged in one second sort at random
        return sorted(out, key=lambda p: (p.created, p.id))

    def get(self, pid: str | None = None, *, accepted_only: bool = False) -> Proposal:
        """A proposal by id (a unique prefix is enough), else by its skill's name (that skill's
        newest pending one: proposal_skills.py), or with neither the newest pending one; with
        `accepted_only` a name or the default picks among the proposals the gate accepted."""
        proposals = self.list()
        if pid:
            return by_id_or_skill(pid, proposals, self.with_skills, accepted_only=accepted_only)
        pending = [p for p in proposals if p.status == "staged" and (p.accepted or not accepted_only)]
        if not pending:
            kind = "accepted " if accepted_only else ""
            raise ConfigError(
                f"there is no pending {kind}proposal; run `skillsleep run` for a night, "
                "or name one with its id (see `skillsleep status`)"
            )
        return pending[-1]

    def skill(self, p: Proposal) -> ProposalSkill:
        """The skill `p` would change, named from the file it was staged against (or its candidate,
        for a skill that did not exist yet; its path alone when neither can be read)."""
        try:
            text = self.base(p) or self.candidate(p)
        except OSError:
            text = ""
        return skill_of(p, text)

    def with_skills(self, proposals: builtins.list[Proposal] | None = None) -> Found:
        """`proposals` (default: every one, oldest first), each with its skill."""
        return [(p, self.skill(p)) for p in (self.list() if proposals is None else proposals)]

    def candidate(self, p: Proposal) -> str:
        return read_text(self.staging / p.id / "SKILL.md")

    def base(self, p: Proposal) -> str:
        """The live file as the proposal was staged against it."""
        return read_text(self.staging / p.id / "base.md")

    def changes(self, p: Proposal) -> builtins.list[Change]:
        """The proposal's numbered changes against the file it was staged against."""
        return numbered.changes(self.base(p), self.candidate(p))

    def diff(self, p: Proposal) -> str:
        """The proposal's diff against the live file as it is NOW."""
        live = Path(p.skill_path)
        current = read_text(live) if live.exists() else ""
        return unified_diff(current, self.candidate(p), f"a/{live.name} (live)", f"b/{live.name} (proposal {p.id})")

    def line_endings(self, p: Proposal) -> dict[str, str]:
        """The line endings of the live file now and of the proposal ("LF", "CRLF", "mixed" …)."""
        live = Path(p.skill_path)
        return {"live": style(read_text(live)) if live.exists() else "absent", "proposal": style(self.candidate(p))}

    def endings_note(self, p: Proposal) -> str:
        """A sentence when the live file and the proposal differ in line endings, else ""."""
        endings = self.line_endings(p)
        return endings_note(endings["live"], endings["proposal"], "the live file", "the proposal")

    # --- decisions -----------------------------------------------------------------------------

    def adopt(self, pid: str | None = None, *, force: bool = False, edits: str | None = None) -> Adoption:
        """Put a proposal live: the newest accepted pending one by default; the proposal adopted and
        the history line recorded. Refuses a proposal the gate did not accept, or a live file
        edited since staging, unless `force`.

        `edits` ("1,3": numbers as `changes()` gives them) puts only those changes live, into the
        file the proposal was staged against (with it and no id: the newest pending proposal, the
        one `diff` shows); refused when the result would break the bounded-edit rules or a chosen
        line fails the safety screen."""
        p = self.get(pid, accepted_only=edits is None)  # an id: that proposal, accepted or not
        p.refuse_superseded()
        if p.status != "staged":
            raise ConfigError(f"proposal {p.id} was already {p.status}; stage a new one with `skillsleep run`")
        if not p.accepted and not force:
            raise ConfigError(
                f"proposal {p.id} was not accepted by the gate ({p.reason}); adopt it anyway with --force"
            )
        live = Path(p.skill_path)
        current = file_hash(live)
        if current != p.base_hash and not force:
            raise Conflict(conflict_message(p, self.base(p), self.candidate(p)))
        found = self.changes(p) if edits is not None else []
        chosen = None if edits is None else numbered.parse_numbers(edits, len(found))
        content = (self.staging / p.id / "SKILL.md").read_bytes() if chosen is None else self._partial(p, found, chosen)
        backup = backups.back_up(self.backups, live, p.id, reason=f"before adopting {p.id}")
        inside = live.is_relative_to(self.root.resolve())  # the managed skill: private, like the rest of the folder
        (write_private if inside else write_atomic)(live, content)
        p = p.model_copy(update={"status": "adopted", "adopted_edits": chosen})
        self._save(p)
        forced = force and current != p.base_hash
        detail = [f"changes {', '.join(map(str, chosen))} of {len(found)}"] if chosen is not None else []
        action = Action(
            time=_now(),
            kind="adopt",
            proposal_id=p.id,
            skill_path=str(live),
            detail="; ".join(detail + (["forced"] if forced else [])),
            backup=backup,
            forced=forced,
            edits=chosen,
        )
        self._record(action)
        superseded = supersede(p, self.with_skills(), self._save, self._record)
        return Adoption(proposal=p, action=action, superseded=superseded)

    def _partial(self, p: Proposal, found: builtins.list[Change], chosen: builtins.list[int]) -> bytes:
        """The base with only the `chosen` changes, checked like the night checked the whole
        candidate, and kept as adopted.md (what the adopt wrote, for rollback)."""
        base, candidate = self.base(p), self.candidate(p)
        result = numbered.apply(base, candidate, chosen)
        problems = structure_problems(base, candidate, result)
        if problems:
            picked = f"change{'s' if len(chosen) > 1 else ''} {', '.join(map(str, chosen))}"
            raise ConfigError(
                f"{picked} of proposal {p.id} without the others would break the skill: " + "; ".join(problems)
            )
        for c in (c for c in found if c.number in chosen and c.added):
            refused = screen_all([Edit(op="add", content="".join(c.added))])[1]
            if refused:
                raise ConfigError(
                    f"change {c.number} is refused by the safety screen: {refused[0].why()}; "
                    "adopt the other changes without it"
                )
        write_private(self.staging / p.id / "adopted.md", result.encode(), mode=file_mode(Path(p.skill_path)))
        return result.encode()

    def reject(self, pid: str | None = None, *, detail: str = "") -> Proposal:
        p = self.get(pid)
        p.refuse_superseded()
        if p.status != "staged":
            raise ConfigError(f"proposal {p.id} was already {p.status}")
        p = p.model_copy(update={"status": "rejected"})
        self._save(p)
        self._record(Action(time=_now(), kind="reject", proposal_id=p.id, skill_path=p.skill_path, detail=detail))
        return p

    def rollback(self, steps: int = 1, *, force: bool = False, skill: str | None = None) -> Action:
        """Undo the last `steps` adopts/rollbacks of the most recently changed skill (of the skill
        named `skill`, or of the file with that path), restoring the file as it was before
        them (the current file is backed up first, so this is undoable). A section's skill is the
        file it is in: its changes are the file's. Refuses when the live file changed since the last
        of them wrote it, unless `force`, and whenever a line of the history cannot be read."""
        if steps < 1:
            raise ConfigError("rollback needs STEPS >= 1")
        history = self.history()
        if self.bad_history:
            lines = ", ".join(str(n) for n, _ in self.bad_history)
            what = (
                "cannot be read as a whole"
                if lines == "0"
                else f"has lines that cannot be read (lines {lines}); one of them may be the change a rollback would "
                "have to undo first"
            )
            raise ConfigError(
                f"{self.history_path} {what}, so nothing was rolled back. Run `skillsleep doctor --repair` to move "
                "what cannot be read aside (kept in a file next to it), then roll back again; every earlier version "
                f"of the file is also in {self.backups}."
            )
        changes = [a for a in history if a.kind in ("adopt", "rollback") and a.backup]
        if not changes:
            raise ConfigError("nothing to roll back: no adopt has been recorded")
        skill = file_to_roll_back(skill, changes, self.with_skills()) if skill else changes[-1].skill_path
        changes = [a for a in changes if a.skill_path == skill]
        if steps > len(changes):
            raise ConfigError(f"only {len(changes)} change(s) of {skill} are recorded; roll back at most that many")
        target = changes[-steps]
        assert target.backup is not None and skill is not None
        live = Path(skill)
        last = changes[-1]
        wrote = self._written(last)
        edited = wrote is not None and file_hash(live) != wrote[0]
        if wrote is not None and edited and not force:
            what = f"{last.kind} of {last.proposal_id}" if last.proposal_id else last.kind
            yours = your_edits(wrote[1], live, f"as the {last.kind} wrote it", since="since then")
            raise Conflict(
                f"{live} changed since the last {what} wrote it, so rolling back would drop your "
                f"edits.\n{yours}Copy what you want to keep, or roll back anyway with --force (the "
                "current file is backed up first)."
            )
        backup = backups.back_up(self.backups, live, None, reason=f"before rolling back {steps} step(s)")
        backups.restore(Path(target.backup), live)
        action = Action(
            time=_now(),
            kind="rollback",
            skill_path=skill,
            backup=backup,
            restored_from=target.backup,
            forced=edited,
            detail=f"restored the file from before {target.kind} {target.proposal_id or ''}".strip(),
        )
        self._record(action)
        return action

    def history(self) -> builtins.list[Action]:
        """Every readable action, oldest first. A line that cannot be read (not UTF-8, not an
        action, torn by a kill) is skipped and named in `bad_history`."""
        out, self.bad_history = read_records(self.history_path, Action)
        return out

    @property
    def problems(self) -> builtins.list[str]:
        """The proposals the last list() skipped, each with what to do, for `status`."""
        return [
            f"{path} cannot be read ({why}); `skillsleep doctor --repair` moves it aside (the staged skill "
            f"stays), or delete the folder {path.parent} to drop that proposal"
            for path, why in self.unreadable
        ]

    def history_problems(self) -> builtins.list[str]:
        """The lines the last history() skipped, each with what to do, for `status`."""
        return [
            f"{self.history_path} {line_label(n)} cannot be read ({why}); rollback refuses until "
            "`skillsleep doctor --repair` moves it aside"
            for n, why in self.bad_history
        ]

    # --- internals -----------------------------------------------------------------------------

    def _written(self, action: Action) -> tuple[str, str] | None:
        """(hash, text) of what an adopt or rollback wrote into the live file (ABSENT and "" for
        a rollback that removed it); None when that is no longer known (its files are gone, or a
        rollback recorded before skillsleep noted what it restored)."""
        if action.kind == "rollback" and action.restored_from:
            return backups.held(Path(action.restored_from))
        if action.kind != "adopt" or not action.proposal_id:
            return None
        source = self.staging / action.proposal_id / ("adopted.md" if action.edits is not None else "SKILL.md")
        return (file_hash(source), read_text(source)) if source.is_file() else None

    def _save(self, p: Proposal) -> None:
        write_private(self.staging / p.id / "proposal.json", p.model_dump_json(indent=2) + "\n")

    def _load(self, folder: Path) -> Proposal | None:
        path = folder / "proposal.json"
        if not path.exists():
            return None
        try:
            return Proposal.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            self.unreadable.append((path, why_unreadable(exc)))
            return None

    def _record(self, action: Action) -> None:
        append_line(self.history_path, action.model_dump_json(), durable=True)
