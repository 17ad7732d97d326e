"""`skillsleep install claude-code`: `/sleep` and the SessionEnd hook in Claude Code.

Under Claude Code's config folder (`$CLAUDE_CONFIG_DIR`, else ~/.claude), from plugins/claude-code:

    skills/sleep/SKILL.md                     the user skill `sleep`: a bare `/sleep` (a user skill wins
                                              over a plugin's skill of the same name)
    skills/skillsleep/SKILL.md                this pack's own skill (the repository root's SKILL.md): what
                                              skillsleep is, so the model knows when to use which verb
    skills/skillsleep-harvest/.claude-plugin/plugin.json
    skills/skillsleep-harvest/hooks/hooks.json  the SessionEnd hook (`skillsleep harvest --hook claude-code`)

Claude Code (2.1.3xx) adopts a folder of `skills/` that holds `.claude-plugin/` as a plugin with
its hooks (a "skills-dir plugin"), so the hook needs no `claude plugin install`, no marketplace and
no edit of settings.json: files only, which `uninstall` takes out byte for byte. (`claude plugin
marketplace add` + `install` work offline too, but leave settings.json reformatted and a plugin
cache behind after `uninstall`.) Both files call this installation's skillsleep by its absolute
path, so /sleep and the hook work whatever PATH Claude Code runs with.
"""

from __future__ import annotations

from skillsleep.harnesses.claude_code.replay import user_config_dir
from skillsleep.harnesses.install import InstallContext, Plan
from skillsleep.harnesses.plugin_bundle import bundle_file, pack_file

HOOK_FOLDER = "skillsleep-harvest"  # the skills-dir plugin that holds the SessionEnd hook


def install(ctx: InstallContext) -> Plan:
    """The user skill `sleep`, the pack's skill and the hook plugin, calling `ctx.skillsleep`."""
    skills = user_config_dir({**ctx.env, "HOME": str(ctx.home)}) / "skills"
    return Plan(
        agent="claude-code",
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
