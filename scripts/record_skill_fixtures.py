"""Record sessions where a user skill is used, with the real CLIs against the scripted model server.

    .venv/bin/python scripts/record_skill_fixtures.py                 # every agent (~1 minute)
    .venv/bin/python scripts/record_skill_fixtures.py --agent codex

Writes tests/fixtures/<agent>/skills/ (Claude Code: a CLAUDE_CONFIG_DIR's `projects/`; Codex: a
CODEX_HOME's `sessions/`; OpenClaw: a state dir's SQLite store) and its manifest.json: per session
(keyed by its first prompt, or command for a slash invocation), the skills harvest must attribute to
it (`Session.skills`, in order of first use). Each agent runs in a fake home (written as /home/dev)
with a user skill `review-pr` and a project skill `release-notes`; the stub's `STUB_CALL:` makes the
model call a tool by name. Paths are rewritten as scripts/record_fixtures.py does.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from record_fixtures import Recorder, _shorten_claude, _shorten_codex, record_agents  # noqa: E402

AGENTS = {"claude": "claude-code", "codex": "codex", "openclaw": "openclaw"}


def write_skill(folder: Path, name: str, word: str) -> None:
    """A skill `name` in `folder` whose SKILL_SAYS word makes the stub answer `word`."""
    skill = folder / name / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(f"---\nname: {name}\ndescription: The {name} skill of the recording.\n---\n\nSKILL_SAYS: {word}\n")


class SkillRecorder(Recorder):
    def must(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        proc = self.run(argv, env, cwd)
        if proc.returncode != 0:
            sys.exit(f"{argv[:3]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        self.summary.append(f"  {' '.join(self.rw.value(argv[:3]))}… exit 0")

    def record_claude(self, folder: Path) -> None:
        home = self.home("claude")
        work = home / "project"
        write_skill(home / ".claude" / "skills", "review-pr", "plum")
        write_skill(work / ".claude" / "skills", "release-notes", "fig")
        env = self.claude_env(home)
        common = ["--model", "stub-model", "--output-format", "json"]
        self.must(["claude", "-p", "/review-pr 12", *common], env, work)
        self.must(["claude", "-p", 'STUB_CALL:Skill:{"skill": "release-notes"}', *common], env, work)
        self.must(["claude", "-p", "say hello", *common], env, work)
        self.copy_tree(home / ".claude" / "projects", folder / "projects", _shorten_claude)

    def record_codex(self, folder: Path) -> None:
        home = self.home("codex")
        work = home / "project"
        env = self.codex_env(home)
        write_skill(home / ".agents" / "skills", "review-pr", "plum")
        write_skill(work / ".agents" / "skills", "release-notes", "fig")
        base = ["codex", "exec", "--json", "--skip-git-repo-check"]
        self.must([*base, "$review-pr check 12"], env, work)
        self.must([*base, "$release-notes for 1.2"], env, work)
        self.must([*base, "say hello"], env, work)
        self.copy_tree(home / ".codex" / "sessions", folder / "sessions", _shorten_codex)

    def record_openclaw(self, folder: Path) -> None:
        home = self.home("openclaw")
        work = home / "project"
        write_skill(work / "skills", "release-notes", "fig")
        env = self.openclaw_env(home)
        state = Path(env["OPENCLAW_STATE_DIR"])
        argv = ["openclaw", "agent", "exec", "--json", "--timeout", "60", "--cwd", str(work), "--state-dir", str(state)]
        self.must([*argv[:3], "$release-notes for 1.2", *argv[3:]], env, work)
        self.must([*argv[:3], "say hello", *argv[3:]], env, work)
        for db in sorted(state.glob("agents/*/agent/openclaw-agent.sqlite")):
            self.copy_sqlite(db, folder / "state" / db.relative_to(state))

    def record(self, cli: str) -> None:
        folder = ROOT / "tests" / "fixtures" / cli / "skills"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        getattr(self, f"record_{cli}")(folder)
        version = self.version(cli, {"PATH": f"{self.node_bin}:/usr/bin:/bin", "HOME": str(self.tmp)}, self.tmp)
        manifest = {"agent": AGENTS[cli], "cli_version": version, "sessions": EXPECT[cli]}
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


# Each recorded session, keyed by its first prompt (or slash command), and the skills harvest gives it.
EXPECT: dict[str, dict[str, dict[str, Any]]] = {
    "claude": {
        "/review-pr 12": {"how": "slash invocation of a user skill", "skills": ["review-pr"]},
        'STUB_CALL:Skill:{"skill": "release-notes"}': {"how": "Skill tool call", "skills": ["release-notes"]},
        "say hello": {"how": "no skill", "skills": []},
    },
    "codex": {
        "$review-pr check 12": {"how": "$name mention → injected <skill> block", "skills": ["review-pr"]},
        "$release-notes for 1.2": {"how": "$name mention of a project skill", "skills": ["release-notes"]},
        "say hello": {"how": "no skill", "skills": []},
    },
    "openclaw": {
        "$release-notes for 1.2": {"how": "the model reads the skill's SKILL.md", "skills": ["release-notes"]},
        "say hello": {"how": "no skill", "skills": []},
    },
}


def main(argv: list[str] | None = None) -> int:
    return record_agents(__doc__, list(AGENTS), SkillRecorder, argv)


if __name__ == "__main__":
    raise SystemExit(main())
