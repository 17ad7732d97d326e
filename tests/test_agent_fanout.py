"""A fan-out night on sessions the real agents recorded (slow, real CLIs): the 32 sessions of
tests/fixtures/<agent>/fanout/ (scripts/record_fanout_fixtures.py: a user skill `review-pr` invoked as
`/review-pr …` or `$review-pr …`, a project (OpenClaw: workspace) skill `release-notes` the model
loaded on its own (Claude Code's Skill tool, Codex and OpenClaw reading its SKILL.md), a read-only
skill (a Claude Code plugin's `tools:lint`, Codex's system `openai-docs`, OpenClaw's bundled
`skill-creator`) and no skill, every task in two sessions) in a fake home holding those skills.

The real harvest attributes each session as the recording's manifest says; then one
`skillsleep run --harness <agent>` (the model roles on the scripted backend by name, every replay in
the pinned `claude` / `codex` / `openclaw` against the scripted agent server, tests/agent_server.py) makes three
groups and trains each on its own sessions (its own night and plan) with its share of the token
cap (by sessions, most first, what one leaves passing on), stages three proposals, each
against its own skill's file, never one for the read-only skill, and writes the fan-out summary
(each skill with its sessions, share and spend). `skillsleep adopt <name>` then changes that
skill's file only: the other skills' files stay byte-identical.

OpenClaw's night trains one group (`--skills review-pr`, no dreamed tasks: `--dreams 0`): every
replay starts Node and OpenClaw anew (seconds each), so its three nights took minutes (450 s on 2
cores; now about 120 s), while Claude Code and Codex already prove the three-group night, the
shared cap and the dreamed tasks. It still groups all 32 sessions, plans review-pr's night
on that group's sessions only, replays only them in the real openclaw, stages one proposal against
review-pr's file (none for the read-only or the unchosen skills) and `adopt review-pr` changes that
file only."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agent_server import AgentServer
from fixture_sessions import FIXTURES
from sleep_kit import RULE, TARGET_RULES, invoke, night_env, optimizer_rules, write_script

from skillsleep.core.models.store import Store
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.report.proposals import Proposals
from skillsleep.harnesses.skills import MANAGED_NAME

if TYPE_CHECKING:
    from conftest import AgentTools

pytestmark = pytest.mark.slow

SKILL = "---\nname: {name}\ndescription: The {name} skill of this team.\n---\n\n# {name}\n\n- Be precise.\n"
FOLDER = {"claude-code": "claude", "codex": "codex", "openclaw": "openclaw"}
CAP = 300_000  # tokens: enough for every skill's night, shared by the rule
READ_ONLY = {"claude-code": "tools:lint", "codex": "openai-docs", "openclaw": "skill-creator"}
WIRE = {"claude-code": "/messages", "codex": "/responses", "openclaw": "/chat/completions"}  # the agents' requests
EVERY = [MANAGED_NAME, "release-notes", "review-pr"]  # the groups, in the order a night trains them
TRAINED = {"openclaw": ["review-pr"]}  # `--skills` (and `--dreams 0`): the groups it trains (else all three)


def _home(root: Path, agent: str, tools: AgentTools) -> dict[str, Path]:
    """The recorded home again under `root`/home: its transcripts, the user skill review-pr, the
    read-only skill (Claude Code: a plugin's lint; Codex: its system skill openai-docs; OpenClaw:
    its bundled skill-creator, the pinned package's own file, only read) and the project (a git
    repository) with release-notes (OpenClaw: in the default workspace); the skills' files and the
    managed skill's."""
    home, project = root / "home", root / "home" / "project"
    (project / ".git").mkdir(parents=True)
    recorded = FIXTURES / FOLDER[agent] / "fanout"
    if agent == "claude-code":
        claude = home / ".claude"
        shutil.copytree(recorded / "projects", claude / "projects")
        plugin = claude / "plugins" / "cache" / "mkt" / "tools" / "1.0.2"
        (plugin / ".claude-plugin").mkdir(parents=True)
        (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "tools", "version": "1.0.2"}')
        user, mine, read_only = claude / "skills", project / ".claude" / "skills", plugin / "skills" / "lint"
    elif agent == "codex":
        shutil.copytree(recorded / "sessions", home / ".codex" / "sessions")
        user, mine = home / ".agents" / "skills", project / ".agents" / "skills"
        read_only = home / ".codex" / "skills" / ".system" / "openai-docs"
    else:
        shutil.copytree(recorded / "state", home / ".openclaw")
        user, mine = home / ".agents" / "skills", home / ".openclaw" / "workspace" / "skills"
        read_only = tools.bin.parent / "openclaw" / "skills" / "skill-creator"
    files = {
        "review-pr": user / "review-pr" / "SKILL.md",
        "release-notes": mine / "release-notes" / "SKILL.md",
        "read-only": read_only / "SKILL.md",
        MANAGED_NAME: (home / ".openclaw" / "skills" if agent == "openclaw" else user) / MANAGED_NAME / "SKILL.md",
    }
    for name in ("review-pr", "release-notes", "read-only"):
        if name == "read-only" and agent == "openclaw":
            continue  # the package's bundled skill, as installed
        files[name].parent.mkdir(parents=True)
        files[name].write_text(SKILL.format(name=read_only.name if name == "read-only" else name))
    return files


