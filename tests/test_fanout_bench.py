"""bench/night.py --two-skills: one night fanning out to two user skills makes exactly the ideal
calls (each skill's mining, relevance, dreams and training, as the bench counts one skill's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "night.py"


def test_the_two_skill_night_makes_the_ideal_calls(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--two-skills", "--keep", str(tmp_path / "bench")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])["two_skills"]
    assert sorted(result["skills"]) == ["release-notes", "review-pr"]
    assert all(s["outcome"] == "accepted" and s["model_calls"] == s["ideal_calls"] for s in result["skills"].values())
    assert result["model_calls"] == result["ideal_calls"] == sum(s["ideal_calls"] for s in result["skills"].values())
    assert all(s["ideal_by_role"]["relevance"] == 1 for s in result["skills"].values())
    assert result["not_trained"] == {"skillsleep-learned": "not enough evidence (0 sessions; needs 6)"}
