"""Replay one task with a candidate skill inside the real Codex CLI (`codex exec`).

The candidate is a `$name`-invoked skill in the working copy (or the project's AGENTS.md), the
Codex home and TMPDIR a temporary pair seeded from the user's; docs/agents.md has every flag and
why.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Task
from skillsleep.harnesses.agent_cli import CLIResult, mentioned_task
from skillsleep.harnesses.codex.cli import CODEX, NAME, WORDS
from skillsleep.harnesses.codex.home import codex_home
from skillsleep.harnesses.codex.output import read_events, to_run
from skillsleep.harnesses.codex.settings import CodexSettings
from skillsleep.harnesses.codex.skill import codex_skill, install_skill, named, skills_config
from skillsleep.harnesses.replay import CLIHarness, Invocation, Parsed

__all__ = ["CODEX", "CodexHarness"]

PROVIDER = "skillsleep"
QUIET = (
    "check_for_update_on_startup=false",
    "analytics.enabled=false",
    "features.plugins=false",
    "features.remote_plugin=false",
    "features.apps=false",
    "features.unbounded_connection_retries=false",
    "features.hooks=false",
    "notify=[]",
)
LEAN_FEATURES = ("goals", "multi_agent", "view_image", "image_generation")
_STDERR_NOISE = ("Reading additional input from stdin", "WARNING: proceeding, even though we could not create")


def _toml(value: Any) -> str:
    """A value as inline TOML (for `-c key=value`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def _prepare_home(user: Path | None, home: Path, *, skill_name: str | None, link_auth: bool) -> None:
    """Fill the per-run Codex home from the user's (copies and links; nothing is written there)."""
    home.mkdir(parents=True)
    if user is None or not user.is_dir():
        return
    for name in ("config.toml", "AGENTS.md", "AGENTS.override.md"):
        if (user / name).is_file():
            shutil.copyfile(user / name, home / name)
    if (user / "rules").is_dir():
        shutil.copytree(user / "rules", home / "rules", symlinks=True)
    if link_auth and (user / "auth.json").exists():
        (home / "auth.json").symlink_to((user / "auth.json").resolve())
    if (user / "skills").is_dir():
        (home / "skills").mkdir()
        for entry in sorted((user / "skills").iterdir()):
            same = skill_name is not None and (entry.name == skill_name or named(entry / "SKILL.md", skill_name))
            if entry.name != ".system" and entry.is_dir() and not same:
                (home / "skills" / entry.name).symlink_to(entry.resolve())


class CodexHarness(CLIHarness):
    """Runs one task headless in `codex exec` with a candidate skill (docs/agents.md).

    `env` is the base environment of the agent process (None → this process's); the user's Codex
    home is found in it. At most `settings.concurrency` runs go at once per harness."""

    name = NAME
    cli = CODEX
    words = WORDS
    settings: CodexSettings

    def prepare(
        self, command: str, task: Task, skill: Skill, base: dict[str, str], *, cwd: Path, tmp: Path, timeout_s: float
    ) -> Invocation:
        s = self.settings
        user = codex_home(base)
        home, scratch = tmp / "home", tmp / "tmp"
        scratch.mkdir()
        name = codex_skill(skill)[0] if s.skill_mode == "skill" and skill.body.strip() else None
        _prepare_home(user, home, skill_name=name, link_auth=not s.base_url)
        mention = install_skill(cwd, skill, s.skill_mode)
        extra: list[str] = []
        if name and (entries := skills_config(user, base, name)) is not None:
            extra += ["-c", f"skills.config={_toml(entries)}"]
        if s.lean:
            instructions = tmp / "instructions.md"
            instructions.write_text(s.lean_instructions, encoding="utf-8")
            extra += ["-c", f"model_instructions_file={_toml(str(instructions))}"]
        argv = self.argv(command, mentioned_task(task, mention), extra)
        env = {**base, "CODEX_HOME": str(home), "TMPDIR": str(scratch)}
        return Invocation(argv=argv, env=env, state=home, skill=name)

    def argv(self, command: str, prompt: str, extra: list[str] | None = None) -> list[str]:
        """The command line of one run (`extra`: per-run `-c` options)."""
        s = self.settings
        argv = [command, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "-s", s.sandbox]
        for option in QUIET:
            argv += ["-c", option]
        if s.target_model:
            argv += ["-m", s.target_model]
        if s.base_url:
            provider: dict[str, Any] = {
                "name": PROVIDER,
                "base_url": s.base_url,
                "wire_api": "responses",
                "request_max_retries": s.retries,
                "stream_max_retries": s.retries,
            }
            if s.api_key_env:
                provider["env_key"] = s.api_key_env
            argv += ["-c", f"model_providers.{PROVIDER}={_toml(provider)}", "-c", f"model_provider={_toml(PROVIDER)}"]
        if s.lean:
            for feature in LEAN_FEATURES:
                argv += ["--disable", feature]
            argv += ["-c", 'web_search="disabled"']
        return [*argv, *(extra or []), *s.extra_args, "--", prompt]

    def parse(self, result: CLIResult, call: Invocation) -> Parsed:
        events = read_events(result.stdout)
        return Parsed(run=to_run(events, self.server()), complete=events.complete)

    def stderr(self, result: CLIResult) -> str:
        return "\n".join(ln for ln in result.stderr.splitlines() if not ln.startswith(_STDERR_NOISE))

    def special(self, result: CLIResult, parsed: Parsed, call: Invocation) -> str | None:
        """A candidate Codex could not load: an error run, never a silent baseline."""
        pattern = rf"failed to load skill \S*/\.agents/skills/{call.skill}/SKILL\.md: (.+)"
        found = re.search(pattern, self.stderr(result)) if call.skill else None
        if found is None:
            return None
        return f"Codex could not load the candidate skill ({found.group(1).strip()}); fix the skill's YAML frontmatter"
