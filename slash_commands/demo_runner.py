"""What `skillsleep demo` does (demo_cmd.py is its click command): a whole night on recorded sample
sessions, in a scratch folder.

    scratch folder  --dir DIR (a new or empty folder) or a new temporary one. Inside it: data/
                    (its SKILLSLEEP_HOME), home/ (its HOME, holding only the sample Claude Code
                    transcripts, in home/.claude/projects/) and chats/ (its only chat-log
                    folder). The night runs with every SKILLSLEEP_* variable and agent folder
                    variable of the user's environment removed, so the user's own state,
                    settings, skills and transcripts are never read or written.
    the samples     package data `demo/` (see its README.md): a user who keeps asking for commit
                    messages and keeps correcting the same thing, the missing sign-off line.
    the night       `skillsleep run` itself, as a child process in that environment, with its
                    defaults (the chat harness, the managed learned skill — its seed written
                    first, so the proposal is a diff against it — the gate on) and NIGHT_FLAGS;
                    every role on the backend (default: the embedded 0.5B model). A night that
                    stages nothing is followed by one more, as the next night would be (it
                    carries the first one's memory: rejected edits, the optimizer's notes).
    the model       `local:<packaged model>`: the weights are assembled once into the user's own
                    model cache (the one `skillsleep run` uses) and linked into the scratch
                    folder, so a second demo does not assemble or copy them again.

It prints what the night did and the exact commands that diff and adopt its proposal in the
scratch folder (`SKILLSLEEP_HOME=… skillsleep diff`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Mapping
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from skillsleep.core.models.backends.local import import_xllamacpp
from skillsleep.core.models.backends.registry import parse_spec
from skillsleep.core.models.backends.weights import WEIGHTS, ensure_weights
from skillsleep.core.report.result import SplitResult
from skillsleep.core.shared.errors import BackendUnavailable, ConfigError, SkillsleepError
from skillsleep.core.shared.events import EventSink, Notice
from skillsleep.harnesses.skills import managed_path, managed_seed
from skillsleep.slash_commands.local_threads import LOCAL_THREADS_ENV
from skillsleep.slash_commands.progress import read_event
from skillsleep.slash_commands.wiring import cache_dir

DEFAULT_BACKEND = "local:qwen2.5-coder-0.5b"
SINCE = "2026-11-01"  # before the first sample session (16 November 2026)
# One step on the real tasks only: what the 0.5B model turns into an accepted proposal. Measured on 2
# shared cores: 75–170 s; the same accepted proposal with 1, 2 or 4 threads, and an accepted one on 5 of 5
# reshuffled sample sets (other one-off requests, correction order, dates).
# Its few recorded sessions give 1 task to train on and 1 held out: the demo's gate asks for a win
# on 1 held-out task and an edit may rest on 1 trajectory (a real night asks for 2 of each,
# `[sleep] gate_min_wins` and `min_support`), and the demo's text says so.
NIGHT_FLAGS = (
    *("--steps", "1", "--dreams", "0", "--rollouts-k", "1"),
    *("--gate-min-wins", "1", "--min-support", "1", "--since", SINCE),
)
MAX_NIGHTS = 2
AGENT_FOLDERS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR")  # they default to folders in HOME

Echo = Callable[[str], None]


class Scratch(BaseModel):
    """The demo's folder: its own data folder, home and chat-log folder."""

    model_config = ConfigDict(frozen=True)

    root: Path
    data: Path
    home: Path
    chats: Path

    @classmethod
    def at(cls, root: Path) -> Scratch:
        return cls(root=root, data=root / "data", home=root / "home", chats=root / "chats")

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """`base` without any skillsleep setting or agent folder, pointed into the scratch folder (the
        embedded model's threads, a setting of the machine, are kept)."""
        kept = {
            k: v
            for k, v in base.items()
            if (not k.startswith("SKILLSLEEP_") or k == LOCAL_THREADS_ENV) and k not in AGENT_FOLDERS
        }
        return {
            **kept,
            "SKILLSLEEP_HOME": str(self.data),
            "HOME": str(self.home),
            "SKILLSLEEP_CHAT_DIRS": str(self.chats),
        }

    def command(self, verb: str) -> str:
        """`skillsleep <verb>` as the user types it to act in this folder."""
        return f"SKILLSLEEP_HOME={shlex.quote(str(self.data))} skillsleep {verb}"


class DemoNight(BaseModel):
    """One night of the demo: its verdict, held-out and test scores, and its proposal."""

    model_config = ConfigDict(extra="forbid")

    night: int
    outcome: str
    reason: str
    baseline: float | None
    candidate: float | None
    test: SplitResult | None
    proposal: str | None


class RanSkill(BaseModel):
    model_config = ConfigDict(extra="ignore")

    path: str


