"""Incremental transcript harvest on a large generated corpus, against a read-and-json.loads baseline.

    .venv/bin/python bench/harvest.py [--mb 500] [--keep DIR] [--repeats 3] [--workers N]

Builds a corpus of about `--mb` MB in a temp dir by replicating the real Claude Code and Codex
transcripts in ../shared/data/transcripts/ with fresh session ids (byte replacement of each
file's old id string by a new uuid4), laid out as `~/.claude/projects/<proj>/<uuid>.jsonl` and
`~/.codex/sessions/2026/11/29/rollout-...-<uuid>.jsonl`. Then, in the same process:

    baseline_mb_per_s       read every file and json.loads each line, in one process (median
                            over --repeats)
    mb_per_s, ratio         a full first harvest (parse, redact, store) of the same files as
                            `skillsleep harvest` runs it: `workers` reader processes (--workers,
                            default SKILLSLEEP_HARVEST_WORKERS or one per core, at most 4), each
                            repeat into a fresh state database (median over --repeats); ratio is
                            mb_per_s over baseline_mb_per_s
    serial_mb_per_s         the same harvest read in this one process (serial_ratio): the cost per
                            core, which the following figures break down
    cpu_ratio               baseline CPU seconds over the one-process harvest's (time.process_time),
                            which other load on the machine sways far less than wall time;
                            workers_cpu_ratio the same with the workers' CPU seconds added
    redact_mb_per_s         the corpus size over the time the one-process harvest spent inside
                            Redactor.session; redact_ratio is it over baseline_mb_per_s, and
                            ratio_without_redaction what serial_ratio is with that time taken out
    second_pass_bytes_read  a second harvest with nothing changed (target 0), and its wall time
    append_bytes_read       a harvest after appending one complete line to 10 files (target:
                            exactly the appended bytes)

Both rates are page-cache warm: the corpus has just been written and is read once more before
any timing, so neither side pays for the disk. Stderr gets a human summary; the last line on
stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from skillsleep.core.harvest.harvester import Harvester, Source
from skillsleep.core.models.store import Store
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.privacy.scan import ENGINE
from skillsleep.core.shared.session import Session
from skillsleep.slash_commands.harvester import DB_READERS, PARSERS, harvest_workers

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts"  # ../shared beside the repo
MB = 1024 * 1024


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _first_id(data: bytes, harness: str) -> str | None:
    """The session id of a transcript: Claude's first `sessionId`, Codex's first session_meta id."""
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if harness == "claude-code" and isinstance(rec.get("sessionId"), str) and rec["sessionId"]:
            return rec["sessionId"]
        if harness == "codex" and rec.get("type") == "session_meta":
            pid = (rec.get("payload") or {}).get("id")
            return pid if isinstance(pid, str) and pid else None
    return None


def templates() -> list[tuple[str, bytes, str]]:
    """(harness, bytes, old session id) of every real transcript that has an id to replace."""
    globs = {
        "claude-code": [
            "claude_code/*.jsonl",
            "codemie/claude/*.jsonl",
            "codemie/claude/*.jsonl.gz",
            "generated/claude/projects/**/*.jsonl",
        ],
        "codex": ["codex/*.jsonl", "codemie/codex/*.jsonl", "generated/codex/sessions/**/*.jsonl"],
    }
    out = []
    for harness, patterns in globs.items():
        for pattern in patterns:
            for path in sorted(DATA.glob(pattern)):
                data = _read(path)
                sid = _first_id(data, harness)
                if sid and len(sid) >= 8 and data.strip():
                    out.append((harness, data if data.endswith(b"\n") else data + b"\n", sid))
    return out


def build_corpus(home: Path, target_bytes: int) -> list[Source]:
    """Copies of the templates with fresh ids until the corpus reaches `target_bytes`."""
    tmpl = templates()
    if not tmpl:
        raise SystemExit(json.dumps({"error": f"no transcripts with a session id under {DATA}"}))
    random.Random(0).shuffle(tmpl)  # mix harnesses, so a small corpus has both
    claude_dir = home / ".claude" / "projects" / "-home-bench-proj"
    codex_dir = home / ".codex" / "sessions" / "2026" / "11" / "29"
    claude_dir.mkdir(parents=True)
    codex_dir.mkdir(parents=True)
    sources: list[Source] = []
    total, i = 0, 0
    while total < target_bytes:
        harness, data, old = tmpl[i % len(tmpl)]
        new = str(uuid.uuid4())
        body = data.replace(old.encode(), new.encode())
        if harness == "claude-code":
            path = claude_dir / f"{new}.jsonl"
        else:
            path = codex_dir / f"rollout-2026-11-29T09-{i // 60 % 60:02d}-{i % 60:02d}-{new}.jsonl"
        path.write_bytes(body)
        sources.append(Source(harness=harness, path=path))
        total += len(body)
        i += 1
    return sources


class TimedRedactor(Redactor):
    """The real redactor, adding up the seconds spent redacting sessions."""

    spent = 0.0

    def session(self, s: Session) -> Session:
        t0 = time.perf_counter()
        try:
            return super().session(s)
        finally:
            self.spent += time.perf_counter() - t0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def first_pass(
    work: Path, sources: list[Source], name: str, workers: int = 1
) -> tuple[float, float, float, Harvester, Store, Any]:
    """(seconds, seconds redacting, CPU seconds) of a full harvest into a fresh state database, by
    `workers` processes (1: this one). The CPU seconds count the workers' too (they have ended when
    the harvest returns); the seconds redacting only this process's (0 with workers)."""
    store = Store(work / f"state-{name}.db")
    redactor = TimedRedactor()
    harvester = Harvester(store, PARSERS, redactor, db_readers=DB_READERS, workers=workers)
    t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
    first = harvester.harvest(sources)
    cpu = time.process_time() - c0 + _children_cpu() - k0
    return time.perf_counter() - t0, redactor.spent, cpu, harvester, store, first


