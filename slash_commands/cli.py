"""The `skillsleep` command line; its verbs are the `/sleep` verbs inside an agent.

Exit codes: 0 ok, 1 error (a backend or the run failed), 2 usage (bad flag, config or input).
Progress goes to stderr; `--json` prints one machine-readable object on stdout. Each verb is a
click command of a command module (`*_cmd.py`); this module only puts them into one group.
"""

from __future__ import annotations

import click

from skillsleep.slash_commands import (
    config_cmd,
    cost_cmd,
    demo_cmd,
    doctor_cmd,
    eval_cmd,
    harvest_cmd,
    install_cmd,
    listings_cmd,
    proposals_cmd,
    redact_cmd,
    run_cmd,
    schedule_cmd,
    status_cmd,
    train_cmd,
    verbs_cmd,
    watch_cmd,
)

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="skillsleep")
def main() -> None:
    """Train an agent's skill document like weights: rollout, reflect, bounded edits, a held-out gate."""


for _verb in (
    train_cmd.train,
    run_cmd.run_,
    demo_cmd.demo_,
    schedule_cmd.schedule_,
    schedule_cmd.unschedule_,
    eval_cmd.eval_,
    listings_cmd.backends,
    listings_cmd.harnesses,
    harvest_cmd.harvest,
    redact_cmd.redact_,
    watch_cmd.watch,
    config_cmd.config_,
    status_cmd.status_,
    proposals_cmd.diff_,
    proposals_cmd.adopt_,
    install_cmd.install_,
    install_cmd.uninstall_,
    proposals_cmd.reject_,
    proposals_cmd.rollback_,
    cost_cmd.cost_,
    verbs_cmd.sleep_,
    verbs_cmd.help_,
    doctor_cmd.doctor_,
):
    main.add_command(_verb)

if __name__ == "__main__":  # pragma: no cover
    main()
