"""`skillsleep install codex`: `$sleep` and this pack's skill as user skills in the Codex home
(files only; docs/agents.md has the layout and why not ~/.agents/skills)."""

from __future__ import annotations

from skillsleep.harnesses.codex.cli import NAME
from skillsleep.harnesses.codex.home import codex_home
from skillsleep.harnesses.home import with_home
from skillsleep.harnesses.install_plan import InstallContext, Plan
from skillsleep.harnesses.plugin_bundle import bundle_file, pack_file


def install(ctx: InstallContext) -> Plan:
    """The user skill `sleep` and the pack's skill, calling `ctx.skillsleep`."""
    skills = codex_home(with_home(ctx.env, ctx.home)) / "skills"
    return Plan(
        agent=NAME,
        files=[
            bundle_file("codex/skills/sleep/SKILL.md", skills / "sleep" / "SKILL.md", ctx.skillsleep),
            bundle_file(
                "codex/skills/sleep/agents/openai.yaml", skills / "sleep" / "agents" / "openai.yaml", ctx.skillsleep
            ),
            pack_file(skills, ctx.skillsleep),
        ],
        notes=[
            "in Codex type `$sleep status`; `adopt`, `reject`, `rollback` and `run` write outside the workspace "
            "(skillsleep's data folder, your skills): approve the escalation Codex asks for"
        ],
    )
