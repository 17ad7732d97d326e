"""The `skillsleep` command line; its verbs are the `/sleep` verbs inside an agent.

Exit codes: 0 ok, 1 error (a backend or the run failed), 2 usage (bad flag, config or input).
Progress goes to stderr; `--json` prints one machine-readable object on stdout.
"""

from __future__ import annotations

import asyncio
import errno
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from skillsleep.core.display import visible
from skillsleep.core.errors import ConfigError, SkillsleepError
from skillsleep.slash_commands import choices


class _Fail(click.ClickException):
    """An error with a chosen exit code (1 runtime, 2 usage); with `md` (`--format md`) it is also
    printed as markdown on stdout, since an agent may show the user only that. Run through `skillsleep
    sleep` (`agent`), it is printed there only: agents read stdout and stderr together (`2>&1`), and
    would show it twice."""

    def __init__(self, message: str, code: int, *, md: bool = False, agent: bool = False) -> None:
        super().__init__(message)
        self.exit_code = code
        self.md = md
        self.agent = agent

    def show(self, file: Any = None) -> None:
        if self.md:
            from skillsleep.slash_commands.agent_md import error_md

            click.echo(error_md(self.message))
        if not (self.md and self.agent):
            super().show(file)


def _via_sleep() -> bool:
    """Whether the verb runs through `skillsleep sleep` (inside an agent)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.find_object(Caller) is not None


def _guard(fn: Any = None, *, state: bool = True) -> Any:
    """Turn skillsleep errors into clean messages and exit codes (the CLI is the boundary); with
    `state` (`@_guard`), the data folder is checked first, before any work (`@_guard(state=False)`
    for the verbs that never touch it)."""
    if fn is None:
        return lambda f: _guard(f, state=state)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        md = kwargs.get("fmt") == "md"
        try:
            if state:
                from skillsleep.slash_commands.wiring import check_data_dir

                check_data_dir()
            return fn(*args, **kwargs)
        except ConfigError as exc:
            raise _Fail(visible(str(exc)), 2, md=md, agent=_via_sleep()) from exc
        except SkillsleepError as exc:
            raise _Fail(visible(str(exc)), 1, md=md, agent=_via_sleep()) from exc
        except OSError as exc:  # a file the system refused (a read-only sandbox, a full disk): a message, no traceback
            raise _Fail(visible(_refused(exc)), 1, md=md, agent=_via_sleep()) from exc
        except KeyboardInterrupt:
            progress.stop()
            click.echo("interrupted; run the same command again to resume where it stopped.", err=True)
            sys.exit(130)
        finally:
            progress.stop()  # the error message (printed by click after this) starts on a clean line

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _refused(exc: OSError) -> str:
    """What the system refused, in words; a read-only place names its folder and the way out."""
    if exc.errno == errno.EROFS and exc.filename:
        return (
            f"could not write {Path(exc.filename).parent}: Read-only file system here (an agent's sandbox makes "
            "it so); run this with permission to write there"
        )
    return (
        f"could not use {exc.filename or 'a file'}: {exc.strerror or exc}; check that it exists and that you may "
        "write there"
    )


class Progress:
    """Stage lines (`· message`) on stderr; on a terminal also a live count of finished rollouts
    (a rich progress display, started by the first `tick()`), which `stop()` clears before a
    command prints its result. Off a terminal only the plain lines are written."""

    def __init__(self) -> None:
        self._live: Any = None  # rich.progress.Progress while the live count is shown
        self._count: Any = None  # its task id

    def __call__(self, message: str) -> None:
        if self._live is None:
            click.echo(f"· {message}", err=True)
        else:  # above the live count
            self._live.console.print(f"· {message}", markup=False, highlight=False, emoji=False, soft_wrap=True)

    def tick(self, _: object = None) -> None:
        if self._live is None:
            if not sys.stderr.isatty():
                return
            from rich.console import Console
            from rich.progress import Progress as Live
            from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

            self._live = Live(
                SpinnerColumn(),
                TextColumn("{task.completed:.0f} rollouts scored"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._count = self._live.add_task("rollouts", total=None)
            self._live.start()
        self._live.advance(self._count)

    def stop(self) -> None:
        """Clear the live count (if shown); later lines are plain again. Safe to call twice."""
        live, self._live = self._live, None
        if live is not None:
            live.stop()


progress = Progress()

FORMATS = ("md", "text", "json")


@dataclass(frozen=True)
class Caller:
    """How the user types a verb where they read its output: `/sleep` inside an agent (`skillsleep
    sleep` passes this as the context object), `skillsleep` on a command line."""

    prefix: str = "skillsleep"


@dataclass(frozen=True)
class Output:
    """How a verb prints its result: `fmt` md | text | json, or None for the default (markdown, or
    plain text when stdout is a terminal); `prefix` as in Caller."""

    fmt: str | None
    prefix: str

    @property
    def plain(self) -> bool:
        """Untrusted text shown as it is (for a person) rather than escaped as markdown."""
        return self.fmt == "text" or (self.fmt is None and _terminal())


def _output_options(json_help: str) -> Callable[[Any], Any]:
    """`--json` (what it prints: `json_help`) and `--format md|text|json`, the options of a /sleep verb."""

    def add(fn: Any) -> Any:
        fn = click.option(
            "--format",
            "fmt",
            type=click.Choice(FORMATS),
            help="md: concise markdown for an agent to show as it is; text: plain text; json: as "
            "--json (default: markdown, or plain text on a terminal).",
        )(fn)
        return click.option("--json", "as_json", is_flag=True, help=json_help)(fn)

    return add


def _output(fmt: str | None, as_json: bool) -> Output:
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json is the same as --format json; use one of --json and --format {fmt}")
    ctx = click.get_current_context(silent=True)
    caller = ctx.find_object(Caller) if ctx is not None else None
    return Output("json" if as_json else fmt, caller.prefix if caller else Caller().prefix)


Data = dict[str, Any]


def _show(data: Data, out: Output, text: Callable[[Data, bool], str], md: Callable[[Data, str], str]) -> None:
    """Print a verb's result as `out` asks: JSON, `md(data, prefix)` or `text(data, plain)`."""
    _emit(data, out.fmt == "json", lambda d: md(d, out.prefix) if out.fmt == "md" else text(d, out.plain))


