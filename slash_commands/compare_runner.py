"""What `skillsleep compare` does (compare_cmd.py is its click command): score two skills, A and B, on
the same tasks and samples through one Evaluator (eval's settings, harness and response cache), and
compare them pairwise with core/train/paired.py; the text, markdown and HTML are rendered from the
`CompareResult` in compare_render.py, which also writes `--html`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from skillsleep.core.shared.errors import ConfigError, SkillsleepError
from skillsleep.core.shared.events import EvalStarted, EventSink
from skillsleep.core.shared.records import Rollout
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.paired import PairedComparison, compare_scores
from skillsleep.slash_commands.eval_runner import EvalOptions, ScoringOptions, scoring

SEED = 0  # the bootstrap's seed: the same scores give the same interval


class CompareOptions(ScoringOptions):
    """What `skillsleep compare` was asked to do: eval's options for two skills, `samples` per task."""

    a: Path
    b: Path
    samples: int | None = None
    html: Path | None = None

    def eval_options(self) -> EvalOptions:
        """The same settings as `eval` takes them (`--samples` is its `--rollouts-k`)."""
        fields = self.model_dump(exclude={"a", "b", "samples", "html"})
        return EvalOptions(skill=self.a, rollouts_k=self.samples, **fields)


class CompareResult(BaseModel):
    """What `skillsleep compare --json` prints: the two skills, where they ran, the paired comparison
    (per task, then the statistics and the verdict), where the HTML went, and what the scoring cost."""

    model_config = ConfigDict(extra="forbid")

    a: str
    b: str
    tasks: str  # the task file
    harness: str
    metric: str
    samples: int  # per task and skill (`--samples`, or the config's rollouts_k)
    comparison: PairedComparison
    html: str | None
    # runs that failed (the agent could not run, timed out, …), each scored 0 as eval scores it
    failed_a: int = 0
    failed_b: int = 0
    error: str | None = None  # the first failed run's error
    calls_made: int
    cache_hits: int
    tokens: int
    cost_usd: float


def _scores(ev: Evaluator, rollouts: list[Rollout]) -> dict[str, list[float]]:
    """Each task's sample scores in the gate's metric (rollouts come in task order, then sample)."""
    out: dict[str, list[float]] = {}
    for r in rollouts:
        out.setdefault(r.task_id, []).append(ev.value(r))
    return out


async def run_compare(opts: CompareOptions, *, on_event: EventSink) -> CompareResult:
    """Score A and B on the same tasks and samples, concurrently, and compare them pairwise."""
    if opts.html is not None:
        check_html(opts.html)  # before any model call
    async with scoring(opts.eval_options(), [opts.a, opts.b], on_event=on_event) as s:
        k = s.cfg.train.rollouts_k
        for path in (opts.a, opts.b):
            on_event(EvalStarted(skill=str(path), tasks=len(s.tasks), rollouts_k=k, harness=s.label))
        ra, rb = await asyncio.gather(*(s.evaluator.rollouts(skill, s.tasks) for skill in s.skills))
        a, b = _scores(s.evaluator, ra), _scores(s.evaluator, rb)
    failed_a, failed_b = (sum(1 for r in rs if r.run.error is not None) for rs in (ra, rb))
    error = next((r.run.error for r in [*ra, *rb] if r.run.error is not None), None)
    if error is not None and failed_a == len(ra) and failed_b == len(rb):
        raise SkillsleepError(
            f"every run of A and of B failed, so there is nothing to compare (each would score 0); the first: {error}"
        )
    return CompareResult(
        a=str(opts.a),
        b=str(opts.b),
        tasks=str(opts.tasks),
        harness=opts.harness,
        metric=s.cfg.gate.metric,
        samples=k,
        comparison=compare_scores(a, b, seed=SEED),
        html=str(opts.html) if opts.html else None,
        failed_a=failed_a,
        failed_b=failed_b,
        error=error,
        calls_made=s.ledger.calls_made,
        cache_hits=s.ledger.cache_hits,
        tokens=s.ledger.spent_tokens,
        cost_usd=round(s.ledger.spent_usd, 6),
    )


def check_html(path: Path) -> None:
    """`--html FILE` names a file that can be written: not a folder, in a folder that exists."""
    if path.is_dir():
        raise ConfigError(f"--html {path}: is a folder; give a file name such as {path / 'compare.html'}")
    if not path.parent.is_dir():
        raise ConfigError(f"--html {path}: no folder {path.parent}; create it or give a file in a folder that exists")
