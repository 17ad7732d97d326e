"""`skillsleep harvest`: read new sessions from the agents' local transcripts (harvester.py does it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillsleep.core.shared.errors import ConfigError
from skillsleep.slash_commands import choices
from skillsleep.slash_commands.guard import guard
from skillsleep.slash_commands.options import chat_dir_option, redact_pattern_option
from skillsleep.slash_commands.output import emit

if TYPE_CHECKING:
    from skillsleep.slash_commands.harvester import HarvestResult

__all__ = ["harvest"]


@click.command()
@click.option("--harness", type=choices.Names(choices.agents_then_chat), help="Only this agent's transcripts.")
@chat_dir_option("Read direct-chat logs (*.jsonl, OpenAI messages, one conversation a line) under this folder")
@click.option(
    "--since",
    help="Count only sessions that ended after this as new (older ones are stored too, counted "
    "apart): ISO date/time or a span (24h, 7d).",
)
@redact_pattern_option
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
@guard(state=False)  # --hook never fails on the data folder; every other use checks it first
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
    from skillsleep.slash_commands.harvester import chat_folders, run_harvest
    from skillsleep.slash_commands.session_hook import session_end
    from skillsleep.slash_commands.wiring import check_data_dir, effective_settings

    if hook is not None:
        if harness not in (None, hook) or transcript or chat_dirs or since or redact_patterns or as_json:
            raise ConfigError(
                f"--hook {hook} reads the transcript Claude Code names on stdin with your settings; "
                "give it no other option"
            )
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
    emit(report, as_json, _harvest_text)


def _harvest_text(r: HarvestResult) -> str:
    from skillsleep.slash_commands.harvester import left_out_lines

    lines = [
        "new or updated sessions: " + ", ".join(f"{k} {v}" for k, v in r.sessions.items()),
        f"turns {r.turns}, errors {r.errors}, bytes read {r.bytes_read} "
        f"({r.files_read} of {r.files_seen} files; {r.files_reset} re-read after truncation)",
    ]
    if r.tools:
        lines.append("tools: " + ", ".join(f"{k} {v}" for k, v in sorted(r.tools.items(), key=lambda kv: -kv[1])[:10]))
    for harness, used in r.skills.items():
        lines.append(f"skills used ({harness}): " + ", ".join(f"{k} {v}" for k, v in used.most_common()))
    lines += left_out_lines(r)
    if r.redactions:
        lines.append("redacted: " + ", ".join(f"{k} {v}" for k, v in sorted(r.redactions.items())))
    return "\n".join(lines)