_REDACT_PATTERN = click.option(  # harvest, watch and redact: the same user patterns
    "--redact-pattern",
    "redact_patterns",
    multiple=True,
    help="Extra regex to redact (repeatable; added to SKILLSLEEP_REDACT_PATTERNS and the config file's).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="skillsleep")
def main() -> None:
    """Train an agent's skill document like weights: rollout, reflect, bounded edits, a held-out gate."""


@main.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path), help="Run config (TOML).")
@click.argument("overrides", nargs=-1)
@click.option("--fresh", is_flag=True, help="Start over even if the run directory holds a resumable run.")
@click.option("--budget-tokens", type=click.IntRange(min=1), help="Hard cap on tokens for this run.")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True), help="Hard cap on money (USD).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON on stdout.")
@_guard
def train(
    config_path: Path,
    overrides: tuple[str, ...],
    fresh: bool,
    budget_tokens: int | None,
    budget_usd: float | None,
    as_json: bool,
) -> None:
    """Optimize a skill on a task set: `skillsleep train --config run.toml [section.key=value ...]`."""
    from skillsleep.slash_commands.train_cmd import run_training

    extra = list(overrides)
    if budget_tokens is not None:
        extra.append(f"budget.tokens={budget_tokens}")
    if budget_usd is not None:
        extra.append(f"budget.usd={budget_usd}")
    summary = asyncio.run(run_training(config_path, extra, fresh=fresh, progress=progress, on_rollout=progress.tick))
    _emit(summary, as_json, _train_text)


