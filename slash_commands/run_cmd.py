"""`skillsleep run`: the click command of one night; the night itself is night_runner.run_sleep, and
`--detach` runs it in the background (detach.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from skillsleep.slash_commands import choices
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import chat_dir_option, executor_option
from skillsleep.slash_commands.output import output_options, resolve, show
from skillsleep.slash_commands.progress import progress

if TYPE_CHECKING:
    from skillsleep.slash_commands.night_summary import RunSummary

__all__ = ["run_"]


@click.command("run")
@click.option(
    "--harness",
    type=choices.Names(choices.harnesses),
    help="Where tasks are replayed (default: the agent you installed skillsleep into, else chat on the backend; "
    "`skillsleep config` says which and why).",
)
@click.option(
    "--skill",
    help="SKILL.md path, PATH#Heading for an AGENTS.md section, or a skill NAME of the harness "
    "(default: the managed learned skill).",
)
@click.option(
    "--skills",
    help="Which skills the night trains when --skill is not given: used (each writable skill your sessions "
    "used, the managed skill for the rest; the default), managed (the managed skill alone), or NAME,… "
    "(only these of the used skills; `skillsleep skills` lists them).",
)
@click.option(
    "--backend",
    cls=choices.NamesHelp,
    names=choices.providers,
    help="Model provider ({names}) or provider:model (default: the agent you installed skillsleep into, else local).",
)
@click.option(
    "--base-url",
    help="The backend's server URL (default: the provider's env var or default); "
    "an agent's own server is base_url under [harness.<name>].",
)
@click.option("--retries", type=click.IntRange(min=0), help="How often a failed model call is tried again (default 3).")
@click.option(
    "--call-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds one model call may take before it counts as failed (default 120).",
)
@click.option("--optimizer-model", help="Model that mines, reflects and judges (default: the backend's).")
@click.option(
    "--target-model", help="Model that runs the tasks (chat: default the optimizer's; a CLI harness: the agent's own)."
)
@click.option("--gate", type=click.Choice(["on", "off"]), help="on: stage only what strictly improves held-out tasks.")
@click.option("--gate-metric", type=click.Choice(["hard", "soft", "mixed"]), help="Score the gate compares.")
@click.option(
    "--gate-min-wins",
    type=click.IntRange(min=1),
    help="Held-out tasks a candidate must score higher on, none lower (default 2).",
)
@click.option("--rollouts-k", type=click.IntRange(min=1), help="Samples per task (contrastive reflection).")
@click.option("--candidates", type=click.IntRange(1, 8), help="Candidate skills each step gates, the best kept (1-8).")
@click.option(
    "--min-support",
    type=click.IntRange(min=1),
    help="Distinct trajectories an edit must rest on to reach the gate (default 2).",
)
@click.option("--preferences", help='Your rules, given to the optimizer as a prior ("prefer short answers").')
@click.option(
    "--budget-tokens",
    type=click.IntRange(min=0),
    help="Hard cap on tokens tonight (0: none; default 1,000,000 when an agent is the model, else none).",
)
@click.option("--budget-usd", type=click.FloatRange(min=0), help="Hard cap on money tonight (0: none).")
@click.option("--max-tasks", type=click.IntRange(min=1), help="Most recurring tasks used tonight.")
@click.option("--since", help="Mine sessions that ended after this: ISO date/time or a span (30d).")
@chat_dir_option("Harvest direct-chat logs under this folder")
@click.option("--auto-adopt/--no-auto-adopt", default=None, help="Adopt the proposal when the gate accepted it.")
@click.option("--steps", type=click.IntRange(min=1), help="Training steps tonight.")
@click.option("--dreams", type=click.IntRange(min=0), help="Dreamed paraphrases per training task.")
@click.option("--min-recurrence", type=click.IntRange(min=1), help="How often a request must recur to be a task.")
@click.option(
    "--context-chars",
    type=click.IntRange(min=0),
    help="Characters of the skill folder's other files (references/, scripts/) shown to the optimizer (0: none).",
)
@click.option(
    "--edit-frontmatter/--no-edit-frontmatter",
    default=None,
    help="Let edits change the skill's frontmatter (name, description); protected by default.",
)
@click.option("--dry-run", is_flag=True, help="Run the night and write its report; stage, log and remember nothing.")
@executor_option
@click.option(
    "--detach",
    is_flag=True,
    help="Run the night in the background (its output in a log under the data "
    "folder) and return at once with its number; `status` follows it.",
)
@click.option("--detached-log", type=click.Path(path_type=Path), hidden=True)  # set by --detach for its child
@output_options("Print the night's summary as JSON; progress events as JSON lines on stderr.")
@guard
def run_(
    dry_run: bool,
    detach: bool,
    detached_log: Path | None,
    executor: str | None,
    as_json: bool,
    fmt: str | None,
    chat_dirs: tuple[Path, ...],
    **flags: Any,
) -> None:
    """One night: harvest, mine recurring tasks, replay, reflect, gate, stage a proposal.

    Exit 0 when the night ran to its end (whatever the gate decided), 1 when it stopped early
    (budget, model server, Ctrl-C: the report says why; the next run resumes), 2 on bad settings."""
    from skillsleep.slash_commands import detach as background
    from skillsleep.slash_commands.night_runner import run_sleep
    from skillsleep.slash_commands.night_summary import RunSummary

    out = resolve(fmt, as_json)
    if detach:
        started = background.detach(flags, dry_run=dry_run, chat_dirs=chat_dirs, executor=executor)
        show(started, out, background.detach_text, lambda d, prefix: background.detach_text(d, False, prefix))
        return
    progress.start(json_lines=out.fmt == "json" or detached_log is not None)  # a detached night logs JSON lines
    night = run_sleep(
        flags,
        dry_run=dry_run,
        chat_dirs=chat_dirs,
        on_event=progress,
        on_start=background.claim_log(detached_log) if detached_log else None,
        executor=executor,
    )
    if not isinstance(night, RunSummary):  # several skills trained: one line each
        from skillsleep.slash_commands.fanout_text import fanout_text

        show(night, out, lambda s, plain: fanout_text(s, plain=plain), lambda s, prefix: fanout_text(s, prefix=prefix))
        stopped = night.stopped()
    else:
        show(night, out, lambda s, plain: _run_text(s, plain=plain), lambda s, _prefix: _run_text(s))
        stopped = night.result.outcome == "stopped-early"
    if stopped:  # the report says why; cron and scripts see it too
        sys.exit(1)


def _run_text(summary: RunSummary, *, plain: bool = False) -> str:
    from skillsleep.core.report.markdown import render_markdown

    s = summary.model_dump(mode="json")  # flat, as `run --json` prints it
    report = s["markdown"] if not plain else render_markdown(summary.result, plain=True)
    return (
        str(report).rstrip()
        + "\n"
        + "\n".join(
            [f"\nreport: {s['report'].get('report.html', '')}"]
            + (
                [
                    f"harvest: {len(s['harvest']['unreadable'])} transcript file(s) or folder(s) could not be read; "
                    "`skillsleep harvest --json` lists them and why"
                ]
                if s["harvest"]["unreadable"]
                else []
            )
            + ([f"--auto-adopt did not adopt: {s['adopt_error']}"] if s.get("adopt_error") else [])
        )
    )