def _bytes(files: dict[str, Path]) -> dict[str, bytes | None]:
    return {name: path.read_bytes() if path.exists() else None for name, path in files.items()}


def _first_prompt(store: Store, key: tuple[str, str]) -> str:
    session = store.session(*key)
    assert session is not None
    return next(t.text for t in session.turns if t.kind in ("user", "command"))


@pytest.mark.parametrize("agent", ["claude-code", "codex", "openclaw"])
def test_a_fan_out_night_on_recorded_sessions_trains_each_skill_in_the_real_agent_and_adopts_one_by_name(
    agent: str, agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest: dict[str, Any] = json.loads((FIXTURES / FOLDER[agent] / "fanout" / "manifest.json").read_text())
    expected: dict[str, dict[str, Any]] = manifest["sessions"]
    assert manifest["agent"] == agent
    data = night_env(monkeypatch, tmp_path)
    files = _home(tmp_path, agent, agent_tools)
    monkeypatch.chdir(tmp_path / "home" / "project")
    monkeypatch.setenv("PATH", agent_tools.path_env())
    (tmp_path / "chats").mkdir()
    script = write_script(tmp_path)
    agent_server.rules = [(re.compile(r["match"]), r["reply"]) for r in optimizer_rules() + TARGET_RULES]
    data.mkdir()
    url, retries = {
        "claude-code": (agent_server.url, "max_retries"),
        "codex": (agent_server.url + "/v1", "retries"),
        "openclaw": (agent_server.url + "/v1", "provider_retries"),
    }[agent]
    (data / "config.toml").write_text(
        f'[harness.{agent}]\nbase_url = "{url}"\ntarget_model = "stub-model"\n{retries} = 0\n'
    )

    # the real harvest attributes each recorded session as the manifest says
    code, out, err = invoke("harvest", "--json")
    assert code == 0, err
    assert json.loads(out)["sessions"][agent] == len(expected) * manifest["times"]
    store = Store(data / "state.db")
    try:
        keys = store.stream_sessions().keys
        used = store.skills_of(keys)
        found = {key: (_first_prompt(store, key), used.get(key, [])) for key in keys}
    finally:
        store.close()
    assert sorted(found.values()) == sorted(
        (prompt, want["skills"]) for prompt, want in expected.items() for _ in range(manifest["times"])
    )
    assert [READ_ONLY[agent]] in [skills for _, skills in found.values()]
    group_of = {key: expected[prompt]["group"] for key, (prompt, _) in found.items()}

    before = _bytes(files)
    order = TRAINED.get(agent, EVERY)
    chosen = ["--skills", ",".join(order), "--dreams", "0"] if agent in TRAINED else []
    code, out, err = invoke(
        "run", "--harness", agent, "--backend", f"scripted:{script}", "--since", "3650d", "--steps", "1",
        "--budget-tokens", str(CAP), *chosen, "--json",
    )  # fmt: skip
    assert code == 0, err[-3000:]
    night = json.loads(out)
    rows = {r["skill_name"]: r for r in night["fanout"]["rows"]}
    context = json.dumps(night["fanout"], indent=1)
    # three groups: the read-only skill is none (its sessions go to the managed skill's)
    sizes = {name: sum(1 for g in group_of.values() if g == name) for name in rows}
    assert sizes == {"review-pr": 10, "release-notes": 10, MANAGED_NAME: 12}
    assert {name: r["sessions"] for name, r in rows.items()} == sizes, context
    assert all(
        rows[n]["status"] == "trained" and rows[n]["outcome"] == "accepted" and rows[n]["proposal"] for n in order
    ), context
    assert all(
        (r["status"], r["night"], r["proposal"]) == ("not-selected", None, None)
        for n, r in rows.items()
        if n not in order
    ), context
    # the cap shared by sessions, most first (ties by name); what one leaves passes on to the next
    assert [rows[n]["night"] for n in order] == list(range(1, len(order) + 1))
    spent = [rows[n]["spent_tokens"] for n in order]
    shares = [CAP * 12 // 32, (CAP - spent[0]) * 10 // 20, CAP - sum(spent[:2])] if order == EVERY else [CAP]
    assert [rows[n]["share_tokens"] for n in order] == shares
    assert all(0 < rows[n]["spent_tokens"] <= rows[n]["share_tokens"] for n in order)

    # each skill's night planned on its own group's sessions only, its replays in the real agent
    nights = {n["skill"]["name"]: n for n in night["nights"]}
    assert {name: n["night"] for name, n in nights.items()} == {name: rows[name]["night"] for name in order}
    for name in order:
        row = rows[name]
        folder = data / "nights" / f"{row['night']:04d}"
        plan = NightPlan.model_validate_json((folder / "plan.json").read_text())
        tasks = [t for split in plan.tasks().values() for t in split if t.provenance]
        origins = {group_of[tuple(p.split(":", 1))] for t in tasks for p in t.provenance}  # type: ignore[misc]
        assert tasks and origins == {name}, (name, [t.prompt for t in tasks])
        assert json.loads((folder / "night.json").read_text())["harness"] == agent
    sent = [s for s in agent_server.seen if s.path.split("?")[0].endswith(WIRE[agent])]
    assert sent and len(sent) == len(agent_server.seen)  # only the replays reach the server: the agent's requests
    text = agent_server.requests_text()
    invoked = next(p for p, w in expected.items() if w["group"] == "review-pr")
    if order == EVERY:
        assert "Write the changelog entry" in text  # replayed as the user typed them
    else:  # only the chosen group's tasks are replayed
        others = [p for p, w in expected.items() if w["group"] not in order]
        assert others and not [p for p in others if p in text]
    if agent == "claude-code":  # `/review-pr …` resolved to the candidate, installed under its name
        command, args = invoked.split(" ", 1)
        assert f"<command-name>{command}</command-name>" in text and f"<command-args>{args}</command-args>" in text
    else:  # `$review-pr …` as typed, with no second mention in front
        assert invoked in text and "$review-pr $review-pr" not in text
    assert RULE in text  # a candidate's rule reached the agent with the replay

    # a proposal for each trained skill, staged against its own skill's file; none for the read-only skill
    proposals = Proposals(data).list()
    assert sorted(Path(p.skill_path) for p in proposals) == sorted(files[n].resolve() for n in order)
    assert all(Path(p.skill_path) != files["read-only"].resolve() for p in proposals)
    for name in [n for n in ("review-pr", "release-notes") if n in order]:
        staged = next(p for p in proposals if p.id == rows[name]["proposal"])
        assert Proposals(data).base(staged).encode() == before[name]
    assert _bytes(files) == before  # nothing live changed

    # the fan-out summary lists each skill with its sessions, share and spend
    folder = Path(night["report"]["report.md"]).parent
    summary = json.loads((folder / "fanout.json").read_text())
    assert {r["skill_name"]: (r["sessions"], r["spent_tokens"]) for r in summary["rows"]} == {
        name: (r["sessions"], r["spent_tokens"]) for name, r in rows.items()
    }
    md = (folder / "report.md").read_text()
    for name in order:
        row = rows[name]
        share, used = f"{row['share_tokens']:,} tokens", f"{row['spent_tokens']:,} tokens"
        assert f"| {name} (night {row['night']}) | {row['sessions']} | {share} | {used}" in md
    assert ("## Not selected" in md) == (order != EVERY)

    # adopting one skill's proposal by name changes that file only
    adopted = before
    if MANAGED_NAME in order:
        code, _, err = invoke("adopt", MANAGED_NAME, "--json")
        assert code == 0, err
        adopted = _bytes(files)
        assert adopted[MANAGED_NAME] is not None and {n: adopted[n] for n in before if n != MANAGED_NAME} == {
            n: before[n] for n in before if n != MANAGED_NAME
        }
    code, _, err = invoke("adopt", "review-pr", "--json")
    assert code == 0, err
    after = _bytes(files)
    assert after["review-pr"] != before["review-pr"] and "- Be precise." in (after["review-pr"] or b"").decode()
    assert {n: after[n] for n in ("release-notes", "read-only", MANAGED_NAME)} == {
        n: adopted[n] for n in ("release-notes", "read-only", MANAGED_NAME)
    }