@main.command("run")
@click.option(
    "--harness",
    type=choices.Names(choices.harnesses),
    help="Where tasks are replayed (default: chat, on the backend).",
)
@click.option(
    "--skill",
    help="SKILL.md path, PATH#Heading for an AGENTS.md section, or a skill NAME of the harness "
    "(default: the managed learned skill).",
)
@click.option("--backend", help="Model provider (deepseek, ollama, anthropic, openai, local) or provider:model.")
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
@click.option("--rollouts-k", type=click.IntRange(min=1), help="Samples per task (contrastive reflection).")
@click.option("--preferences", help='Your rules, given to the optimizer as a prior ("prefer short answers").')
@click.option("--budget-tokens", type=click.IntRange(min=0), help="Hard cap on tokens tonight (0: none).")
@click.option("--budget-usd", type=click.FloatRange(min=0), help="Hard cap on money tonight (0: none).")
@click.option("--max-tasks", type=click.IntRange(min=1), help="Most recurring tasks used tonight.")
@click.option("--since", help="Mine sessions that ended after this: ISO date/time or a span (30d).")
@click.option(
    "--chat-dir",
    "chat_dirs",
    multiple=True,
    type=click.Path(path_type=Path, readable=False),
    help="Harvest direct-chat logs under this folder (repeatable; replaces SKILLSLEEP_CHAT_DIRS and "
    "the config file's chat_dirs).",
)
@click.option("--auto-adopt/--no-auto-adopt", default=None, help="Adopt the proposal when the gate accepted it.")
@click.option("--steps", type=click.IntRange(min=1), help="Training steps tonight.")
@click.option("--dreams", type=click.IntRange(min=0), help="Dreamed paraphrases per training task.")
@click.option("--min-recurrence", type=click.IntRange(min=1), help="How often a request must recur to be a task.")
@click.option("--dry-run", is_flag=True, help="Run the night and write its report, but stage no proposal.")
@click.option(
    "--detach",
    is_flag=True,
    help="Run the night in the background (its output in a log under the data "
    "folder) and return at once with its number; `status` follows it.",
)
@click.option("--detached-log", type=click.Path(path_type=Path), hidden=True)  # set by --detach for its child
@_output_options("Print the night's summary as JSON.")
@_guard
def run_(
    dry_run: bool,
    detach: bool,
    detached_log: Path | None,
    as_json: bool,
    fmt: str | None,
    chat_dirs: tuple[Path, ...],
    **flags: Any,
) -> None:
    """One night: harvest, mine recurring tasks, replay, reflect, gate, stage a proposal.

    Exit 0 when the night ran to its end (whatever the gate decided), 1 when it stopped early
    (budget, model server, Ctrl-C: the report says why; the next run resumes), 2 on bad settings."""
    from skillsleep.slash_commands import detach as background
    from skillsleep.slash_commands.sleep_cmd import run_sleep

    out = _output(fmt, as_json)
    if detach:
        started = background.detach(flags, dry_run=dry_run, chat_dirs=chat_dirs)
        _show(started, out, background.detach_text, lambda d, prefix: background.detach_text(d, False, prefix))
        return
    summary = run_sleep(
        flags,
        dry_run=dry_run,
        chat_dirs=chat_dirs,
        progress=progress,
        on_rollout=progress.tick,
        on_start=background.claim_log(detached_log) if detached_log else None,
    )
    _show(summary, out, lambda s, plain: _run_text(s, plain=plain), lambda s, _prefix: _run_text(s))
    if summary["outcome"] == "stopped-early":  # the report says why; cron and scripts see it too
        sys.exit(1)


@main.command("demo")
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=Path),
    help="The demo folder: a new or empty one (default: a new temporary folder).",
)
@click.option("--backend", help="The model of every role (default: local:qwen2.5-coder-0.5b, the embedded one).")
@click.option("--json", "as_json", is_flag=True, help="Print what happened and the next commands as JSON.")
@_guard(state=False)  # the demo works in its own folder (it reads and fills only the model cache here)
def demo_(folder: Path | None, backend: str | None, as_json: bool) -> None:
    """A whole night on recorded sample sessions, in a scratch folder of its own, ending in a proposal
    to diff and adopt there."""
    from skillsleep.slash_commands.demo_cmd import demo_text, run_demo

    _emit(
        run_demo(folder, backend, progress=progress, echo=lambda line: click.echo(line, err=True)), as_json, demo_text
    )


def _run_text(s: dict[str, Any], *, plain: bool = False) -> str:
    from skillsleep.core.report_files import read_json
    from skillsleep.core.report_markdown import render_markdown

    report = (
        s["markdown"]
        if not plain
        else render_markdown(read_json(Path(s["report"]["report.json"]).read_text(encoding="utf-8")), plain=True)
    )
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


def _where(fn: Any) -> Any:
    """`--crontab` (default) / `--systemd` / `--openclaw`: where `schedule` and `unschedule` keep the
    night (one switch per class in schedulers.SCHEDULERS)."""
    fn = click.option(
        "--openclaw",
        "via",
        flag_value="openclaw",
        help="An OpenClaw cron job (`openclaw cron add`; its gateway must be running).",
    )(fn)
    fn = click.option(
        "--systemd",
        "via",
        flag_value="systemd",
        help="A systemd user timer and service (~/.config/systemd/user) instead of the crontab.",
    )(fn)
    return click.option(
        "--crontab", "via", flag_value="crontab", default=True, help="The current user's crontab (the default)."
    )(fn)


@main.command("schedule", context_settings={"ignore_unknown_options": True})
@click.option("--at", metavar="HH:MM", help="Run the night every day at this time (the machine's local time).")
@click.option("--cron", "cron_expr", metavar="EXPR", help="Five cron fields instead of --at, e.g. '0 3 * * 1-5'.")
@_where
@click.option("--print", "preview", is_flag=True, help="Show what would be installed; install nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was scheduled as JSON.")
@click.argument("run_flags", nargs=-1, type=click.UNPROCESSED, metavar="[RUN FLAGS]...")
@_guard
def schedule_(
    at: str | None, cron_expr: str | None, via: str, preview: bool, as_json: bool, run_flags: tuple[str, ...]
) -> None:
    """Run `skillsleep run [RUN FLAGS]` every night by itself: `skillsleep schedule --at 03:00 --backend deepseek`.

    Every option but these is a `run` flag, checked now by `run`'s own settings code and kept on
    the line; a second `schedule` replaces the first. API keys go in night.env beside config.toml."""
    from skillsleep.slash_commands import schedule_cmd

    try:  # `run`'s own parser: a typo fails now, not at 3 a.m.
        params = run_.make_context("run", list(run_flags)).params
    except click.UsageError as exc:
        raise ConfigError(
            f"{exc.format_message()} (the flags after `schedule`'s own are `skillsleep run` "
            "flags: `skillsleep run --help` lists them)"
        ) from None
    result = schedule_cmd.schedule(at, cron_expr, via=via, run_flags=run_flags, params=params, preview=preview)
    _emit(result, as_json, schedule_cmd.schedule_text)


