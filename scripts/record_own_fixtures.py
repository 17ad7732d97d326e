"""Record what skillsleep's own runs leave in an agent's transcripts, in the worst case (a user whose
agent persists every session), with the real CLIs against the scripted model server.

    .venv/bin/python scripts/record_own_fixtures.py                 # every agent (~1 minute)
    .venv/bin/python scripts/record_own_fixtures.py --agent codex

Writes tests/fixtures/<agent>/own/ (Claude Code: a CLAUDE_CONFIG_DIR's `projects/`; Codex: a
CODEX_HOME's `sessions/`; OpenClaw: a state dir's SQLite store) and its manifest.json: per session,
what made it (`replay`: the real replay harness; `model_call`: the agent as the night's model, argv of
tests/own_kit.py; `sleep_verbs`: the user typed only `/sleep …` / `$sleep …`; `mixed`: a verb, then
work; `user`: the user's own work) and the reason harvest must give (`core/harvest/own.py`, null:
stored). The persisting wrapper, the settings and the argv are those of tests/own_kit.py, which the
slow tests (tests/test_own_sessions_real.py) run live. Paths are rewritten as scripts/record_fixtures.py
does (the home as /home/dev); each run folder becomes /tmp/skillsleep-run-recorded.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from own_kit import SLEEP_SKILL, codex_user_config, cwds, model_call_argv, stub_settings, user_env, user_run, wrapper  # noqa: E402
from record_fixtures import Recorder, _shorten_claude, _shorten_codex, record_agents  # noqa: E402

from skillsleep.core.document.skill import Skill  # noqa: E402
from skillsleep.core.shared.records import Task  # noqa: E402
from skillsleep.harnesses import registry  # noqa: E402
from skillsleep.harnesses.run_folder import run_folder  # noqa: E402

AGENTS = {"claude": "claude-code", "codex": "codex", "openclaw": "openclaw"}
STABLE_RUN = "/tmp/skillsleep-run-recorded"


class OwnRecorder(Recorder):
    def agent_home(self, cli: str) -> tuple[Path, Path, Path, dict[str, str]]:
        home = self.home(f"own-{cli}")
        real = self.bin_dir / cli
        command = wrapper(self.tmp / f"wrapped-{cli}", AGENTS[cli], real, home)
        return home, real, command, user_env(f"{self.node_bin}:{self.bin_dir}:/usr/bin:/bin", home, self.server)

    def replay(self, cli: str, command: Path, env: dict[str, str]) -> None:
        harness = registry.get(AGENTS[cli]).harness(stub_settings(AGENTS[cli], self.server, str(command)), env=env)
        run = asyncio.run(harness.run(Task(id="t", prompt="STUB_TOOL: echo from-replay"), Skill("Be brief.\n")))
        if run.error is not None:
            sys.exit(f"{cli} replay failed: {run.error}")

    def model_call(self, cli: str, command: Path, env: dict[str, str]) -> None:
        with run_folder() as folder:
            user_run(model_call_argv(AGENTS[cli], str(command), self.server, "merge these edits"), env, folder.work)

    def stable_runs(self, command: Path) -> None:
        for cwd in cwds(command):
            root = re.sub(r"/work$", "", cwd)
            if "skillsleep-run-" in root:
                self.rw.add(root, STABLE_RUN)

    def record_claude(self, folder: Path) -> None:
        home, real, command, env = self.agent_home("claude")
        self.replay("claude", command, env)
        self.model_call("claude", command, env)
        skill = home / ".claude" / "skills" / "sleep" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(SLEEP_SKILL)
        project = home / "project"
        user_run([str(real), "-p", "/sleep status"], env, project)
        first = json.loads(user_run([str(real), "-p", "--output-format", "json", "/sleep diff"], env, project).stdout)
        user_run([str(real), "-p", "--resume", first["session_id"], "say hello"], env, project)
        self.stable_runs(command)
        self.copy_tree(home / ".claude" / "projects", folder / "projects", _shorten_claude)

    def record_codex(self, folder: Path) -> None:
        home, real, command, env = self.agent_home("codex")
        codex_user_config(home, self.server)
        (home / ".tmp").mkdir()
        env["TMPDIR"] = str(home / ".tmp")
        self.replay("codex", command, env)
        self.model_call("codex", command, env)
        user_run([str(real), "exec", "--json", "--skip-git-repo-check", "$sleep status"], env, home / "project")
        self.stable_runs(command)
        self.copy_tree(home / ".codex" / "sessions", folder / "sessions", _shorten_codex)

    def record_openclaw(self, folder: Path) -> None:
        home, _, command, env = self.agent_home("openclaw")
        self.openclaw_env(home)  # the user's config: the scripted server as its provider
        self.replay("openclaw", command, env)
        self.stable_runs(command)
        for db in sorted((home / ".openclaw").glob("agents/*/agent/openclaw-agent.sqlite")):
            self.copy_sqlite(db, folder / "state" / db.relative_to(home / ".openclaw"))

    def record(self, cli: str) -> None:
        folder = ROOT / "tests" / "fixtures" / cli / "own"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        getattr(self, f"record_{cli}")(folder)
        (folder / "manifest.json").write_text(json.dumps(self.manifest(cli, folder), indent=2, sort_keys=True) + "\n")
        self.summary.append(f"  {cli}: {', '.join(str(p.relative_to(folder)) for p in sorted(folder.rglob('*.*')))}")

    def manifest(self, cli: str, folder: Path) -> dict[str, Any]:
        version = self.version(cli, {"PATH": f"{self.node_bin}:/usr/bin:/bin", "HOME": str(self.tmp)}, self.tmp)
        return {"agent": AGENTS[cli], "cli_version": version, "sessions": EXPECT[cli]}


# What each recorded session is and what harvest must say of it, keyed by its first user prompt.
EXPECT: dict[str, dict[str, dict[str, Any]]] = {
    "claude": {
        "STUB_TOOL: echo from-replay": {"made_by": "replay", "own": "run_folder"},
        "merge these edits": {"made_by": "model_call", "own": "run_folder"},
        "/sleep status": {"made_by": "sleep_verbs", "own": "sleep_verbs"},
        "/sleep diff": {"made_by": "mixed", "own": None, "prompts": ["say hello"]},
    },
    "codex": {
        "STUB_TOOL: echo from-replay": {"made_by": "replay", "own": "run_folder"},
        "merge these edits": {"made_by": "model_call", "own": "run_folder"},
        "$sleep status": {"made_by": "sleep_verbs", "own": "sleep_verbs"},
    },
    "openclaw": {"STUB_TOOL: echo from-replay": {"made_by": "replay", "own": "run_folder"}},
}


def main(argv: list[str] | None = None) -> int:
    return record_agents(__doc__, list(AGENTS), OwnRecorder, argv)


if __name__ == "__main__":
    raise SystemExit(main())
