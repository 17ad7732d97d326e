"""The `skillsleep` command line; its verbs are the `/sleep` verbs inside an agent.

Exit codes: 0 ok, 1 error (a backend or the run failed), 2 usage (bad flag, config or input).
Progress goes to stderr; `--json` prints one machine-readable object on stdout. Each verb is a
click command of a command module (`*_cmd.py`); this module only puts them into one group, which
imports a verb's module when that verb is used (verb_group.py), so `skillsleep --help` stays fast.
"""

from __future__ import annotations

import click

from skillsleep.slash_commands.verb_group import VerbGroup, Verbs

__all__ = ["main"]

# Each verb: the command module in skillsleep.slash_commands and its click command there.
VERBS = {
    "train": "train_cmd:train",
    "run": "run_cmd:run_",
    "demo": "demo_cmd:demo_",
    "schedule": "schedule_cmd:schedule_",
    "unschedule": "schedule_cmd:unschedule_",
    "eval": "eval_cmd:eval_",
    "compare": "compare_cmd:compare_",
    "backends": "listings_cmd:backends",
    "harnesses": "listings_cmd:harnesses",
    "skills": "skills_cmd:skills_",
    "harvest": "harvest_cmd:harvest",
    "redact": "redact_cmd:redact_",
    "watch": "watch_cmd:watch",
    "config": "config_cmd:config_",
    "status": "status_cmd:status_",
    "diff": "proposals_cmd:diff_",
    "adopt": "proposals_cmd:adopt_",
    "install": "install_cmd:install_",
    "uninstall": "install_cmd:uninstall_",
    "reject": "proposals_cmd:reject_",
    "rollback": "proposals_cmd:rollback_",
    "cost": "cost_cmd:cost_",
    "sleep": "verbs_cmd:sleep_",
    "help": "verbs_cmd:help_",
    "doctor": "doctor_cmd:doctor_",
}


@click.group(cls=VerbGroup, commands=Verbs(VERBS), context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="skillsleep")
def main() -> None:
    """Train an agent's skill document like weights: rollout, reflect, bounded edits, a held-out gate."""


if __name__ == "__main__":  # pragma: no cover
    main()