@main.command("unschedule")
@_where
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@_guard
def unschedule_(via: str, as_json: bool) -> None:
    """Remove the night `skillsleep schedule` installed (only its own lines or files)."""
    from skillsleep.slash_commands import schedule_cmd

    _emit(schedule_cmd.unschedule(via), as_json, schedule_cmd.unschedule_text)


@main.command("eval")
@click.option("--skill", "skill_path", required=True, type=click.Path(path_type=Path), help="Skill to score.")
@click.option("--tasks", "tasks_path", required=True, type=click.Path(path_type=Path), help="Task file (JSONL).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="Take backends and judge settings from this config.",
)
@click.option("--target", "target_spec", help="Target backend as provider:model (default: the config's).")
@click.option("--base-url", help="Base URL of the target's server (a backend's, or the agent's with --harness).")
@click.option("--judge", "judge_spec", help="Backend for rubric judges as provider:model.")
@click.option("--metric", type=click.Choice(["hard", "soft", "mixed"]), help="Score metric.")
@click.option(
    "--split",
    type=click.Choice(["all", "train", "val", "test"]),
    default="all",
    show_default=True,
    help="Which tasks to score.",
)
@click.option("--rollouts-k", type=click.IntRange(min=1), help="Samples per task.")
@click.option(
    "--harness",
    "harness_name",
    default="chat",
    show_default=True,
    help="Where tasks run: chat, claude-code, codex or openclaw (see `skillsleep harnesses`).",
)
@click.option("--target-model", help="The agent's model for a CLI harness (default: the agent's own).")
@click.option("--json", "as_json", is_flag=True, help="Print scores as JSON.")
@_guard
def eval_(
    skill_path: Path,
    tasks_path: Path,
    config_path: Path | None,
    target_spec: str | None,
    base_url: str | None,
    judge_spec: str | None,
    metric: str | None,
    split: str,
    rollouts_k: int | None,
    harness_name: str,
    target_model: str | None,
    as_json: bool,
) -> None:
    """Score a skill on a task file (a transfer check): `skillsleep eval --skill S --tasks T`."""
    from skillsleep.slash_commands.train_cmd import EvalOptions, run_eval

    opts = EvalOptions(
        skill=skill_path,
        tasks=tasks_path,
        config=config_path,
        target=target_spec,
        base_url=base_url,
        judge=judge_spec,
        metric=metric,
        split=split,
        rollouts_k=rollouts_k,
        harness=harness_name,
        target_model=target_model,
    )
    _emit(asyncio.run(run_eval(opts, progress=progress, on_rollout=progress.tick)), as_json, _eval_text)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print a list of provider objects as JSON.")
@_guard(state=False)
def backends(as_json: bool) -> None:
    """List every model provider, whether it is configured here, and how to configure it."""
    from skillsleep.slash_commands.train_cmd import list_backends

    rows = asyncio.run(list_backends())
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        mark = "ok " if r["configured"] else "-- "
        click.echo(f"{mark}{r['name']:<10} {r['reason']}")
        if not r["configured"] and r["how_to_configure"] not in r["reason"]:
            click.echo(f"    {r['how_to_configure']}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print a list of harness objects as JSON.")
@_guard(state=False)
def harnesses(as_json: bool) -> None:
    """List every harness (agent to replay tasks in): installed, version, usable, and why not.

    A CLI harness is configured in the config file, e.g. `[harness.codex] command = "/opt/codex"`."""
    from skillsleep.harnesses import registry
    from skillsleep.slash_commands.wiring import harness_settings

    rows = [s.model_dump(mode="json") for s in registry.statuses(harness_settings())]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        mark = "ok " if r["usable"] else "-- "
        version = r["version"] or ("not installed" if not r["installed"] else "version unknown")
        click.echo(f"{mark}{r['name']:<12} {version:<16} {r['reason']}")


