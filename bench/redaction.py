"""Redaction's precision, recall and speed, against the redaction of another commit in the same run.

    .venv/bin/python bench/redaction.py [--baseline REF] [--repeats 7]

Precision and recall on the scanners' own test data (tests/fixtures/secrets/scanner_*.py, sources in
PROVENANCE.md beside them):

    benign_altered_ratio        lines of the scanners' false-positive samples that redaction changes
                                (target <= 0.02)
    secrets_caught_ratio        secrets announced by a name or header that no piece of survives
                                (target >= 0.99)
    bare_prefixed_caught_ratio  provider-prefixed tokens with no name next to them, caught (>= 0.95)

Speed: every JSON line of the real transcripts in ../shared/data/transcripts/, parsed beforehand,
through `Redactor.value` as a harvest redacts them; `mb_per_s` is their size over the best of
--repeats passes. With --baseline (default: the commit this branch started from, e9deacb), the
core/ of that commit is loaded beside this one under another package name and timed in the same
process, passes interleaved (which goes first alternates), so load on the machine hits both alike: `baseline_mb_per_s`,
`speed_ratio` (this over the baseline; below 1 is slower) and the baseline's three ratios.
Stderr gets a summary; the last line on stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "transcripts"
sys.path.insert(0, str(ROOT / "tests"))
from secret_corpus import FIXTURES, load  # noqa: E402  (tests/ is not a package)

MB = 1024 * 1024


def _copy_of_core(package: str, files: dict[str, bytes], into: Path) -> Any:
    """The Redactor class of a copy of core/ (`files`: path → bytes) imported as `<package>.core`."""
    for name, text in files.items():
        path = into / package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.replace(b"skillsleep.core", f"{package}.core".encode()))
    (into / package / "__init__.py").write_text("")
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    return importlib.import_module(f"{package}.core.redact").Redactor


def baseline_redactor(ref: str, into: Path) -> Any:
    """The Redactor class of `ref`'s core/, imported as `_baseline.core` (its imports rewritten)."""
    names = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", ref, "core"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    show = ["git", "-C", str(ROOT), "show"]
    files = {name: subprocess.run([*show, f"{ref}:{name}"], check=True, capture_output=True).stdout for name in names}
    return _copy_of_core("_baseline", files, into)


def this_redactor(into: Path) -> Any:
    """The working tree's Redactor, copied and imported the way the baseline is (as `_this.core`):
    the two copies then load alike, so neither is timed with an advantage of its own."""
    files = {str(p.relative_to(ROOT)): p.read_bytes() for p in (ROOT / "core").rglob("*") if p.is_file()}
    return _copy_of_core("_this", files, into)


def quality(redactor: Any) -> dict[str, float]:
    """The three ratios of the scanner corpus, for a Redactor class."""
    f, b, t = load("field"), load("scanner_benign"), load("scanner_tokens")
    altered = sum(b.altered_lines(s, redactor().text(s)) for s in b.SAMPLES)

    def caught(rows: list[tuple[str, str, str]]) -> float:
        return sum(f.caught(secret, text, redactor().text(text)) for _, secret, text in rows) / len(rows)

    return {
        "benign_altered_ratio": round(altered / b.LINES, 4),
        "secrets_caught_ratio": round(caught(t.ANNOUNCED), 4),
        "bare_prefixed_caught_ratio": round(caught(t.BARE), 4),
    }


def transcript_values() -> tuple[list[Any], int]:
    """Every JSON line of the real transcripts, parsed, and their size in bytes."""
    values, size = [], 0
    for path in sorted(DATA.rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                values.append(json.loads(line))
            except ValueError:
                continue
            size += len(line)
    return values, size


def best_pass(redactor: Any, values: list[Any]) -> float:
    r = redactor()
    t0 = time.process_time()
    for v in values:
        r.value(v)
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="e9deacb", help="git ref to compare with ('' for none)")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    sys.path.insert(0, str(FIXTURES))
    from skillsleep.core.privacy.redact import Redactor

    values, size = transcript_values()
    if not values:
        raise SystemExit(json.dumps({"error": f"no transcripts under {DATA}"}))
    out: dict[str, Any] = quality(Redactor)
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_redactor(args.baseline, Path(tmp)) if args.baseline else None
        times: dict[str, list[float]] = {"this": [], "baseline": []}
        sides = [("this", this_redactor(Path(tmp)) if base is not None else Redactor)]
        sides += [("baseline", base)] if base is not None else []
        for i in range(args.repeats):  # interleaved, the first of each round alternating: the same load on both
            for side, cls in sides[:: 1 if i % 2 == 0 else -1]:
                times[side].append(best_pass(cls, values))
        out["mb"] = round(size / MB, 2)
        out["mb_per_s"] = round(size / MB / min(times["this"]), 2)
        if base is not None:
            out["baseline"] = args.baseline
            out["baseline_mb_per_s"] = round(size / MB / min(times["baseline"]), 2)
            out["speed_ratio"] = round(min(times["baseline"]) / min(times["this"]), 3)
            out["baseline_quality"] = quality(base)
    print(
        f"benign lines altered {out['benign_altered_ratio']:.1%}, announced secrets caught "
        f"{out['secrets_caught_ratio']:.1%}, bare prefixed tokens caught {out['bare_prefixed_caught_ratio']:.1%}; "
        f"{out['mb']} MB of transcripts at {out['mb_per_s']} MB/s (CPU time, best of {args.repeats})"
        + (f", baseline {out['baseline_mb_per_s']} MB/s, ratio {out['speed_ratio']}" if base is not None else ""),
        file=sys.stderr,
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
