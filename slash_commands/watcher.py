"""What `skillsleep watch` does (watch_cmd.py is its click command): harvest a session's new bytes
shortly after its transcript changes.

A watchdog observer watches the transcript roots (the folders `harvester.discover()` reads
from, plus the direct-chat log folders: `--chat-dir`, `SKILLSLEEP_CHAT_DIRS` or `[harvest]
chat_dirs`, layered as for `harvest`) and notes which harness had a `*.jsonl`, `*.sqlite` or
`*.sqlite-wal` file created, modified or moved in. Events inside skillsleep's own data
directory are ignored (its chat logs are never harvested). After the last event of a burst has
been quiet for `debounce_s` seconds, each harness that changed is harvested once through
`harvester.run_harvest()` — the same code path as `skillsleep harvest` (discover, cursors,
redaction, store). If an agent writes without pause, a harvest still runs at least every
`10 × debounce_s` seconds. An agent's transcript folder that does not exist when the watch
starts (the agent installed later) is looked for every half second and watched once it appears,
its harness harvested then (what was written before it was watched included).

Safe to run while a training cycle runs: the state database is SQLite in WAL mode, `Store`
serialises its own writes, and each harvest opens the store, writes its short per-file
transactions and closes it again — no transaction is held between harvests. Files that
changed before the watcher started are read by the next harvest of their harness (or run
`skillsleep harvest` once first).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from skillsleep.core.night.lock import Running
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record
from skillsleep.harnesses import registry
from skillsleep.slash_commands.harvester import HarvestResult, chat_folders, left_out_lines, run_harvest
from skillsleep.slash_commands.wiring import EffectiveSettings, data_dir


class Harvested(Record):
    """Which harness one harvest of `watch` read, and when (ISO UTC, to the second)."""

    harness: str
    at: str


class WatchHarvest(HarvestResult, Harvested):
    """One harvest of `watch` (`--json` prints one a line): the harness and when, then what it found
    (the fields of Harvested come first: pydantic orders the fields of the later base first)."""

    @classmethod
    def of(cls, harness: str, at: str, result: HarvestResult) -> WatchHarvest:
        return cls.model_validate({"harness": harness, "at": at, **result.model_dump()})


class WatchFailure(Harvested):
    """A harvest of `watch` that failed (the watch goes on; the next change retries it)."""

    error: str  # "TypeName: message"


Report = WatchHarvest | WatchFailure
WATCHED_SUFFIXES = (".jsonl", ".sqlite", ".sqlite-wal")
MAX_DELAY_FACTOR = 10  # a harvest runs at least every MAX_DELAY_FACTOR × debounce during nonstop writes


def _agent_roots() -> list[tuple[str, Path]]:
    """(harness, folder) for every transcript folder of the agents' env vars, existing or not."""
    return [(agent.name, root) for agent in registry.agents() for root in agent.watch_roots(os.environ)]


def watch_roots() -> list[tuple[str, Path]]:
    """(harness, folder) for every transcript folder that exists, from the agents' env vars."""
    return [(harness, path) for harness, path in _agent_roots() if path.is_dir()]


def absent_roots() -> list[tuple[str, Path]]:
    """The agents' transcript folders that do not exist (yet): `Watcher(later=...)` watches them
    once they appear."""
    return [(harness, path) for harness, path in _agent_roots() if not path.is_dir()]


def _in_order(harnesses: set[str]) -> list[str]:
    """The harnesses of `harnesses` in the order harvests run in: the agents, then chat."""
    return [h for h in (*registry.agent_names(), "chat") if h in harnesses]


def relevant(path: str) -> bool:
    """A transcript file or event database (OpenClaw's archived `*.jsonl.reset.*` included)."""
    name = os.path.basename(path)
    return name.endswith(WATCHED_SUFFIXES) or ".jsonl.reset." in name or ".jsonl.deleted." in name


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("created", "modified", "moved"):
            return
        path = event.dest_path if event.event_type == "moved" else event.src_path
        path = os.fsdecode(path)
        if relevant(path):
            self.watcher.note(path)