class NightRan(DemoNight):
    """What the demo reads of a night's `skillsleep run --json` (the rest of it is ignored)."""

    model_config = ConfigDict(extra="ignore")

    sessions: int
    recurring_tasks: int
    skill: RanSkill
    report: dict[str, str]  # file name → path

    def night_only(self) -> DemoNight:
        return DemoNight.model_validate({name: getattr(self, name) for name in DemoNight.model_fields})


class DemoEnv(BaseModel):
    """The environment the demo's commands run in."""

    model_config = ConfigDict(extra="forbid")

    SKILLSLEEP_HOME: str
    HOME: str


class DemoNext(BaseModel):
    """The commands that act on the demo's proposal in its folder, as the user types them."""

    model_config = ConfigDict(extra="forbid")

    diff: str
    adopt: str
    rollback: str
    status: str
    remove: str  # the demo folder


class DemoResult(BaseModel):
    """What `skillsleep demo --json` prints: the folder, the nights, the proposal, what to type next."""

    model_config = ConfigDict(extra="forbid")

    dir: str
    env: DemoEnv
    backend: str
    sessions: int  # sample sessions harvested
    recurring_tasks: int
    nights: list[DemoNight]
    proposal: str
    accepted: bool
    skill: str  # the live skill the proposal changes
    report: str  # the last night's report.html
    next: DemoNext


def run_demo(folder: Path | None, backend: str | None, *, on_event: EventSink, echo: Echo) -> DemoResult:
    """Make the scratch folder, run the night(s) there and return what happened with the next
    commands. `on_event` gets the demo's own lines and the night's events as they come, `echo` any
    other line the night writes on stderr."""
    backend = backend or DEFAULT_BACKEND
    requested = _requested(folder)
    model = _packaged_model(backend)  # a missing local model is named before anything is created
    scratch = _create(requested)
    _fill(scratch, model)
    on_event(Notice(text=f"demo folder: {scratch.root} (its own SKILLSLEEP_HOME, HOME and chat-log folder)"))
    nights: list[NightRan] = []
    while len(nights) < MAX_NIGHTS:
        night = _night(scratch, backend, on_event, echo)
        nights.append(night)
        if night.proposal or night.outcome == "stopped-early":
            break
        again = "a second night, as the next one would be"
        on_event(Notice(text=f"night {night.night} staged no proposal ({night.reason}); {again}"))
    last = nights[-1]
    if not last.proposal:
        raise SkillsleepError(
            f"the demo's {len(nights)} night(s) staged no proposal: {last.reason} — the report says more: "
            f"{last.report.get('report.md', '')}; the demo folder {scratch.root} keeps everything "
            f"(`{scratch.command('status')}`)"
        )
    return _result(scratch, backend, nights, last.proposal)


def _result(scratch: Scratch, backend: str, nights: list[NightRan], proposal: str) -> DemoResult:
    last = nights[-1]
    accepted = last.outcome == "accepted"
    return DemoResult(
        dir=str(scratch.root),
        env=DemoEnv(SKILLSLEEP_HOME=str(scratch.data), HOME=str(scratch.home)),
        backend=backend,
        sessions=last.sessions,
        recurring_tasks=last.recurring_tasks,
        nights=[n.night_only() for n in nights],
        proposal=proposal,
        accepted=accepted,
        skill=last.skill.path,
        report=last.report.get("report.html", ""),
        next=DemoNext(
            diff=scratch.command("diff"),
            adopt=scratch.command("adopt" if accepted else "adopt --force"),
            rollback=scratch.command("rollback"),
            status=scratch.command("status"),
            remove=f"rm -rf {shlex.quote(str(scratch.root))}",
        ),
    )


def _requested(folder: Path | None) -> Path | None:
    """The --dir folder, when it can be used: new, or an empty folder (nothing is created here)."""
    if folder is None:
        return None
    root = folder.expanduser().absolute()
    if root.exists() and not root.is_dir():
        raise ConfigError(
            f"--dir {root} is a file; give a new or empty folder, or leave --dir out for a new temporary one"
        )
    try:
        used = root.is_dir() and any(root.iterdir())
    except OSError as exc:
        raise ConfigError(f"--dir {root} cannot be read ({exc.strerror or exc}); give another folder") from None
    if used:
        raise ConfigError(
            f"--dir {root} is not empty: the demo only uses a new or empty folder, so it never mixes "
            "with files of yours; give another folder, or leave --dir out for a new temporary one"
        )
    return root


def _packaged_model(backend: str) -> Path | None:
    """The GGUF of a packaged local model, in the user's own model cache (assembled there once);
    None for any other backend."""
    provider, model = parse_spec(backend)
    if provider != "local" or model not in WEIGHTS:
        return None
    try:
        import_xllamacpp()
        return ensure_weights(model, cache_dir())
    except BackendUnavailable as exc:
        raise BackendUnavailable(
            f"{exc} — the demo runs on the embedded local model; install it, or pass --backend "
            "with a provider configured here (`skillsleep backends`)"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"the model cache {cache_dir()} cannot be written ({exc.strerror or exc}); point "
            "SKILLSLEEP_HOME at a folder you can write to"
        ) from None