@main.command()
@click.option("--harness", type=choices.Names(choices.agents_then_chat), help="Only this agent's transcripts.")
@click.option(
    "--chat-dir",
    "chat_dirs",
    multiple=True,
    type=click.Path(path_type=Path, readable=False),
    help="Read direct-chat logs (*.jsonl, OpenAI messages, one conversation a line) under this folder "
    "(repeatable; replaces SKILLSLEEP_CHAT_DIRS and the config file's chat_dirs).",
)
@click.option(
    "--since",
    help="Count only sessions that ended after this as new (older ones are stored too, counted "
    "apart): ISO date/time or a span (24h, 7d).",
)
@_REDACT_PATTERN
@click.option(
    "--transcript",
    type=click.Path(path_type=Path, dir_okay=True, exists=False),
    help="Read only this transcript file (with --harness: the agent that wrote it).",
)
@click.option(
    "--hook",
    type=choices.Names(choices.hook_agents),
    help="As the agent's session-end hook: read the transcript named by the event JSON on stdin; prints "
    "nothing and always exits 0 (problems go to <data>/logs/hooks.log).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the harvest report as JSON.")
@_guard(state=False)  # --hook never fails on the data folder; every other use checks it first
def harvest(
    harness: str | None,
    chat_dirs: tuple[Path, ...],
    since: str | None,
    redact_patterns: tuple[str, ...],
    transcript: Path | None,
    hook: str | None,
    as_json: bool,
) -> None:
    """Read new sessions from the agents' local transcripts (incremental, redacted before storage)."""
    from skillsleep.slash_commands.harvest_cmd import chat_folders, run_harvest
    from skillsleep.slash_commands.wiring import check_data_dir, effective_settings

    if hook is not None:
        if harness not in (None, hook) or transcript or chat_dirs or since or redact_patterns or as_json:
            raise ConfigError(
                f"--hook {hook} reads the transcript Claude Code names on stdin with your settings; "
                "give it no other option"
            )
        from skillsleep.slash_commands.session_hook import session_end

        session_end(hook, sys.stdin.buffer.read())
        return
    check_data_dir()
    if chat_dirs and harness not in (None, "chat"):
        raise ConfigError(
            f"--chat-dir has no effect with --harness {harness} (it reads only that agent's "
            "transcripts); drop --chat-dir, or use --harness chat"
        )
    settings = effective_settings(chat_dirs, redact_patterns)
    folders = chat_folders(settings) if harness in (None, "chat") else []
    report = run_harvest(harness, since, tuple(settings.harvest.redact_patterns.value), folders, transcript=transcript)
    _emit(report, as_json, _harvest_text)


@main.command("redact")
@click.argument("source", metavar="FILE|-")
@_REDACT_PATTERN
@click.option("--json", "as_json", is_flag=True, help="Print the counts, the lines and the redacted text as JSON.")
@_guard(state=False)
def redact_(source: str, redact_patterns: tuple[str, ...], as_json: bool) -> None:
    """Show what harvest would redact in FILE (- reads standard input): the redacted text on stdout,
    what was redacted on which line on stderr. Nothing is stored."""
    from skillsleep.slash_commands.redact_cmd import read_input, redact_text, summary_line
    from skillsleep.slash_commands.wiring import effective_settings

    text = read_input(source)
    patterns = tuple(effective_settings((), redact_patterns).harvest.redact_patterns.value)
    report = redact_text(source, text, patterns)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    click.echo(visible(report.text) if _terminal() else report.text, nl=False)
    click.echo(visible(summary_line(report)), err=True)


@main.command()
@click.option(
    "--debounce",
    "debounce_s",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Seconds of quiet after a transcript changes before it is harvested.",
)
@click.option(
    "--duration",
    "duration_s",
    type=click.FloatRange(min=0),
    help="Stop after this many seconds (default: until Ctrl-C).",
)
@click.option(
    "--chat-dir",
    "chat_dirs",
    multiple=True,
    type=click.Path(path_type=Path, readable=False),
    help="Watch this folder of direct-chat logs too, besides the agents' transcripts (repeatable; "
    "replaces SKILLSLEEP_CHAT_DIRS and the config file's chat_dirs).",
)
@_REDACT_PATTERN
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per harvest, one per line.")
@_guard
def watch(
    debounce_s: float,
    duration_s: float | None,
    chat_dirs: tuple[Path, ...],
    redact_patterns: tuple[str, ...],
    as_json: bool,
) -> None:
    """Harvest new transcript bytes shortly after an agent writes them (same path as `harvest`)."""
    from skillsleep.slash_commands.watch_cmd import report_line, run_watch
    from skillsleep.slash_commands.wiring import effective_settings

    def on_report(r: dict[str, Any]) -> None:
        click.echo(json.dumps(r, ensure_ascii=False) if as_json else report_line(r))

    def on_start(roots: list[tuple[str, Path]]) -> None:
        progress("watching " + ", ".join(f"{h} {p}" for h, p in roots) + " (Ctrl-C to stop)")

    run_watch(debounce_s, duration_s, effective_settings(chat_dirs, redact_patterns), on_report, on_start)


