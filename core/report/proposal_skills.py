"""Which skill a staged proposal belongs to, by name, so a verb can take a skill's name where it
took a proposal id (`adopt review-pr`, `rollback review-pr`).

A proposal records the live file it replaces (and the section of it, for an instruction file's
section); its skill's name is read from the file as it was staged (`base.md`; the candidate for a
skill that did not exist yet), the way `skillsleep skills` names skills:

    a SKILL.md          its frontmatter `name`, else its folder's name (the folder's name is an alias)
    a section           `FILE#Heading` (the heading alone is an alias)
    any other file      its file name (`AGENTS.md`)

A name is the same skill when the file and section are: `key` (one skill, however many proposals).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from skillsleep.core.document.skill import Skill, frontmatter_value
from skillsleep.core.report.proposal_record import Action, Proposal
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record

__all__ = [
    "Found",
    "ProposalSkill",
    "by_id_or_skill",
    "by_skill",
    "file_to_roll_back",
    "newest_per_skill",
    "pending_skills",
    "skill_of",
]

Found = list[tuple[Proposal, "ProposalSkill"]]  # proposals, oldest first, each with its skill

SKILL_FILE = "SKILL.md"


class ProposalSkill(Record):
    """The skill a proposal would change: how the user names it, and its file (and section)."""

    name: str
    path: str  # the live file
    section: str | None = None
    aliases: list[str] = Field(default_factory=list)  # other names it answers to

    @property
    def key(self) -> str:
        """One skill: its file, and its section when it has one."""
        return self.path + (f"#{self.section}" if self.section else "")

    def answers_to(self, name: str) -> bool:
        return name == self.name or name in self.aliases

    def shown(self) -> str:
        """`review-pr (/home/me/.claude/skills/review-pr/SKILL.md)`."""
        return f"{self.name} ({self.key})"


def skill_of(p: Proposal, staged_text: str) -> ProposalSkill:
    """The skill of `p`, named from `staged_text` (the file it was staged against, or its candidate)."""
    path = Path(p.skill_path)
    section = p.details.get("section")
    if isinstance(section, str) and section:
        return ProposalSkill(name=f"{path.name}#{section}", path=p.skill_path, section=section, aliases=[section])
    if path.name != SKILL_FILE:
        return ProposalSkill(name=path.name, path=p.skill_path)
    folder = path.parent.name
    name = frontmatter_value(Skill.parse(staged_text).frontmatter, "name") or folder
    return ProposalSkill(name=name, path=p.skill_path, aliases=[folder] if folder != name else [])


def skills_line(skills: list[ProposalSkill]) -> str:
    """`review-pr (PATH), fmt (PATH)`, each skill once, or "none"."""
    seen = {s.key: s for s in skills}
    return ", ".join(s.shown() for s in seen.values()) or "none"


def pending_skills(found: Found) -> str:
    """The skills with pending proposals, for a message: `review-pr (PATH), fmt (PATH)` or "none"."""
    return skills_line([s for p, s in found if p.status == "staged"])


def by_id_or_skill(
    target: str, proposals: list[Proposal], skills: Callable[[list[Proposal]], Found], *, accepted_only: bool
) -> Proposal:
    """The proposal `target` means: the one with that id (a unique prefix of one is enough), else the
    skill called `target`'s (`by_skill`); neither is a ConfigError naming the skills with pending
    proposals and the recent ids. `skills` names the skill of each proposal (only read when needed)."""
    hits = [p for p in proposals if p.id == target] or [p for p in proposals if p.id.startswith(target)]
    if len(hits) == 1:
        return hits[0]
    found = skills(proposals)
    named = by_skill(target, found, accepted_only=accepted_only)
    if named is not None:
        return named
    known = ", ".join(p.id for p in proposals[-5:]) or "none"
    what = "matches several proposals" if hits else "is not a staged proposal nor the name of a skill with one"
    raise ConfigError(
        f"{target!r} {what}; skills with pending proposals: {pending_skills(found)}; recent proposals: {known} "
        "(see `skillsleep status`)"
    )


def by_skill(name: str, found: Found, *, accepted_only: bool) -> Proposal | None:
    """The newest pending proposal of the skill called `name` (with `accepted_only`: the newest the
    gate accepted); None when no proposal's skill answers to that name. A ConfigError that says what
    to type when that skill has no pending (or no accepted pending) proposal, or when several skills
    of that name (different files) have pending ones."""
    named = [(p, s) for p, s in found if s.answers_to(name)]
    if not named:
        return None
    pending = [(p, s) for p, s in named if p.status == "staged"]
    if not pending:
        last = named[-1][0]
        raise ConfigError(
            f"skill {name!r} has no pending proposal (its newest, {last.id}, was {last.status}); "
            f"skills with pending proposals: {pending_skills(found)}"
        )
    newest = {s.key: p for p, s in pending}  # oldest first: the last of each skill wins
    if len(newest) > 1:
        each = "; ".join(f"{key} (newest: {p.id})" for key, p in newest.items())
        raise ConfigError(
            f"{name!r} names {len(newest)} skills with pending proposals: {each}; name the one you mean by its "
            "proposal id (`skillsleep status` lists them)"
        )
    chosen = [p for p, _ in pending if p.accepted or not accepted_only]
    if not chosen:
        last = pending[-1][0]
        raise ConfigError(
            f"skill {name!r} has no pending proposal the gate accepted: its newest, {last.id}, was not "
            f"({last.reason}); adopt it anyway with `skillsleep adopt {last.id} --force`"
        )
    return chosen[-1]


def newest_per_skill(found: Found) -> list[tuple[Proposal, list[Proposal]]]:
    """The newest accepted pending proposal of each skill, oldest skill first, each with the older
    accepted pending proposals of that skill (`adopt --all` leaves them pending)."""
    per: dict[str, list[Proposal]] = {}
    for p, s in found:
        if p.status == "staged" and p.accepted:
            per.setdefault(s.key, []).append(p)
    return [(ps[-1], ps[:-1]) for ps in per.values()]


def file_to_roll_back(name: str, changes: list[Action], found: Found) -> str:
    """The live file whose recorded `changes` (adopts, rollbacks) `rollback NAME` undoes: the file of
    the skill called `name`, or the file with that path. None, or several files: a ConfigError
    naming the skills whose changes are recorded."""
    changed = {a.skill_path for a in changes}
    path = str(Path(name).expanduser().resolve()) if "/" in name else ""
    if path in changed:
        return path
    recorded = [s for _, s in found if s.path in changed]
    files = list(dict.fromkeys(s.path for s in recorded if s.answers_to(name)))
    if len(files) == 1:
        return files[0]
    if files:
        raise ConfigError(
            f"{name!r} names skills in {len(files)} files: {', '.join(files)}; roll back one by its path "
            "(`skillsleep rollback PATH`)"
        )
    raise ConfigError(
        f"no adopt of a skill called {name!r} is recorded, so there is nothing of it to roll back; skills with "
        f"recorded adopts: {skills_line(recorded)}"
    )
