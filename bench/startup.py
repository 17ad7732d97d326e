"""Start-up time of the command line: each command in a fresh process, against `python -c pass`.

    .venv/bin/python bench/startup.py [--runs 20]

Runs `skillsleep --help`, `skillsleep status --help` and `skillsleep config --json` (in a scratch
SKILLSLEEP_HOME) `--runs` times each, interleaved with the baseline `python -c pass` from the same
interpreter, so all four share the machine's load. Reports per command the median wall time and its
spread (the interquartile range), and the median over the baseline. Stderr gets a human summary;
the last line on stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# the installed command, as a user runs it (its console script beside this interpreter)
SKILLSLEEP = [str(Path(sys.executable).with_name("skillsleep"))]
COMMANDS = {
    "baseline": [sys.executable, "-c", "pass"],
    "help": [*SKILLSLEEP, "--help"],
    "status_help": [*SKILLSLEEP, "status", "--help"],
    "config_json": [*SKILLSLEEP, "config", "--json"],
}


def _once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _summary(times: list[float]) -> dict[str, float]:
    quartiles = statistics.quantiles(times, n=4)
    return {"median_s": round(statistics.median(times), 4), "iqr_s": round(quartiles[2] - quartiles[0], 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "SKILLSLEEP_HOME": str(Path(home) / "state")}
        times: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.runs):
            for name, argv in COMMANDS.items():
                times[name].append(_once(argv, env))
    result: dict[str, object] = {"runs": args.runs}
    baseline = statistics.median(times["baseline"])
    for name, measured in times.items():
        summary = _summary(measured)
        result[name] = summary | {"over_baseline_s": round(summary["median_s"] - baseline, 4)}
        print(f"{name:12} median {summary['median_s']:.3f} s  iqr {summary['iqr_s']:.3f} s", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