def _create(requested: Path | None) -> Scratch:
    if requested is None:
        return Scratch.at(Path(tempfile.mkdtemp(prefix="skillsleep-demo-")))
    try:
        requested.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--dir {requested} cannot be created ({exc.strerror or exc}); give another folder") from None
    return Scratch.at(requested)


def _fill(scratch: Scratch, model: Path | None) -> None:
    """The sample transcripts, the seed of the managed skill, the model link and an empty chat-log folder."""
    _copy_tree(
        resources.files("skillsleep.slash_commands") / "demo" / "claude-projects", scratch.home / ".claude" / "projects"
    )
    scratch.chats.mkdir(parents=True)
    skill = managed_path("chat", home=scratch.home, data_dir=scratch.data)
    skill.parent.mkdir(parents=True)
    skill.write_text(managed_seed(), encoding="utf-8")
    if model is not None:  # where `--backend local` looks for it under this SKILLSLEEP_HOME
        link = scratch.data / "cache" / "models" / model.name
        link.parent.mkdir(parents=True)
        link.symlink_to(model)


def _copy_tree(source: Traversable, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_dir():
            _copy_tree(item, dest / item.name)
        else:
            (dest / item.name).write_bytes(item.read_bytes())


def _night(scratch: Scratch, backend: str, on_event: EventSink, echo: Echo) -> NightRan:
    """One `skillsleep run --json` in the scratch folder's environment (its events passed on as they
    come); what its summary says (the child's stdout, kept in night-N.json of the scratch folder)."""
    number = len(list(scratch.root.glob("night-*.json"))) + 1
    out = scratch.root / f"night-{number}.json"
    command = [
        sys.executable,
        "-m",
        "skillsleep.slash_commands.cli",
        "run",
        "--backend",
        backend,
        *NIGHT_FLAGS,
        "--json",
    ]
    tail: deque[str] = deque(maxlen=5)
    with (
        out.open("wb") as stdout,
        subprocess.Popen(
            command,
            cwd=scratch.root,
            env=scratch.env(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        ) as child,
    ):
        assert child.stderr is not None
        for line in child.stderr:  # the night's progress, shown as it comes
            event = read_event(line)
            if event is not None:
                on_event(event)
                continue
            echo(line.rstrip("\n"))
            tail.append(line.strip())
    code = child.returncode
    try:
        summary = NightRan.model_validate_json(out.read_bytes())
    except ValidationError:
        said = next((t for t in reversed(tail) if t), "no message")
        error = ConfigError if code == 2 else SkillsleepError
        raise error(
            f"the demo's night failed (exit {code}): {said.removeprefix('Error: ')}; the demo folder "
            f"{scratch.root} keeps its state"
        ) from None
    return summary


def demo_text(s: DemoResult) -> str:
    """What the demo did and what to type next, for a person or an agent."""
    lines = [
        f"demo folder: {s.dir}",
        "  (its own SKILLSLEEP_HOME, HOME and chat-log folder: your own skills, settings and transcripts "
        "are not touched)",
        f"samples: {s.sessions} recorded Claude Code sessions; {s.recurring_tasks} requests recur "
        "(commit messages), each time corrected for a missing sign-off line",
    ]
    for n in s.nights:
        test = f"; test split {n.test.before:.3f} → {n.test.after:.3f}" if n.test else ""
        scores = (
            f"held-out score {n.baseline:.3f} → {n.candidate:.3f}{test}"
            if n.baseline is not None and n.candidate is not None
            else n.reason
        )
        lines.append(f"night {n.night} on {s.backend}: {n.outcome} — {scores}")
    lines.append(
        "  (the demo's gate asks for a higher score on 1 held-out task, none lower, and an edit may rest on 1 "
        "trajectory; a real night asks for 2 of each: --gate-min-wins, --min-support)"
    )
    verdict = (
        "accepted by the gate"
        if s.accepted
        else "staged, but the gate did not accept it: `adopt` refuses it unless --force"
    )
    lines += [
        f"proposal {s.proposal}: {verdict}; it changes {s.skill}, which stays as it is until you adopt it",
        "  (its lines are the model's own words: a stronger --backend writes cleaner ones)",
        f"report: {s.report}",
        "",
        "next, in the demo folder:",
    ]
    notes = {
        "diff": "what the proposal changes",
        "adopt": "put it live (the old file is backed up first)",
        "rollback": "undo the adopt",
        "remove": "delete the demo folder when done",
    }
    commands = {k: str(getattr(s.next, k)) for k in notes}
    width = max(map(len, commands.values()))
    lines += [f"  {commands[k]:<{width}}  # {note}" for k, note in notes.items()]
    return "\n".join(lines)
