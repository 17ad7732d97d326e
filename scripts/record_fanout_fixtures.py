"""Record the sessions of a fan-out night with the real Claude Code, Codex and OpenClaw against the scripted model server.

    .venv/bin/python scripts/record_fanout_fixtures.py                # every agent (~20 minutes)
    .venv/bin/python scripts/record_fanout_fixtures.py --agent codex  # ~1 minute (Claude Code: ~1, OpenClaw: ~18)

Writes tests/fixtures/<agent>/fanout/ (Claude Code: a CLAUDE_CONFIG_DIR's `projects/`; Codex: a
CODEX_HOME's `sessions/`; OpenClaw: a state dir's SQLite store under `state/`) and its
manifest.json. Each agent runs in a fake home (written as /home/dev) with a user skill `review-pr`,
a project (OpenClaw: workspace) skill `release-notes` and a read-only skill (a plugin's
`tools:lint` loaded with `--plugin-dir` in Claude Code; Codex's bundled system skill `openai-docs`;
OpenClaw's bundled `skill-creator`). Every task is asked in two sessions (min_recurrence), each
answered and then corrected (`--resume`, `exec resume`, OpenClaw's `agent --local --session-id`),
so that each group holds enough recurring tasks for a night (five: two held out for the gate, the
rest to train on):

    review-pr      the user invokes it: `/review-pr <task>` (Claude Code), `$review-pr <task>` (Codex,
                   OpenClaw: the model reads the SKILL.md its skill listing names)
    release-notes  the user types the task; the model loads the skill on its own (the server's
                   `calls`: Claude Code's Skill tool; Codex's shell, OpenClaw's `read` of its SKILL.md)
    no skill       the user types the task; nothing is loaded
    read-only      `/tools:lint <task>` (Claude Code), `$openai-docs <task>` (Codex),
                   `$skill-creator <task>` (OpenClaw): never trained

OpenClaw's `agent exec` runs one isolated turn, so its sessions are `openclaw agent --local`
runs with an explicit `--session-id` (the same id again for the correction) in the default
workspace, `~/.openclaw/workspace`, whose `skills/` holds release-notes.

manifest.json names every prompt, how the skill was used, the skills harvest must attribute to its
sessions (`Session.skills`) and the group a fan-out night puts them in. Paths are rewritten as
scripts/record_fixtures.py does; the records the harvest does not read (Claude Code's attachments
and api-request records, Codex's world state, settings and usage records) are cut to their ids, a
long skill Codex injected to its name and path, and OpenClaw's run trajectories dropped from its
store, so the folders stay small.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from fanout_kit import NOTES, REVIEW  # noqa: E402  (the tasks the fan-out tests use too)
from record_fixtures import LONG, Recorder, _codex_sid, _octets, _omit, _shorten_codex, record_agents  # noqa: E402

CORRECTION = "no, put the answer on its own last line"
PLAIN = [
    "Bump the package version and tag the release",
    "Explain why the CI job for the docs failed",
    "Rename the helper function across the codebase",
    "Add type hints to the parser module",
    "Draft the weekly status email for the team",
]
LINT = ["Lint the parser module and fix what it finds"]
DOCS = ["Look up the rate limits of the responses endpoint"]
CREATE = ["Sketch a skill that formats commit messages"]
TIMES = 2  # sessions a task is asked in
MANAGED = "skillsleep-learned"


def _sessions(prompts: list[str], how: str, skills: list[str], group: str) -> dict[str, dict[str, Any]]:
    return {p: {"how": how, "skills": skills, "group": group} for p in prompts}


# per agent: prompt → how the skill is used, the skills harvest gives its sessions, its fan-out group
EXPECT: dict[str, dict[str, dict[str, Any]]] = {
    "claude": {
        **_sessions(
            [f"/review-pr {t}" for t in REVIEW], "slash invocation of a user skill", ["review-pr"], "review-pr"
        ),
        **_sessions(NOTES, "Skill tool call of a project skill", ["release-notes"], "release-notes"),
        **_sessions(PLAIN, "no skill", [], MANAGED),
        **_sessions([f"/tools:lint {t}" for t in LINT], "slash invocation of a plugin skill", ["tools:lint"], MANAGED),
    },
    "codex": {
        **_sessions(
            [f"$review-pr {t}" for t in REVIEW], "$name mention → injected <skill> block", ["review-pr"], "review-pr"
        ),
        **_sessions(NOTES, "the model reads the project skill's SKILL.md", ["release-notes"], "release-notes"),
        **_sessions(PLAIN, "no skill", [], MANAGED),
        **_sessions([f"$openai-docs {t}" for t in DOCS], "$name mention of a system skill", ["openai-docs"], MANAGED),
    },
    "openclaw": {
        **_sessions(
            [f"$review-pr {t}" for t in REVIEW],
            "$name mention → the model reads the user skill's SKILL.md",
            ["review-pr"],
            "review-pr",
        ),
        **_sessions(NOTES, "the model reads the workspace skill's SKILL.md", ["release-notes"], "release-notes"),
        **_sessions(PLAIN, "no skill", [], MANAGED),
        **_sessions(
            [f"$skill-creator {t}" for t in CREATE],
            "$name mention → the model reads the bundled skill's SKILL.md",
            ["skill-creator"],
            MANAGED,
        ),
    },
}
AGENTS = {"claude": "claude-code", "codex": "codex", "openclaw": "openclaw"}


def write_skill(folder: Path, name: str, word: str) -> Path:
    """A skill `name` in `folder` whose SKILL_SAYS word makes the stub answer `word`; its SKILL.md."""
    skill = folder / name / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(f"---\nname: {name}\ndescription: The {name} skill of this team.\n---\n\nSKILL_SAYS: {word}\n")
    return skill


def _trim(rec: Any) -> Any:
    """A record the harvest does not read (an attachment, an api-request record) cut to its ids and
    type; Claude Code's built-in prompt cut short elsewhere (as scripts/record_fixtures.py does)."""
    if not isinstance(rec, dict):
        return rec
    kind = str(rec.get("type"))
    if kind == "attachment" or kind.startswith("api-request"):
        keep = ("type", "uuid", "parentUuid", "isSidechain", "sessionId", "timestamp")
        out = {k: rec[k] for k in keep if k in rec}
        if isinstance(rec.get("attachment"), dict):
            out["attachment"] = {"type": rec["attachment"].get("type")}
        return out
    if kind == "system" or rec.get("isMeta") is True:
        return _omit(rec)
    return rec


