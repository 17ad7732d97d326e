"""Which harness and model a night started now would use, with its token cap, and why: `NextNight`,
shown by `skillsleep config` and `skillsleep status` (`/sleep status`). Each of the three comes
from the `[sleep]` settings layered flag > env > file > agent > default (wiring.sleep_settings);
the agent level is the agent a night defaults to (harnesses/default_agent.py)."""

from __future__ import annotations

from skillsleep.core.shared.records import Record
from skillsleep.harnesses.default_agent import AgentChoice, AgentLevel
from skillsleep.slash_commands.setting_records import ScalarSetting, SleepSettings

__all__ = ["NextNight", "next_night", "next_night_line", "of_settings"]


class NextNight(Record):
    """The harness a night replays in, the backend that answers its model calls and its token cap
    (0: none), each with where it came from in words; and the agent a night defaults to."""

    harness: str
    harness_from: str
    backend: str  # provider or provider:model (the optimizer's, which the judge shares)
    backend_from: str
    budget_tokens: int
    budget_from: str
    from_agent: bool  # the harness or the backend came from the agent level
    agent: AgentChoice  # the agent a night defaults to, by the rule, and why


def _from(key: str, setting: ScalarSetting, agent: AgentLevel) -> str:
    from skillsleep.slash_commands.wiring import config_file, origin_label

    if setting.source == "default":
        return "the default"
    label = origin_label(setting.source, f"sleep.{key}", config_file(), agent)
    return label if setting.source == "agent" else f"set by {label}"


def next_night(settings: SleepSettings | None = None) -> NextNight:
    """What a night started now (`skillsleep run` with no flags, or `/sleep run` here) would use;
    `settings` default to `wiring.sleep_settings()` (a ConfigError names a bad setting)."""
    from skillsleep.slash_commands.wiring import sleep_settings

    s = settings if settings is not None else sleep_settings()
    return of_settings(s.settings, s.agent)


def of_settings(each: dict[str, ScalarSetting], agent: AgentLevel) -> NextNight:
    """The next night of the layered `[sleep]` settings `each` (by key) and the agent level `agent`."""
    backend, model = str(each["backend"].value), str(each["optimizer_model"].value)
    cap = each["budget_tokens"].value
    return NextNight(
        harness=str(each["harness"].value),
        harness_from=_from("harness", each["harness"], agent),
        backend=f"{backend.partition(':')[0]}:{model}" if model else backend,
        backend_from=_from("backend", each["backend"], agent),
        budget_tokens=cap if isinstance(cap, int) else 0,
        budget_from=_from("budget_tokens", each["budget_tokens"], agent),
        from_agent="agent" in (each["harness"].source, each["backend"].source),
        agent=agent.choice,
    )


def next_night_line(n: NextNight) -> str:
    """One line: "next night: replays in claude-code, claude-code as the model ← why; token cap
    1,000,000 ← why", with how to install an agent when none is and nothing else is set, and how
    to choose another when the newest of several installed agents was taken."""
    if n.harness_from == n.backend_from:
        what = f"replays in {n.harness}, {n.backend} as the model ← {n.harness_from}"
    else:
        what = f"replays in {n.harness} ← {n.harness_from}; {n.backend} as the model ← {n.backend_from}"
    if n.agent.rule == "latest-installed" and n.agent.reason in (n.harness_from, n.backend_from):
        what += " (--harness / --backend, or [sleep] harness / backend, choose another)"
    cap = f"token cap {n.budget_tokens:,} ← {n.budget_from}" if n.budget_tokens else "no token cap"
    line = f"next night: {what}; {cap}"
    if n.agent.rule == "none" and "the default" in (n.harness_from, n.backend_from):
        line += f" ({n.agent.reason})"
    return line
