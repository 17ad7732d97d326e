"""Which agent a night uses when nothing says otherwise: the rule, as a typed record.

After `skillsleep install claude-code` (or codex) a night with nothing configured replays in that
agent and uses its headless mode as the model (the backend provider the agent's record names,
`Agent.provider`), under a token cap. The agent is, first that applies:

1. the agent the command was typed in (its `/sleep` or `$sleep` skill runs `skillsleep sleep
   --from-agent NAME`, kept as `SKILLSLEEP_FROM_AGENT`: slash_commands/night_agent.py): the user is
   in it now;
2. the only agent installed that can be the model;
3. of several, the one installed most recently (`skillsleep install NAME` again makes NAME the
   newest);
4. none: the built-in defaults, the chat harness on the embedded local model.

The harness and the model go together (`agent_level()`): set one of them to an agent and the other
follows it (`--backend codex` replays in Codex too; `--harness claude-code` makes Claude Code the
model); set the model to anything else (`--backend local`, `deepseek`) and the harness stays the
built-in `chat`, so `--backend local` is still a night that needs no network. With no agent
installed (rule "none") nothing follows and the built-in defaults stay as they were. Whenever the
night's model is an agent, it has a token cap unless one is set (`AGENT_BUDGET_TOKENS`).

Only agents that can answer model calls count (OpenClaw cannot); an install is what its manifest
under `<data>/installed/` records, its time the last `skillsleep install` of it. This level sits
below every explicit setting (flag > env > file > agent > default, slash_commands/wiring.py), so
`--backend local` or `[sleep] harness = "chat"` always wins. `choose_agent()` is pure and imports
no backend: the backend spec is only a name here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from skillsleep.core.shared.records import Record, UtcDatetime

__all__ = [
    "AGENT_BUDGET_TOKENS",
    "AgentChoice",
    "AgentLevel",
    "InstalledAgent",
    "agent_level",
    "choose_agent",
    "installed_agents",
]

# The token cap of a night whose model is an agent, when none is set (`[sleep] budget_tokens`; 0
# removes it). A default night (20 tasks, 2 steps, 1 dream each) makes about 100-150 model calls;
# the scripted night of bench/night.py spends ~380 prompt tokens a call, and an agent's headless
# mode adds its own instructions to each (Codex's are a few thousand tokens, mostly from its
# cache, but counted): one million tokens lets such a night finish with room to spare, and stops a
# runaway (a large corpus, a raised max_tasks, retries) at about $2 of input at the API price of
# claude-sonnet-5, the anthropic provider's default. A subscription's quota is real money: the cap
# is on unless the user raises or removes it.
AGENT_BUDGET_TOKENS = 1_000_000

Rule = Literal["typed-in", "only-installed", "latest-installed", "none"]


class InstalledAgent(Record):
    """An agent skillsleep is installed into that can be a night's model, and when it was installed."""

    name: str
    installed: UtcDatetime


class AgentChoice(Record):
    """The agent a night defaults to, as harness and model, and why (`reason`, in words).

    With no agent (`rule` "none") `agent` is None and nothing here goes over the built-in defaults."""

    agent: str | None
    harness: str | None  # the harness it replays in (the agent's name); None: the built-in default
    backend: str | None  # the backend spec of its headless mode (`claude-code`); None: the built-in default
    budget_tokens: int = AGENT_BUDGET_TOKENS  # the cap whenever an agent is the model and none is set
    rule: Rule
    reason: str  # "claude-code (installed 2026-12-01; the only agent installed)"
    installed: list[InstalledAgent] = Field(default_factory=list)  # oldest first


def _day(when: datetime) -> str:
    return when.date().isoformat()


def choose_agent(
    installed: Sequence[InstalledAgent], models: Mapping[str, str], *, typed_in: str | None = None
) -> AgentChoice:
    """The rule above. `installed`: the agents installed here; `models`: agent name → its backend
    provider, for every agent that can be the model (others in `installed` are left out);
    `typed_in`: the agent the command was typed in (it must be in `models`)."""
    usable = sorted((a for a in installed if a.name in models), key=lambda a: a.installed)
    if typed_in is not None:
        if typed_in not in models:
            raise ValueError(f"{typed_in!r} cannot be the model (known: {', '.join(models)})")
        return _choice(typed_in, models, "typed-in", "the agent this command was typed in", usable)
    if not usable:
        return AgentChoice(
            agent=None,
            harness=None,
            backend=None,
            rule="none",
            reason="no agent installed: skillsleep install " + " or ".join(models) + " makes one the harness and "
            "the model of a night",
        )
    newest = usable[-1]
    if len(usable) == 1:
        return _choice(
            newest.name,
            models,
            "only-installed",
            f"installed {_day(newest.installed)}; the only agent installed",
            usable,
        )
    others = ", ".join(f"{a.name} on {_day(a.installed)}" for a in usable[:-1])
    why = (
        f"installed {_day(newest.installed)}, after {others}: the most recently installed of {len(usable)}; "
        "installing one again makes it the newest"
    )
    return _choice(newest.name, models, "latest-installed", why, usable)


def _choice(name: str, models: Mapping[str, str], rule: Rule, why: str, usable: list[InstalledAgent]) -> AgentChoice:
    return AgentChoice(
        agent=name, harness=name, backend=models[name], rule=rule, reason=f"{name} ({why})", installed=usable
    )


class AgentLevel(Record):
    """What the agent level gives the `[sleep]` keys `harness`, `backend` and `budget_tokens` that
    no explicit level set (`values`), why, in words (`why`, by key), and the agent chosen."""

    choice: AgentChoice
    values: dict[str, str | int] = Field(default_factory=dict)
    why: dict[str, str] = Field(default_factory=dict)


BUDGET_WHY = "the cap when an agent is the model: a subscription's quota is real money; --budget-tokens 0 removes it"


def agent_level(
    choice: AgentChoice, models: Mapping[str, str], *, harness: str | None = None, backend: str | None = None
) -> AgentLevel:
    """The agent level under the explicit `harness` and `backend` (None: no flag, env or file set
    it): the chosen agent as both, or the one of them the other follows (the rules above)."""
    owner = {provider: name for name, provider in models.items()}
    level = AgentLevel(choice=choice)
    if choice.rule != "none":
        if backend is not None:
            name = owner.get(backend.partition(":")[0])
            if name is not None and harness is None:
                level.values["harness"] = name
                level.why["harness"] = f"{name} is the model ({backend}), so it replays the tasks too"
        elif harness is not None:
            follows = models.get(harness)
            if follows is not None:
                level.values["backend"] = follows
                level.why["backend"] = f"{harness} replays the tasks, so it is the model too"
            elif choice.backend is not None:
                level.values["backend"], level.why["backend"] = choice.backend, choice.reason
        else:
            for key, value in (("harness", choice.harness), ("backend", choice.backend)):
                if value is not None:
                    level.values[key], level.why[key] = value, choice.reason
    model = backend if backend is not None else level.values.get("backend")
    if isinstance(model, str) and model.partition(":")[0] in owner:
        level.values["budget_tokens"], level.why["budget_tokens"] = choice.budget_tokens, BUDGET_WHY
    return level


def installed_agents(data_dir: Path, names: Sequence[str]) -> list[InstalledAgent]:
    """Those of `names` that `skillsleep install` recorded under `data_dir` (an unreadable record is
    a ConfigError that says what to do), with the time of their last install."""
    from skillsleep.harnesses.install import Installs

    installs = Installs(data_dir, env={})
    found = [(name, installs.manifest(name)) for name in names]
    return [InstalledAgent(name=name, installed=m.time) for name, m in found if m is not None]