_INJECTED = re.compile(r"(<skill>\s*<name>[^<]*</name>\s*<path>[^<]*</path>).*", re.S)


def _trim_codex(rec: Any) -> Any:
    """Codex's records cut as scripts/record_fixtures.py cuts them; its world state (which the
    harvest does not read, nor its token usage records and thread settings) cut to their type and
    time; a long skill it injected to its name and path."""
    rec = _shorten_codex(rec)
    if not isinstance(rec, dict):
        return rec
    payload = rec.get("payload")
    if rec.get("type") in ("world_state", "token_usage_record"):
        return {k: rec[k] for k in ("timestamp", "ordinal", "type") if k in rec}
    if (
        rec.get("type") == "event_msg"
        and isinstance(payload, dict)
        and payload.get("type") == "thread_settings_applied"
    ):
        return {
            **{k: rec[k] for k in ("timestamp", "ordinal", "type") if k in rec},
            "payload": {"type": payload["type"]},
        }
    if rec.get("type") == "response_item" and isinstance(payload, dict) and isinstance(payload.get("content"), list):
        for part in payload["content"]:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and len(text) > LONG and (head := _INJECTED.match(text)):
                part["text"] = f"{head.group(1)}\n[omitted: {len(text)} characters of a bundled skill]\n</skill>"
    return rec


