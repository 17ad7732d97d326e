"""`skillsleep install openclaw`: the plugin of plugins/openclaw/ (the /sleep command, the `skillsleep`
skill, the Python entry points) as a folder in OpenClaw's state dir, linked and enabled with OpenClaw's
own commands (docs/agents.md has the layout)."""

from __future__ import annotations

import json
import shlex
from importlib import resources

from skillsleep.harnesses.home import with_home
from skillsleep.harnesses.install import which
from skillsleep.harnesses.install_plan import InstallContext, Plan, PlannedCommand, PlannedFile
from skillsleep.harnesses.openclaw.cli import NAME
from skillsleep.harnesses.openclaw.home import state_dir

PLUGIN_ID = "skillsleep"
FOLDER = "skillsleep-plugin"
SHIPPED = (
    "openclaw.plugin.json",
    "package.json",
    "index.js",
    "skills/skillsleep/SKILL.md",
    "slash_sleep.py",
    "run_sleep.py",
)


def install(ctx: InstallContext) -> Plan:
    """The plugin folder and the commands that make OpenClaw load it (only when `openclaw` is on PATH;
    otherwise a note says what to run)."""
    source = resources.files("skillsleep.plugins") / "openclaw"
    folder = state_dir(with_home(ctx.env, ctx.home)) / FOLDER
    files = [
        PlannedFile(
            path=folder / name, text=(source / name).read_text(encoding="utf-8"), executable=name.endswith(".py")
        )
        for name in SHIPPED
    ]
    config = json.loads((source / "config.json").read_text(encoding="utf-8")) | {"command": str(ctx.skillsleep)}
    files.append(PlannedFile(path=folder / "config.json", text=json.dumps(config, indent=2) + "\n"))
    link = ["openclaw", "plugins", "install", str(folder), "--link", "--force", "--accept-capabilities"]
    commands = [
        PlannedCommand(
            what="link the plugin into OpenClaw",
            argv=link,
            undo=["openclaw", "plugins", "uninstall", PLUGIN_ID, "--force"],
        ),
        PlannedCommand(what="enable the plugin", argv=["openclaw", "plugins", "enable", PLUGIN_ID]),
    ]
    notes = [
        f"type `/sleep status` in an OpenClaw chat (a gateway that was not running loads the plugin when it "
        f"starts); settings: {folder / 'config.json'}, or plugins.entries.{PLUGIN_ID}.config in openclaw.json"
    ]
    if which("openclaw", ctx.env) is None:
        notes.append(
            f"`openclaw` is not on PATH, so the plugin is not linked yet: run `{shlex.join(link)}` and "
            f"`openclaw plugins enable {PLUGIN_ID}`, or `skillsleep install openclaw` again once it is"
        )
        commands = []
    return Plan(agent=NAME, files=files, commands=commands, notes=notes)
