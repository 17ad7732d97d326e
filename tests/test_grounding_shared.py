"""The embedded 0.5B writes the judges of tasks mined from the shared real transcripts
(../shared/data/transcripts, Claude Code and Codex): every check literal, rubric sentence and
feedback of every judge is grounded in the user's own words, and no text of the judge prompt's
examples survives (slow: a merge and a judge call per task on 2 shared cores)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from servers import local_threads
from test_grounding import assert_grounded, judge_texts, prompt_examples, read_sessions

from skillsleep.core.mine.intents import Outcomes
from skillsleep.core.mine.judge_writing import judge_messages
from skillsleep.core.mine.mining import mine
from skillsleep.core.models.backends.base import BackendSettings, RetryPolicy
from skillsleep.core.models.backends.local import LocalBackend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM


@pytest.mark.slow
async def test_the_embedded_model_writes_only_grounded_judges_for_the_shared_transcripts(
    transcripts: Path, local_model_path: Path
) -> None:
    sessions = read_sessions(p for p in sorted(transcripts.rglob("*.jsonl")) if "openclaw" not in p.parts)
    if not sessions:
        pytest.skip(f"no Claude Code or Codex sessions under {transcripts}")
    retry = RetryPolicy(attempts=2, base_delay_s=0, timeout_s=300)
    backend = LocalBackend(
        BackendSettings(model=str(local_model_path), retry=retry, options={"threads": local_threads()})
    )
    ledger = Ledger()
    start = time.perf_counter()
    try:
        result = await mine(sessions, llm=LLM(backend, ledger=ledger), min_recurrence=1, max_tasks=3)
    finally:
        await backend.aclose()
    print(f"\n{len(sessions)} sessions mined by the 0.5B in {time.perf_counter() - start:.0f} s")
    assert result.tasks, "no task mined from the shared transcripts"
    with_evidence = assert_grounded(result.tasks)
    print(
        f"{len(result.tasks)} task(s), {with_evidence} judge(s) from evidence, dropped: {result.tasks[0].dropped_checks}"
    )
    examples = prompt_examples(judge_messages(["x"], [], Outcomes())[0].content)
    for mined in result.tasks:
        for text in judge_texts(mined):
            assert not any(e in text for e in examples), (mined.task.id, text)