class FanoutRecorder(Recorder):
    def ask(self, argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
        proc = self.run(argv, env, cwd)
        if proc.returncode != 0:
            sys.exit(f"{argv[:3]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return dict(json.loads(proc.stdout))

    def record(self, cli: str) -> None:
        out = ROOT / "tests" / "fixtures" / cli / "fanout"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        getattr(self, f"record_{cli}")(out)
        version = self.version(cli, {"PATH": f"{self.node_bin}:/usr/bin:/bin", "HOME": str(self.tmp)}, self.tmp)
        manifest = {"agent": AGENTS[cli], "cli_version": version, "times": TIMES, "sessions": EXPECT[cli]}
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        files = sorted(f for f in out.rglob("*") if f.suffix in (".jsonl", ".sqlite"))
        size = sum(f.stat().st_size for f in files)
        self.summary.append(f"  {cli} {version}: {len(files)} transcript files, {size:,} bytes")

    def record_claude(self, out: Path) -> None:
        home = self.home("claude")
        work = home / "project"
        (work / ".git").mkdir()  # a project: its `.claude/skills` are the project's skills
        claude = home / ".claude"
        write_skill(claude / "skills", "review-pr", "plum")
        write_skill(work / ".claude" / "skills", "release-notes", "fig")
        plugin = claude / "plugins" / "cache" / "mkt" / "tools" / "1.0.2"
        (plugin / ".claude-plugin").mkdir(parents=True)
        (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "tools", "version": "1.0.2"}))
        write_skill(plugin / "skills", "lint", "kiwi")
        self.server.calls = [(_any_of(NOTES), "Skill", {"skill": "release-notes"})]
        env = self.claude_env(home)
        common = ["--model", "stub-model", "--output-format", "json", "--plugin-dir", str(plugin)]
        for _ in range(TIMES):
            for prompt in EXPECT["claude"]:
                first = self.ask(["claude", "-p", prompt, *common], env, work)
                self.ask(["claude", "-p", CORRECTION, "--resume", first["session_id"], *common], env, work)
        self.server.calls = []
        self.copy_tree(claude / "projects", out / "projects", _trim)

    def record_codex(self, out: Path) -> None:
        home = self.home("codex")
        work = home / "project"
        (work / ".git").mkdir()
        env = self.codex_env(home)
        write_skill(home / ".agents" / "skills", "review-pr", "plum")
        write_skill(work / ".agents" / "skills", "release-notes", "fig")
        read = {"cmd": "cat .agents/skills/release-notes/SKILL.md"}
        self.server.calls = [(_any_of(NOTES), "exec_command", read)]
        base = ["codex", "exec", "--json", "--skip-git-repo-check"]
        for _ in range(TIMES):
            for prompt in EXPECT["codex"]:
                sid = _codex_sid(self.events([*base, prompt], env, work))
                if sid is None:
                    sys.exit(f"codex exec {prompt!r} named no thread")
                self.events(["codex", "exec", "resume", "--json", "--skip-git-repo-check", sid, CORRECTION], env, work)
        self.server.calls = []
        self.copy_tree(home / ".codex" / "sessions", out / "sessions", _trim_codex)

    def record_openclaw(self, out: Path) -> None:
        home = self.home("openclaw")
        # OpenClaw names its bundled skills by their real path: the agents' folder through any link
        self.rw.add(str(self.bin_dir.resolve().parent), "/opt/agents/node_modules")
        env = self.openclaw_env(home)
        state = Path(env["OPENCLAW_STATE_DIR"])
        write_skill(home / ".agents" / "skills", "review-pr", "plum")
        write_skill(state / "workspace" / "skills", "release-notes", "fig")
        read = {"path": "~/.openclaw/workspace/skills/release-notes/SKILL.md"}
        self.server.calls = [(_any_of(NOTES), "read", read)]
        base = ["openclaw", "agent", "--local", "--json", "--timeout", "60"]
        n = 0
        for _ in range(TIMES):
            for prompt in EXPECT["openclaw"]:
                n += 1
                sid = f"fanout-{n:02d}"
                for message in (prompt, CORRECTION):
                    self.ask_openclaw([*base, "--session-id", sid, "--message", message], env, home / "project")
        self.server.calls = []
        stores = sorted(state.glob("agents/*/agent/openclaw-agent.sqlite"))
        if not stores:
            sys.exit(f"openclaw wrote no transcript store under {state}/agents/*/agent/")
        for db in stores:
            self.copy_sqlite(db, out / "state" / db.relative_to(state))
            _trim_openclaw(out / "state" / db.relative_to(state))

    def ask_openclaw(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        proc = self.run(argv, env, cwd)
        found = proc.stdout[proc.stdout.find("{") :] if "{" in proc.stdout else "{}"
        if proc.returncode != 0 or json.loads(found).get("status", "ok") not in ("ok", "completed"):
            sys.exit(f"{argv[:4]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")

    def events(self, argv: list[str], env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
        proc = self.run(argv, env, cwd)
        if proc.returncode != 0:
            sys.exit(f"{argv[:3]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _trim_openclaw(db: Path) -> None:
    """OpenClaw's store without its run trajectories (`trajectory_runtime_events`: every model
    request of a run, most of the file), which the harvest does not read."""
    conn = sqlite3.connect(db)
    conn.create_function("octet_length", 1, _octets, deterministic=True)  # its CHECKs; SQLite < 3.43 lacks it
    conn.execute("DELETE FROM trajectory_runtime_events")
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def _any_of(prompts: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(p) for p in prompts))


def main(argv: list[str] | None = None) -> int:
    return record_agents(__doc__, list(AGENTS), FanoutRecorder, argv)


if __name__ == "__main__":
    raise SystemExit(main())