class Watcher:
    """Watches transcript roots and harvests each changed harness once per debounced burst.

    `roots` are (harness, folder) pairs; the folders of "chat" roots are the chat-log folders
    its harvest reads. Events on paths inside an `exclude` folder are ignored. `later` are roots
    that do not exist yet; `look_for_new_roots()` watches those that have appeared.

    `start()` starts the observer and a worker thread that harvests when a burst has been quiet
    for `debounce_s`; `process_pending()` harvests whatever is pending right away (the worker
    calls it; tests may too); `stop()` stops both, harvesting what is still pending.
    `on_report` gets one Report per harvest: a WatchHarvest, or a WatchFailure when a harvest
    failed (the watcher keeps going).
    """

    def __init__(
        self,
        roots: Sequence[tuple[str, Path]],
        debounce_s: float = 2.0,
        on_report: Callable[[Report], None] | None = None,
        redact_patterns: tuple[str, ...] = (),
        exclude: Sequence[Path] = (),
        later: Sequence[tuple[str, Path]] = (),
    ) -> None:
        self.roots = [(harness, Path(path).resolve()) for harness, path in roots]
        self.later = [(harness, Path(path)) for harness, path in later]
        self.chat_dirs = [root for harness, root in self.roots if harness == "chat"]
        self.exclude = [Path(p).resolve() for p in exclude]
        self.debounce_s = debounce_s
        self.on_report = on_report or (lambda _: None)
        self.redact_patterns = redact_patterns
        self._pending: set[str] = set()
        self._first = 0.0  # monotonic time of the first / last event of the pending burst
        self._last = 0.0
        self._cond = threading.Condition()
        self._stopping = False
        self._observer: Any = None
        self._worker: threading.Thread | None = None
        self._harvest_lock = threading.Lock()

    def harnesses_of(self, path: str) -> set[str]:
        """Every harness whose root holds `path` (roots may nest: a chat folder above ~/.claude)."""
        p = Path(path)
        if any(p.is_relative_to(x) for x in self.exclude):
            return set()
        return {harness for harness, root in self.roots if p.is_relative_to(root)}

    def note(self, path: str) -> None:
        """An event on `path` (called from the observer thread)."""
        harnesses = self.harnesses_of(path)
        if harnesses:
            self._mark(harnesses)

    def _mark(self, harnesses: set[str]) -> None:
        """`harnesses` changed: harvest them after the burst."""
        with self._cond:
            now = time.monotonic()
            if not self._pending:
                self._first = now
            self._pending |= harnesses
            self._last = now
            self._cond.notify_all()

    def start(self) -> Watcher:
        observer = Observer()
        handler = _Handler(self)
        for path in sorted({str(root) for _, root in self.roots}):
            observer.schedule(handler, path, recursive=True)
        observer.start()
        self._observer = observer
        self._worker = threading.Thread(target=self._run, name="skillsleep-watch", daemon=True)
        self._worker.start()
        return self

    def look_for_new_roots(self) -> list[tuple[str, Path]]:
        """Watch each of the `later` roots that exists now (returned), and harvest its harness after
        the debounce: the files written before it was watched are read then."""
        found = [(harness, path) for harness, path in self.later if path.is_dir()]
        if not found:
            return []
        self.later = [root for root in self.later if root not in found]
        for harness, path in found:
            root = path.resolve()
            self.roots = [*self.roots, (harness, root)]  # a new list: the observer thread reads it
            if self._observer is not None:
                self._observer.schedule(_Handler(self), str(root), recursive=True)
        self._mark({harness for harness, _ in found})
        return found

    def _due(self) -> float | None:
        """Seconds until the pending burst should be harvested (≤ 0: now); None if nothing is pending."""
        if not self._pending:
            return None
        now = time.monotonic()
        return min(self._last + self.debounce_s, self._first + MAX_DELAY_FACTOR * self.debounce_s) - now

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    due = self._due()
                    if due is not None and due <= 0:
                        break
                    self._cond.wait(timeout=due)
                stopping = self._stopping
            self.process_pending()
            if stopping:
                return

    def process_pending(self) -> list[Report]:
        """Harvest every harness with pending events now; returns (and reports) one Report each."""
        with self._harvest_lock:
            with self._cond:
                names = _in_order(set(self._pending))
                self._pending.clear()
            reports: list[Report] = []
            for harness in names:
                at = datetime.now(UTC).isoformat(timespec="seconds")
                try:
                    report: Report = WatchHarvest.of(
                        harness, at, run_harvest(harness, None, self.redact_patterns, self.chat_dirs)
                    )
                except Exception as exc:  # a failed harvest is reported; the next change retries it
                    report = WatchFailure(harness=harness, at=at, error=f"{type(exc).__name__}: {exc}")
                reports.append(report)
                self.on_report(report)
            return reports

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; what is still pending is harvested first."""
        if self._observer is not None:
            self._observer.stop()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._worker is not None:
            self._worker.join(timeout)
            self._worker = None
        if self._observer is not None:
            self._observer.join(timeout)
            self._observer = None


# what finding the files counts in every harvest (core.harvest.discovery), not what new bytes held
_FOUND_SKIPS = ("folder_named_like_a_transcript", "symlink_loop", "not_a_regular_file", "dangling_symlink")


class Told:
    """What `watch` has said, per harness, of what its harvests keep leaving out: a file or folder
    it cannot read, an entry that is no transcript, a last line not finished. Each harvest finds
    them again; `news(report)` is the report with only what is new or changed since the last
    report of that harness, so each is named once, and again once it changes (or comes back after
    being fixed). Lines the new bytes held and skipped are new each time and always kept."""

    def __init__(self) -> None:
        self._said: dict[str, tuple[set[str], dict[str, int], tuple[int, int]]] = {}

    def news(self, r: Report) -> Report:
        if isinstance(r, WatchFailure):
            return r
        lasting = {k: n for k, n in r.skipped.items() if k in _FOUND_SKIPS or k.startswith("unreadable_")}
        now = (set(r.unreadable), lasting, (r.waiting_files, r.waiting_bytes))
        before = self._said.get(r.harness, (set(), {}, (0, 0)))
        self._said[r.harness] = now
        skipped = Counter({k: n for k, n in r.skipped.items() if k not in lasting or before[1].get(k) != n})
        update: dict[str, object] = {"unreadable": [u for u in r.unreadable if u not in before[0]], "skipped": skipped}
        if now[2] == before[2]:
            update |= {"waiting_files": 0, "waiting_bytes": 0}
        return r.model_copy(update=update)


def report_line(r: Report) -> str:
    """One human line for a harvest report, then one indented line per thing it left out and why."""
    if isinstance(r, WatchFailure):
        return f"{r.at} {r.harness}: harvest failed: {r.error}"
    line = (
        f"{r.at} {r.harness}: sessions {r.sessions.get(r.harness, 0)}, turns {r.turns}, "
        f"bytes read {r.bytes_read}, skipped {sum(r.skipped.values())}"
    )
    return "\n".join([line, *(f"  {x}" for x in left_out_lines(r))])


def catch_up(
    roots: Sequence[tuple[str, Path]], redact_patterns: tuple[str, ...], on_report: Callable[[Report], None]
) -> None:
    """Harvest what changed before the watch began (reported only when there was something new, or
    something it had to leave out: what cannot be read is said once at the start, not hidden)."""
    chat_dirs = [Path(root) for name, root in roots if name == "chat"]
    for harness in _in_order({name for name, _ in roots}):
        at = datetime.now(UTC).isoformat(timespec="seconds")
        report = WatchHarvest.of(harness, at, run_harvest(harness, None, redact_patterns, chat_dirs))
        if report.bytes_read or any(report.sessions.values()) or report.files_reset or left_out_lines(report):
            on_report(report)


def chat_roots(settings: EffectiveSettings) -> list[tuple[str, Path]]:
    """("chat", folder) for each effective chat-log folder outside skillsleep's data directory
    (one that cannot be read is an error naming where it was set: `harvester.chat_folders()`)."""
    own = data_dir().resolve()
    return [("chat", folder) for folder in chat_folders(settings) if not folder.resolve().is_relative_to(own)]


@contextmanager
def ctrl_c_stops() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt while the watch runs, as "Ctrl-C to stop" says, even
    when it was started with SIGINT ignored (a background job of a script, a test runner's worker:
    the ignored state is inherited, and Python then installs no handler); the handler before is
    put back after. Outside the main thread nothing changes (only it may set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def run_watch(
    debounce_s: float,
    duration_s: float | None,
    settings: EffectiveSettings,
    on_report: Callable[[Report], None],
    on_start: Callable[[list[tuple[str, Path]]], None] | None = None,
) -> None:
    """Watch until Ctrl-C or `duration_s` seconds; harvests are reported through `on_report`.
    `settings` are the layered harvest settings (`wiring.effective_settings()`)."""
    roots = watch_roots() + chat_roots(settings)
    if not roots:
        raise ConfigError(
            "no transcript folders to watch: none of $CLAUDE_CONFIG_DIR/projects (default ~/.claude/projects), "
            "$CODEX_HOME/sessions or $CODEX_HOME/archived_sessions (default ~/.codex), "
            "$OPENCLAW_STATE_DIR/agents (default ~/.openclaw/agents) exists and no chat-log folder is set; "
            "set those variables if the agents keep their state elsewhere, or pass --chat-dir DIR"
        )
    redact_patterns = tuple(settings.harvest.redact_patterns.value)
    watcher = Watcher(roots, debounce_s, on_report, redact_patterns, exclude=[data_dir()], later=absent_roots())
    with ctrl_c_stops(), Running(data_dir(), "watch"):  # `doctor --repair` names it rather than rebuild state.db
        watcher.start()
        catch_up(roots, redact_patterns, on_report)
        try:  # from the "watching" line on, Ctrl-C is a clean stop (a test sends it as soon as it reads that line)
            if on_start:
                on_start(roots)
            deadline = None if duration_s is None else time.monotonic() + duration_s
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic())))
                appeared = watcher.look_for_new_roots()  # an agent installed while watching
                if appeared and on_start:
                    on_start(appeared)
        except KeyboardInterrupt:
            pass
        finally:
            watcher.stop()