@main.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print the config file and the settings as JSON.")
@_guard
def config_(as_json: bool) -> None:
    """Show the config file's path and every effective setting with where it came from."""
    from skillsleep.slash_commands.wiring import effective_settings, harness_settings

    settings = effective_settings(strict_file=False)
    if settings.config_file.exists:
        harness_settings()  # every [harness.<name>] table too: this is where a user looks for a typo
    _emit(settings.model_dump(mode="json"), as_json, _config_text)


def _config_text(s: dict[str, Any]) -> str:
    from skillsleep.slash_commands.wiring import ConfigFile, origin_label

    where = ConfigFile.model_validate(s["config_file"])
    chosen = {
        "SKILLSLEEP_CONFIG": "set by SKILLSLEEP_CONFIG",
        "SKILLSLEEP_HOME": "in SKILLSLEEP_HOME",
        "default": "the platform default; SKILLSLEEP_CONFIG or SKILLSLEEP_HOME move it",
    }[where.chosen_by]
    state = "exists" if where.exists else "does not exist; every setting below is from env or default"
    lines = [f"config file: {where.path} ({state}; {chosen})"]
    for section, settings in s.items():
        if section == "config_file":
            continue
        for name, setting in settings.items():
            key = f"{section}.{name}"
            if "merge" not in setting:  # a scalar setting ([sleep]): one value, the highest level wins
                shown = json.dumps(setting["value"], ensure_ascii=False)
                lines.append(f"{key} = {shown}  ← {_origin_text(setting['source'], key, where)}")
                lines += [
                    f"  {json.dumps(value, ensure_ascii=False)}  ← {_origin_text(origin, key, where)}"
                    " (overridden, not used)"
                    for origin, value in setting["layers"].items()
                    if origin != setting["source"]
                ]
                continue
            merge = "lists from every level are combined" if setting["merge"] == "extend" else "the highest level wins"
            lines.append(f"{key} ({merge}):")
            if not setting["value"]:
                lines.append(f"  (none)  ← {setting['source']}")
            for origin, items in setting["layers"].items():
                used = setting["merge"] == "extend" or origin == setting["source"]
                note = "" if used else " (overridden, not used)"
                lines += [f"  {item}  ← {origin}: {origin_label(origin, key, where)}{note}" for item in items]
    return "\n".join(lines)


def _origin_text(origin: Any, key: str, where: Any) -> str:
    from skillsleep.slash_commands.wiring import origin_label

    return "default" if origin == "default" else f"{origin}: {origin_label(origin, key, where)}"


def _harvest_text(r: dict[str, Any]) -> str:
    from skillsleep.slash_commands.harvest_cmd import left_out_lines

    lines = [
        "new or updated sessions: " + ", ".join(f"{k} {v}" for k, v in r["sessions"].items()),
        f"turns {r['turns']}, errors {r['errors']}, bytes read {r['bytes_read']} "
        f"({r['files_read']} of {r['files_seen']} files; {r['files_reset']} re-read after truncation)",
    ]
    if r["tools"]:
        lines.append(
            "tools: " + ", ".join(f"{k} {v}" for k, v in sorted(r["tools"].items(), key=lambda kv: -kv[1])[:10])
        )
    lines += left_out_lines(r)
    if r["redactions"]:
        lines.append("redacted: " + ", ".join(f"{k} {v}" for k, v in sorted(r["redactions"].items())))
    return "\n".join(lines)


def _emit(summary: dict[str, Any], as_json: bool, text: Any) -> None:
    progress.stop()
    if as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:  # untrusted text in it never reaches a terminal as an escape sequence
        click.echo(visible(text(summary)))


def _terminal() -> bool:
    """Whether stdout is a terminal (a person reads plain text) rather than an agent or a pipe (markdown)."""
    return sys.stdout.isatty()


def _train_text(s: dict[str, Any]) -> str:
    lines = [
        f"run: {s['run_dir']}",
        f"selection score: seed {s['seed_score']:.3f} → best {s['best_score']:.3f} (final {s['final_score']:.3f})",
        f"steps: {s['steps']}, candidates accepted {s['accepted']}, rejected {s['rejected']}",
    ]
    if s.get("test"):
        t = s["test"]
        lines.append(f"test split: seed {t['seed']:.3f}, best {t['best']:.3f}, final {t['final']:.3f}")
    lines.append(
        f"calls: {s['calls_made']} made, {s['cache_hits']} from cache; tokens {s['tokens']}; cost ${s['cost_usd']:.4f}"
    )
    if s.get("stopped"):
        lines.append(f"stopped early: {s['stopped']} — run the same command again (with a larger budget) to resume")
    if s.get("problems"):
        lines.append(f"optimizer replies that could not be used ({len(s['problems'])}; the run went on without them):")
        lines += [f"  {p}" for p in s["problems"][:5]]
        lines += ["  … (--json lists them all)"] if len(s["problems"]) > 5 else []
    lines.append(f"best skill: {s['best_skill']}")
    return "\n".join(lines)