def baseline(sources: list[Source]) -> tuple[float, float]:
    """(seconds, CPU seconds) to read every file and json.loads each line (no sessions, redaction
    or store)."""
    start, cpu = time.perf_counter(), time.process_time()
    for s in sources:
        with s.path.open("rb") as fh:
            for line in fh.read().splitlines():
                if line.strip():
                    try:
                        json.loads(line)
                    except ValueError:
                        pass
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=500.0, help="corpus size in MB (default 500)")
    parser.add_argument("--keep", type=Path, default=None, help="build the corpus in DIR and keep it")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the baseline and the first pass (median)")
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes of the harvest (default: as `skillsleep harvest`)"
    )
    args = parser.parse_args()
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers takes 1 or more (1: read in this process); got {args.workers}")
    workers = args.workers or harvest_workers()
    if not DATA.is_dir():
        print(json.dumps({"error": f"{DATA} is absent: no real transcripts to replicate"}))
        return

    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="harvest-bench-", dir=args.keep))
    else:
        work = Path(tempfile.mkdtemp(prefix="harvest-bench-"))
    try:
        t0 = time.perf_counter()
        sources = build_corpus(work / "home", int(args.mb * MB))
        build_s = time.perf_counter() - t0
        corpus_bytes = sum(s.path.stat().st_size for s in sources)
        corpus_mb = corpus_bytes / MB
        print(f"corpus: {len(sources)} files, {corpus_mb:.1f} MB in {build_s:.1f}s ({work})", file=sys.stderr)

        for s in sources:  # warm the page cache for both sides
            s.path.read_bytes()
        base_runs = [baseline(sources) for _ in range(args.repeats)]
        base_times = [wall for wall, _ in base_runs]
        base_s = statistics.median(base_times)
        base_cpu_s = statistics.median(cpu for _, cpu in base_runs)

        serial = [first_pass(work, sources, f"serial-{i}") for i in range(args.repeats)]
        for *_, other, _ in serial if workers > 1 else serial[:-1]:  # with 1 worker the last is harvested again
            other.close()
        serial_s = statistics.median(r[0] for r in serial)
        redact_s = statistics.median(r[1] for r in serial)
        serial_cpu_s = statistics.median(r[2] for r in serial)
        if workers > 1:
            runs = [first_pass(work, sources, str(i), workers) for i in range(args.repeats)]
            for *_, other, _ in runs[:-1]:
                other.close()
        else:
            runs = serial
        first_s = statistics.median(r[0] for r in runs)
        first_cpu_s = statistics.median(r[2] for r in runs)
        *_, harvester, store, first = runs[-1]  # its store is open: the second and append passes use it
        t0 = time.perf_counter()
        second = harvester.harvest(sources)
        second_s = time.perf_counter() - t0

        appended = 0
        for s in sources[:10]:
            last = s.path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1] + b"\n"
            with s.path.open("ab") as fh:
                fh.write(last)
            appended += len(last)
        t0 = time.perf_counter()
        third = harvester.harvest(sources)
        append_s = time.perf_counter() - t0
        store.close()
        with sqlite3.connect(store.path) as db:
            stored = db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]

        mb_per_s = corpus_mb / first_s
        serial_mb_per_s = corpus_mb / serial_s
        base_mb_per_s = corpus_mb / base_s
        redact_mb_per_s = corpus_mb / redact_s if redact_s else float("inf")
        out = {
            "mb_per_s": round(mb_per_s, 2),
            "baseline_mb_per_s": round(base_mb_per_s, 2),
            "ratio": round(mb_per_s / base_mb_per_s, 4),
            "workers": workers,
            "serial_mb_per_s": round(serial_mb_per_s, 2),
            "serial_ratio": round(serial_mb_per_s / base_mb_per_s, 4),
            "cpu_ratio": round(base_cpu_s / serial_cpu_s, 4),
            "workers_cpu_ratio": round(base_cpu_s / first_cpu_s, 4),
            "redact_mb_per_s": round(redact_mb_per_s, 2),
            "redact_ratio": round(redact_mb_per_s / base_mb_per_s, 4),
            "redact_share": round(redact_s / serial_s, 4),
            "ratio_without_redaction": round(corpus_mb / (serial_s - redact_s) / base_mb_per_s, 4),
            "redact_engine": ENGINE,
            "corpus_mb": round(corpus_mb, 1),
            "files": len(sources),
            "claude_files": sum(s.harness == "claude-code" for s in sources),
            "codex_files": sum(s.harness == "codex" for s in sources),
            "sessions_stored": stored,
            "first_pass_bytes_read": first.bytes_read,
            "first_pass_s": round(first_s, 3),
            "first_pass_s_all": [round(r[0], 3) for r in runs],
            "first_pass_cpu_s": round(first_cpu_s, 3),
            "serial_first_pass_s": round(serial_s, 3),
            "serial_first_pass_s_all": [round(r[0], 3) for r in serial],
            "serial_first_pass_cpu_s": round(serial_cpu_s, 3),
            "redact_s": round(redact_s, 3),
            "first_pass_skipped": sum(first.skipped.values()),
            "baseline_s": round(base_s, 3),
            "baseline_s_all": [round(t, 3) for t in base_times],
            "baseline_cpu_s": round(base_cpu_s, 3),
            "second_pass_bytes_read": second.bytes_read,
            "second_pass_files_read": second.files_read,
            "second_pass_s": round(second_s, 4),
            "append_bytes_written": appended,
            "append_bytes_read": third.bytes_read,
            "append_files_read": third.files_read,
            "append_s": round(append_s, 4),
            "build_s": round(build_s, 1),
            "cache": "warm (corpus read once before timing; baseline timed before the harvest)",
        }
        print(
            f"harvest {mb_per_s:.2f} MB/s with {workers} worker(s) vs read+json.loads {base_mb_per_s:.2f} MB/s "
            f"(ratio {out['ratio']}); in one process {serial_mb_per_s:.2f} MB/s (ratio {out['serial_ratio']}, "
            f"in CPU time {out['cpu_ratio']}); redaction alone {redact_mb_per_s:.1f} MB/s ({out['redact_share']:.0%} of the "
            f"harvest, ratio {out['redact_ratio']}); second pass read {second.bytes_read} B in {second_s:.3f}s; "
            f"append read {third.bytes_read}/{appended} B",
            file=sys.stderr,
        )
        print(json.dumps(out))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
