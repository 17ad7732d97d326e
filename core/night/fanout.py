"""Which skills one night trains, and how they share its budget: the rules of a fan-out, pure code
(core/night/fanout_run.py runs it; docs/sleep.md#which-skills-a-night-trains states them).

Grouping (`group_sessions`): each stored session since the cutoff goes to the skill it used. Its
`skills` are names as the agent gave them; a writable skill answers to its own names (its name and
its folder's, `FanoutSkill.names`). A session that used one writable skill goes to that skill's
group; one that used several goes to the first of them it used; one that used none, or only
read-only or unknown skills, goes to the managed skill's group (as every session did before).
With names chosen (`[sleep] skills = [...]`, `--skills`) a group outside them is not trained.

Evidence floor (`needs`): a night needs at least `gate_min_wins` held-out tasks and one to train on
(2 tasks with the gate off), each recurring in `min_recurrence` sessions; a group with fewer
sessions than that (counting one task a session) is not mined at all.

Budget (`next_share`): with a cap, the skills run most sessions first; each gets what is left ×
its sessions / the sessions of the skills not yet run, and at least (whole cap) / (2 × skills
trained) while that much is left; what one leaves unspent passes on to the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from skillsleep.core.models.ledger import Budget
from skillsleep.core.night.live_skill import LiveSkill
from skillsleep.core.night.user_config import SleepSection

__all__ = ["FanoutSkill", "Group", "SessionKey", "Share", "group_sessions", "needs", "next_share"]

SessionKey = tuple[str, str]  # (harness, session id) of a stored session


@dataclass(frozen=True)
class FanoutSkill:
    """A writable skill of the night's agent, and the names a session may give it."""

    skill: LiveSkill
    names: frozenset[str]


@dataclass(frozen=True)
class Group:
    """One skill's sessions tonight; `selected`: whether the night's `skills` setting trains it."""

    skill: LiveSkill
    sessions: tuple[SessionKey, ...]
    selected: bool = True


@dataclass
class Share:
    """A skill's part of the night's budget (None: no cap) and what its night spent of it this run."""

    tokens: int | None = None
    usd: float | None = None
    spent_tokens: int = 0
    spent_usd: float = 0.0

    def cap(self, before_tokens: int, before_usd: float) -> Budget:
        """The ledger's cap of a night that spent `before_*` in its earlier runs: those and the share."""
        return Budget(
            tokens=None if self.tokens is None else before_tokens + self.tokens,
            usd=None if self.usd is None else before_usd + self.usd,
        )

    def spent(self, tokens: int, usd: float) -> None:
        self.spent_tokens, self.spent_usd = tokens, usd

    def empty(self) -> bool:
        """Nothing left to spend: a capped share of 0."""
        return self.tokens == 0 or self.usd == 0


def group_sessions(
    used: Mapping[SessionKey, Sequence[str]],
    skills: Sequence[FanoutSkill],
    managed: LiveSkill,
    chosen: Sequence[str] | None = None,
) -> list[Group]:
    """The groups of the sessions `used` (each session's key → the skills it used, in order): one
    per writable skill some session used, in the order of `skills`, then the managed skill's (with
    every other session). `chosen`: the names to train (None: every group)."""
    owner = {name: i for i, s in enumerate(skills) for name in sorted(s.names)}
    members: dict[int, list[SessionKey]] = {}
    for key, names in used.items():
        first = next((owner[n] for n in names if n in owner), -1)
        members.setdefault(first, []).append(key)
    wanted = set(chosen) if chosen is not None else None

    def selected(names: frozenset[str]) -> bool:
        return wanted is None or bool(names & wanted)

    groups = [
        Group(skill=s.skill, sessions=tuple(members[i]), selected=selected(s.names))
        for i, s in enumerate(skills)
        if i in members
    ]
    rest = tuple(members.get(-1, ()))
    return [*groups, Group(skill=managed, sessions=rest, selected=selected(frozenset({managed.name})))]


def needs(settings: SleepSection) -> int:
    """Sessions a group needs before it is mined: the tasks a night needs × `min_recurrence`."""
    tasks = settings.gate_min_wins + 1 if settings.gate == "on" else 2
    return tasks * settings.min_recurrence


def next_share(cap: Budget, spent: tuple[int, float], sessions: int, waiting: int, trained: int) -> Share:
    """The share of the next skill: `cap` is the whole night's, `spent` what the skills before it
    spent, `sessions` its own, `waiting` those of the skills not yet run (its own included) and
    `trained` how many skills the night trains."""
    return Share(
        tokens=None if cap.tokens is None else int(_part(cap.tokens, spent[0], sessions, waiting, trained)),
        usd=None if cap.usd is None else _part(cap.usd, spent[1], sessions, waiting, trained),
    )


def _part(cap: float, spent: float, sessions: int, waiting: int, trained: int) -> float:
    left = max(cap - spent, 0)
    floor = cap / (2 * trained)
    return max(left * sessions / max(waiting, 1), min(floor, left))