def _eval_text(s: dict[str, Any]) -> str:
    lines = [f"{s['skill']} on {s['tasks']} ({s['n']} tasks, metric {s['metric']}): {s['score']:.3f}"]
    for t in s["per_task"]:
        lines.append(f"  {t['score']:.2f}  {t['id']}" + (f"  — {t['feedback']}" if t["feedback"] else ""))
    return "\n".join(lines)


# --- the proposal verbs of the nightly cycle (slash_commands/proposals_cmd.py) -------------------


@main.command("status")
@_output_options("Print the status as one JSON object.")
@_guard
def status_(as_json: bool, fmt: str | None) -> None:
    """Nights run, gate history, pending proposals, recent actions, last harvest, spend, problems.

    Reads only: needs no config file, backend or lock."""
    from skillsleep.slash_commands import agent_md, proposals_cmd

    out = _output(fmt, as_json)
    _show(proposals_cmd.status(), out, lambda s, plain: proposals_cmd.status_text(s, plain=plain), agent_md.status_md)


@main.command("diff")
@click.argument("proposal_id", metavar="[ID]", required=False)
@_output_options("Print {id, skill_path, status, diff, changes, numbered, …} as JSON.")
@_guard
def diff_(proposal_id: str | None, as_json: bool, fmt: str | None) -> None:
    """The unified diff of a proposal (default: the newest pending one) against the live file now;
    with --format, its numbered changes (as `adopt --edits` takes them)."""
    from skillsleep.slash_commands import proposals_cmd

    out = _output(fmt, as_json)
    d = proposals_cmd.diff(proposal_id)
    if out.fmt is not None:
        _show(d, out, proposals_cmd.diff_text, lambda d, prefix: proposals_cmd.diff_text(d, False, prefix))
    elif d["diff"]:
        click.echo(f"proposal {d['id']} ({d['status']}) against {d['skill_path']} as it is now:", err=True)
        if d["note"]:
            click.echo(d["note"], err=True)
        if _terminal():
            click.echo(visible(d["diff"]), nl=False)
        else:  # piped: the patch, byte for byte (color=True: click would strip escape sequences)
            click.echo(d["diff"], nl=False, color=True)
    else:
        click.echo(f"no difference: {d['skill_path']} already equals proposal {d['id']}", err=True)


@main.command("adopt")
@click.argument("proposal_id", metavar="[ID]", required=False)
@click.option(
    "--force", is_flag=True, help="Adopt even if the gate did not accept it, or the live file was edited since staging."
)
@click.option(
    "--edits",
    metavar="N,M",
    help="Adopt only these of its changes, numbered as `diff --format md` shows "
    "them (without ID: the proposal `diff` shows).",
)
@_output_options("Print what was written and the backup as JSON.")
@_guard
def adopt_(proposal_id: str | None, force: bool, edits: str | None, as_json: bool, fmt: str | None) -> None:
    """Put a proposal live (default: the newest accepted pending one); the old file is backed up first."""
    from skillsleep.slash_commands import agent_md, proposals_cmd

    out = _output(fmt, as_json)
    _show(
        proposals_cmd.adopt(proposal_id, force=force, edits=edits),
        out,
        lambda r, _plain: proposals_cmd.adopt_text(r),
        agent_md.adopt_md,
    )


@main.command("install")
@click.argument("agents", nargs=-1, metavar="[claude-code|codex|openclaw|all]...")
@click.option("--force", is_flag=True, help="Replace files you changed (your versions are backed up first).")
@_output_options("Print what was written and run, per agent, as JSON.")
@_guard
def install_(agents: tuple[str, ...], force: bool, as_json: bool, fmt: str | None) -> None:
    """Put skillsleep into your agents (/sleep, its skill, hooks): every agent on PATH, or the ones named.

    Idempotent; a file you changed is never replaced without --force; `skillsleep uninstall` removes
    exactly what this wrote."""
    from skillsleep.slash_commands import install_cmd

    _show(
        install_cmd.install(agents, force=force),
        _output(fmt, as_json),
        install_cmd.install_text,
        install_cmd.install_md,
    )


@main.command("uninstall")
@click.argument("agents", nargs=-1, metavar="[claude-code|codex|openclaw|all]...")
@click.option("--force", is_flag=True, help="Remove files you changed since install (backed up first).")
@_output_options("Print what was removed and undone, per agent, as JSON.")
@_guard
def uninstall_(agents: tuple[str, ...], force: bool, as_json: bool, fmt: str | None) -> None:
    """Take out what `skillsleep install` put into your agents, and only that (default: every agent)."""
    from skillsleep.slash_commands import install_cmd

    _show(
        install_cmd.uninstall(agents, force=force),
        _output(fmt, as_json),
        install_cmd.install_text,
        install_cmd.install_md,
    )


