"""`skillsleep install codex`: `$sleep` in Codex.

Codex resolves `$sleep` only to a user skill named `sleep` (a plugin's skill is
`$skillsleep:sleep`), so this writes plugins/codex/skills/sleep as one, under Codex's own home
(`$CODEX_HOME`, else ~/.codex) rather than the shared ~/.agents/skills, whose skills other agents
read too:

    skills/sleep/SKILL.md             tells the model to run `skillsleep sleep --prefix '$sleep' …` in
                                      its shell and show the output verbatim
    skills/sleep/agents/openai.yaml   allow_implicit_invocation: false (only `$sleep` brings it in)
    skills/skillsleep/SKILL.md        this pack's own skill (the repository root's SKILL.md): what
                                      skillsleep is, so the model knows when to use which verb

The skill names this installation's skillsleep by its absolute path: Codex's shell is a login
shell whose profile may reset PATH. Codex has no session-end hook; the night's harvest reads its
transcripts. No `codex plugin` command runs, so `uninstall` takes out exactly these files.
"""

from __future__ import annotations

from pathlib import Path

from skillsleep.harnesses.install import InstallContext, Plan
from skillsleep.harnesses.plugin_bundle import bundle_file, pack_file


def install(ctx: InstallContext) -> Plan:
    """The user skill `sleep` and the pack's skill, calling `ctx.skillsleep`."""
    skills = Path(ctx.env.get("CODEX_HOME") or ctx.home / ".codex") / "skills"
    return Plan(
        agent="codex",
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
