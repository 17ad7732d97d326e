"""`skillsleep install claude-code`: `/sleep`, this pack's skill and the SessionEnd hook in Claude Code,
as files under its config dir only (docs/agents.md has the layout and why no `claude plugin` runs)."""

from __future__ import annotations

from skillsleep.harnesses.claude_code.cli import NAME
from skillsleep.harnesses.claude_code.home import config_dir
from skillsleep.harnesses.home import with_home
from skillsleep.harnesses.install_plan import InstallContext, Plan
from skillsleep.harnesses.plugin_bundle import bundle_file, pack_file

HOOK_FOLDER = "skillsleep-harvest"  # the skills-dir plugin that holds the SessionEnd hook


def install(ctx: InstallContext) -> Plan:
    """The user skill `sleep`, the pack's skill and the hook plugin, calling `ctx.skillsleep`."""
    skills = config_dir(with_home(ctx.env, ctx.home)) / "skills"
    return Plan(
        agent=NAME,
        files=[
            bundle_file("claude-code/skills/sleep/SKILL.md", skills / "sleep" / "SKILL.md", ctx.skillsleep),
            pack_file(skills, ctx.skillsleep),
            bundle_file(
                "claude-code/.claude-plugin/plugin.json",
                skills / HOOK_FOLDER / ".claude-plugin" / "plugin.json",
                ctx.skillsleep,
            ),
            bundle_file("claude-code/hooks/hooks.json", skills / HOOK_FOLDER / "hooks" / "hooks.json", ctx.skillsleep),
        ],
        notes=["in Claude Code (a new session) type `/sleep status`; each session is harvested when it ends"],
    )