@main.command("reject")
@click.argument("proposal_id", metavar="[ID]", required=False)
@_output_options("Print the rejected proposal as JSON.")
@_guard
def reject_(proposal_id: str | None, as_json: bool, fmt: str | None) -> None:
    """Drop a pending proposal (default: the newest pending one); the live file is not touched."""
    from skillsleep.slash_commands import agent_md, proposals_cmd

    out = _output(fmt, as_json)
    _show(proposals_cmd.reject(proposal_id), out, lambda r, _plain: proposals_cmd.reject_text(r), agent_md.reject_md)


@main.command("rollback")
@click.argument("steps", type=click.IntRange(min=1), default=1, required=False)
@click.option("--force", is_flag=True, help="Roll back even over edits made since the last adopt/rollback.")
@_output_options("Print what was restored as JSON.")
@_guard
def rollback_(steps: int, force: bool, as_json: bool, fmt: str | None) -> None:
    """Undo the last STEPS adopts/rollbacks (default 1) of the most recently changed skill."""
    from skillsleep.slash_commands import agent_md, proposals_cmd

    out = _output(fmt, as_json)
    _show(
        proposals_cmd.rollback(steps, force=force),
        out,
        lambda r, _plain: proposals_cmd.rollback_text(r),
        agent_md.rollback_md,
    )


@main.command("cost")
@_output_options("Print the spend as one JSON object.")
@_guard
def cost_(as_json: bool, fmt: str | None) -> None:
    """What the nights spent: this month in all and by role, and by night (from their ledgers).

    Reads only: needs no config file, backend or lock."""
    from skillsleep.slash_commands.cost_cmd import cost, cost_text

    out = _output(fmt, as_json)
    _show(cost(), out, cost_text, lambda c, _prefix: cost_text(c, False))


@main.command("sleep", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--line", help="The text typed after /sleep, split like a shell (for an agent that passes one string).")
@click.option(
    "--prefix",
    default="/sleep",
    show_default=True,
    help="How the user types the verbs in this agent ($sleep in Codex): the commands the output suggests.",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def sleep_(line: str | None, prefix: str, args: tuple[str, ...]) -> None:
    """Run a /sleep verb as typed in an agent: `skillsleep sleep [VERB [ARGS...]]` (default: status).

    Prints markdown (as --format md), errors included, unless ARGS say --json or --format;
    `skillsleep sleep help` lists the verbs."""
    from skillsleep.slash_commands import agent_md, verbs

    md = True  # until the user's arguments are read: they may ask for another format
    try:
        if line is not None and args:
            raise ConfigError("give either --line or the verb and its arguments, not both")
        typed = verbs.split_line(line) if line is not None else list(args)
        md = verbs.markdown(typed)
        argv = verbs.command_line(typed, verbs.check_prefix(prefix))
    except ConfigError as exc:
        raise _Fail(visible(str(exc)), 2, md=md, agent=True) from exc
    try:
        code = main.main(argv, prog_name="skillsleep", standalone_mode=False, obj=Caller(prefix))
    except click.ClickException as exc:  # click's own (a bad option or value): shown as markdown instead
        if not md or getattr(exc, "md", False):
            raise
        verb = exc.ctx.info_name if isinstance(exc, click.UsageError) and exc.ctx else argv[0]
        click.echo(agent_md.error_md(visible(exc.format_message())) + "\n\n" + verbs.usage_md(verb, prefix))
        sys.exit(exc.exit_code)
    if code:  # --help and the like
        sys.exit(code)


@main.command("help")
@_output_options("Print the verbs as JSON.")
@_guard(state=False)
def help_(as_json: bool, fmt: str | None) -> None:
    """List the /sleep verbs, one line each, with their arguments."""
    from skillsleep.slash_commands import verbs

    out = _output(fmt, as_json)
    _show(verbs.help_data(out.prefix), out, verbs.help_text, lambda d, _prefix: verbs.help_text(d, False))


@main.command("doctor")
@click.option(
    "--repair",
    "fix",
    is_flag=True,
    help="Repair what can be: back up first, salvage what is readable, rebuild the rest; never delete.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the problems and what was repaired as JSON.")
@_guard
def doctor_(fix: bool, as_json: bool) -> None:
    """Check the state directory (state.db, nights, proposals, history, skill memories); exit 1 on problems."""
    from skillsleep.slash_commands import doctor_cmd

    report = doctor_cmd.doctor(fix=fix)
    _emit(report, as_json, doctor_cmd.doctor_text)
    if not report["healthy"]:
        sys.exit(1)


__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    main()
