"""Record the sessions of a fan-out night with the real Claude Code against the scripted model server.

    .venv/bin/python scripts/record_fanout_fixtures.py                # ~1 minute

Writes tests/fixtures/claude/fanout/: a CLAUDE_CONFIG_DIR's `projects/` and its manifest.json. Claude
Code runs in a fake home (written as /home/dev) with a user skill `review-pr`, a project skill
`release-notes` and a plugin's read-only skill `tools:lint` (loaded with `--plugin-dir`). Every task
is asked in two sessions (min_recurrence), each answered and then corrected (`--resume`), so that
each group holds enough recurring tasks for a night (five: two held out for the gate, the rest to
train on):

    review-pr      the user types `/review-pr <task>` (a slash invocation of a user skill)
    release-notes  the user types the task; the model loads the skill with the Skill tool (the
                   server's `calls`: nothing in the prompt asks for it)
    no skill       the user types the task; nothing is loaded
    tools:lint     the user types `/tools:lint <task>` (a plugin's skill: read-only, never trained)

manifest.json names every prompt, how the skill was used, the skills harvest must attribute to its
sessions (`Session.skills`) and the group a fan-out night puts them in. Paths are rewritten as
scripts/record_fixtures.py does; the records the harvest does not read (attachments, api-request
records) are cut to their ids, so the folder stays small.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "claude" / "fanout"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from record_fixtures import Recorder, _omit, record_agents  # noqa: E402

CORRECTION = "no, put the answer on its own last line"
REVIEW = [
    "Check the retry logic change for thread safety",
    "Go over the new date formatting patch",
    "Audit the config loader rename before merging",
    "Inspect the migration script someone proposed",
    "Critique the caching layer diff",
]
NOTES = [
    "Write the changelog entry for version 2.3",
    "Summarise the breaking changes of the hotfix",
    "Draft the announcement post for the beta",
    "List the deprecations shipped this quarter",
    "Prepare upgrade instructions for users of 1.x",
]
PLAIN = [
    "Bump the package version and tag the release",
    "Explain why the CI job for the docs failed",
    "Rename the helper function across the codebase",
    "Add type hints to the parser module",
    "Draft the weekly status email for the team",
]
LINT = ["Lint the parser module and fix what it finds"]
TIMES = 2  # sessions a task is asked in
MANAGED = "skillsleep-learned"


def _sessions(prompts: list[str], how: str, skills: list[str], group: str) -> dict[str, dict[str, Any]]:
    return {p: {"how": how, "skills": skills, "group": group} for p in prompts}


# prompt → how the skill is used, the skills harvest gives its sessions, the fan-out group they go to
EXPECT: dict[str, dict[str, Any]] = {
    **_sessions([f"/review-pr {t}" for t in REVIEW], "slash invocation of a user skill", ["review-pr"], "review-pr"),
    **_sessions(NOTES, "Skill tool call of a project skill", ["release-notes"], "release-notes"),
    **_sessions(PLAIN, "no skill", [], MANAGED),
    **_sessions([f"/tools:lint {t}" for t in LINT], "slash invocation of a plugin skill", ["tools:lint"], MANAGED),
}


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


class FanoutRecorder(Recorder):
    def ask(self, argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
        proc = self.run(argv, env, cwd)
        if proc.returncode != 0:
            sys.exit(f"{argv[:3]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return dict(json.loads(proc.stdout))

    def record(self, cli: str) -> None:
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
        notes = "|".join(re.escape(t) for t in NOTES)
        self.server.calls = [(re.compile(notes), "Skill", {"skill": "release-notes"})]
        env = self.claude_env(home)
        common = ["--model", "stub-model", "--output-format", "json", "--plugin-dir", str(plugin)]
        for _ in range(TIMES):
            for prompt in EXPECT:
                first = self.ask(["claude", "-p", prompt, *common], env, work)
                self.ask(["claude", "-p", CORRECTION, "--resume", first["session_id"], *common], env, work)
        self.server.calls = []
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        self.copy_tree(claude / "projects", OUT / "projects", _trim)
        version = self.version(cli, {"PATH": f"{self.node_bin}:/usr/bin:/bin", "HOME": str(self.tmp)}, self.tmp)
        manifest = {"agent": "claude-code", "cli_version": version, "times": TIMES, "sessions": EXPECT}
        (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        files = sorted(OUT.rglob("*.jsonl"))
        self.summary.append(
            f"  claude {version}: {len(files)} transcripts, {sum(f.stat().st_size for f in files):,} bytes"
        )


def main(argv: list[str] | None = None) -> int:
    return record_agents(__doc__, ["claude"], FanoutRecorder, argv)


if __name__ == "__main__":
    raise SystemExit(main())
