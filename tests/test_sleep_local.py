"""`skillsleep run` — one whole night — against the embedded local model (Qwen2.5-Coder-0.5B).

Every role (mine, judges, target, reflection, epoch boundary) is the real 0.5B model through
`--backend local`, with tiny settings: 3 short recurring tasks asked 3 times each, one step, no
dreams, one sample per task. What the model writes is not asserted (a 0.5B optimizer may
propose nothing usable); what the night must do whatever it writes is: run to its end, mine
exactly the three tasks (the lexical pass makes three groups, and since they share no words the
optimizer is not asked to merge any of them), write its report, spend calls in the mine (the
judges) and target roles, leave the live skill alone, and stage a diff that applies to base.md.
About 2–3 minutes on 2 cores (more when another model shares the CPU).

Also (fast, no model): a local generation that outlives its attempt's timeout is awaited by the
retry, not started again behind it — under CPU contention a night used to stop with "failed 4
times; no answer within 120 s" after four back-to-back generations of the same request.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from sleep_kit import invoke, night_env, write_chat_logs

from skillsleep.core.models.backends.base import BackendSettings, RetryPolicy
from skillsleep.core.models.backends.local import LocalBackend
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.shared.records import CompletionRequest, Message
from skillsleep.harnesses.skills import managed_seed

# Three requests that share no words: mining asks no paraphrase merge (the 0.5B model fused most
# triples it was shown, e.g. "Reply with the capital city of France" + "Spell the word banana
# backwards", before only plausible pairs were asked about).
TASKS = [
    "Give me the plural of mouse",
    "Multiply 6 by 7",
    "Reverse the string abc",
]
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_unified_diff(base: str, diff: str) -> str:
    """`diff` (difflib's unified format) applied to `base`; AssertionError where a hunk's context
    or removed lines do not match `base`."""
    old = base.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1  # the ---/+++ header
    while i < len(lines):
        m = HUNK.match(lines[i])
        assert m, f"not a hunk header: {lines[i]!r}"
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        assert start >= pos, "hunks out of order"
        out += old[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, text = lines[i][:1], lines[i][1:]
            if tag in (" ", "-"):
                assert pos < len(old) and old[pos] == text, f"hunk does not match base.md at line {pos + 1}: {text!r}"
                pos += 1
                if tag == " ":
                    out.append(text)
            elif tag == "+":
                out.append(text)
            i += 1
    return "".join(out + old[pos:])


async def test_a_retry_after_a_timeout_waits_for_the_running_local_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = LocalBackend(
        BackendSettings(model="qwen2.5-coder-0.5b", retry=RetryPolicy(attempts=3, base_delay_s=0, timeout_s=0.3))
    )
    calls: list[dict[str, object]] = []

    def generate(body: dict[str, object]) -> dict[str, object]:  # the model: 0.5 s, one at a time
        with backend._lock:
            calls.append(body)
            time.sleep(0.5)
            return {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": {}}

    monkeypatch.setattr(backend, "_call", generate)
    request = CompletionRequest(model="qwen2.5-coder-0.5b", messages=[Message(role="user", content="hello")])
    completion = await backend.complete(request)
    assert completion.text == "hi"
    assert len(calls) == 1  # the second attempt awaited the first generation
    assert not backend._running
    assert (await backend.complete(request)).text == "hi" and len(calls) == 2  # a new request generates again


@pytest.mark.slow
def test_one_night_on_the_local_model(tmp_path: Path, local_model_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = night_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    # `--backend local` finds the packaged model in SKILLSLEEP_HOME/cache/models: link the copy the
    # fixture assembled instead of assembling 491 MB again
    models = data / "cache" / "models"
    models.mkdir(parents=True)
    (models / local_model_path.name).symlink_to(local_model_path)
    write_chat_logs(tmp_path / "chats", TASKS, times=3)
    live = data / "skills" / "skillsleep-learned" / "SKILL.md"  # the chat harness's managed skill
    live.parent.mkdir(parents=True)
    live.write_bytes(managed_seed().encode())
    before = live.read_bytes()

    start = time.perf_counter()
    code, out, err = invoke(
        "run",
        "--backend",
        "local",
        "--since",
        "3650d",
        "--steps",
        "1",
        "--dreams",
        "0",
        "--max-tasks",
        "3",
        "--rollouts-k",
        "1",
        "--gate-min-wins",  # 3 tasks hold out 1: the gate may judge on it (the default needs 2 wins)
        "1",
        "--json",
    )
    wall = time.perf_counter() - start
    print(f"\none night on the local model: {wall:.1f} s")
    assert code == 0, err[-3000:]
    summary = json.loads(out)
    context = json.dumps({k: summary[k] for k in ("outcome", "reason", "problems", "calls_by_role")}, indent=1)

    # the night ran to its end
    record = Nights(data).list()[-1]
    assert record.night == summary["night"] == 1
    assert record.status == "finished", context
    assert summary["outcome"] in ("accepted", "rejected", "no-candidate"), context
    assert summary["stop"] is None and not summary["resumed"] and not summary["dry_run"]
    assert Path(summary["skill"]["path"]) == live and summary["skill"]["managed"]

    # mined exactly the three tasks, all three used, one per split
    assert summary["sessions"] == 9
    assert summary["recurring_tasks"] == 3, context
    folder = Path(summary["report"]["report.json"]).parent
    plan = NightPlan.model_validate_json((folder / "plan.json").read_text())
    assert plan.mined.groups == 3 and plan.mined.asked == 0 and plan.mined.merged == 0, plan.problems
    assert sorted(m.task.prompt for m in plan.mined.tasks) == sorted(TASKS)
    assert all(m.recurrence == 3 for m in plan.mined.tasks)
    assert not plan.not_ready and not plan.dreams
    assert summary["tasks"] == {"train": 1, "val": 1, "test": 1, "dream": 0}
    assert sorted(summary["splits"].values()) == ["test", "train", "val"]

    # the report
    assert set(summary["report"]) >= {"report.json", "report.md", "report.html"}
    for path in summary["report"].values():
        assert Path(path).is_file() and Path(path).stat().st_size > 0, path
    report = json.loads(Path(summary["report"]["report.json"]).read_text())
    assert report["outcome"] == summary["outcome"] and report["night"] == 1
    assert len(report["tasks"]) == 3

    # the calls: mining (3 judges, no merge) and the target's rollouts, all on the local model
    roles = summary["calls_by_role"]
    assert roles["mine"]["calls"] == 3, context
    assert roles["target"]["calls"] >= 2, context  # the seed on val, the train batch (+ gate, test)
    assert roles["reflect"]["calls"] == 1, context
    assert summary["cost_usd"] == 0 and summary["calls_made"] == record.spend.calls > 0

    # the live skill is untouched; a staged proposal's diff turns base.md into its SKILL.md
    assert live.read_bytes() == before
    assert not summary["adopted"]
    if summary["proposal"]:
        staged = data / "staging" / summary["proposal"]
        base = (staged / "base.md").read_text()
        assert base == before.decode()
        assert apply_unified_diff(base, (staged / "diff.patch").read_text()) == (staged / "SKILL.md").read_text()
    else:
        assert summary["outcome"] in ("no-candidate", "rejected"), context
