"""The night in the engine, without the CLI: `core.night.cycle.run_night` and its stages, driven by the
scripted backend (by name) and the chat harness, with sessions put straight into the store.

Each test states one behaviour of a night: the session filter, candidate composition, staging,
auto-adopt, memory across nights, the night record, resume of an interrupted night, and the
failures that must leave a recorded (or no) night behind.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.registry import create_backend
from skillsleep.core.models.ledger import Ledger, read_ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.model_set import ModelSection
from skillsleep.core.models.store import Store
from skillsleep.core.night.cycle import resumable, run_night
from skillsleep.core.night.deps import NightDeps, NightModels
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightRecord
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.files import REPORT_FILES
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.report.result import NightResult
from skillsleep.core.report.wording import summary_rows
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Run, Task
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.harness import HarnessChoice
from skillsleep.core.train.state import TrainState
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.chat_logs import parse_chat_log
from skillsleep.harnesses.skills import MANAGED_NAME, SkillTarget
from skillsleep.slash_commands.proposal_verbs import reject
from tests.sleep_kit import RULE, TASKS, write_chat_logs, write_scripts

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LIVE = "# Release habits\n\n- Keep the changelog short.\n"


class Models:
    """The night's LLMs on the scripted backend named by each section of its config."""

    def __init__(self, cfg: TrainConfig, ledger: Ledger, store: Store, run_id: str) -> None:
        self.target = self._llm(cfg.target, cfg, ledger, store, run_id)
        self.optimizer = self._llm(cfg.optimizer, cfg, ledger, store, run_id)
        self.judge = self._llm(cfg.judge_model, cfg, ledger, store, run_id)
        self.closed = False

    @staticmethod
    def _llm(section: ModelSection, cfg: TrainConfig, ledger: Ledger, store: Store, run_id: str) -> LLM:
        backend = create_backend(section.backend)
        return LLM(backend, ledger=ledger, store=store, run_id=run_id, max_tokens=section.max_tokens, seed=cfg.run.seed)

    async def aclose(self) -> None:
        self.closed = True
        for llm in (self.target, self.optimizer, self.judge):
            await llm.backend.aclose()


class Interrupting:
    """The chat harness, but Ctrl-C arrives at the `after`-th run: as `asyncio.run` delivers it, a
    cancellation of the running task."""

    name = "chat"

    def __init__(self, inner: ChatHarness, after: int) -> None:
        self.inner, self.left = inner, after

    async def run(self, task: Task, skill: Skill, *, sample: int = 0, timeout_s: float = 600.0) -> Run:
        self.left -= 1
        if self.left < 0:
            raise asyncio.CancelledError
        return await self.inner.run(task, skill, sample=sample, timeout_s=timeout_s)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """Scripts for the optimizer and target, and the six TASKS three times each in the store."""
    write_scripts(tmp_path)
    log = write_chat_logs(tmp_path / "chats")
    store = Store(tmp_path / "data" / "state.db")
    for session in parse_chat_log(log.read_bytes(), source=str(log)).sessions:
        store.put_session(session)
    store.close()
    yield tmp_path


def settings(root: Path, **changes: Any) -> SleepSection:
    values: dict[str, Any] = {
        "backend": "scripted",
        "optimizer_model": str(root / "opt.json"),
        "target_model": str(root / "target.json"),
        "since": "3650d",
    }
    return SleepSection.model_validate({**values, **changes})


def managed(root: Path) -> SkillTarget:
    path = root / "data" / "skills" / MANAGED_NAME / "SKILL.md"
    return SkillTarget(path=path, name=MANAGED_NAME, managed=True, harness="chat")


def live_file(root: Path, text: str = LIVE) -> SkillTarget:
    path = root / "skills" / "release" / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return SkillTarget(path=path, name="release", harness="chat")


def night(
    root: Path,
    s: SleepSection,
    skill: SkillTarget,
    *,
    dry_run: bool = False,
    interrupt_after: int | None = None,
    **deps: Any,
) -> NightResult:
    """One night through `run_night`, with the chat harness on the scripted target."""
    data = root / "data"
    store = Store(data / "state.db")
    opened: list[Models] = []

    def open_models(cfg: TrainConfig, ledger: Ledger, run_id: str) -> NightModels:
        opened.append(Models(cfg, ledger, store, run_id))
        return opened[-1]

    def open_harness(models: NightModels) -> HarnessChoice:
        harness: Any = ChatHarness(models.target, log_dir=root / "chat-replays")
        if interrupt_after is not None:
            harness = Interrupting(harness, interrupt_after)
        return HarnessChoice(harness=harness, label="chat (scripted)", timeout_s=30.0)

    fields: dict[str, Any] = {
        "nights": Nights(data),
        "proposals": Proposals(data),
        "store": store,
        "open_models": open_models,
        "open_harness": open_harness,
        "clock": lambda: NOW,
        "pid": 4242,
        "alive": lambda pid: False,
        **deps,
    }
    try:
        return asyncio.run(run_night(s, skill, NightDeps(**fields), dry_run=dry_run))
    finally:
        store.close()
        assert all(m.closed for m in opened), "the models were left open"


def record_of(root: Path, n: int = 1) -> NightRecord:
    return Nights(root / "data").get(n)


def plan_of(root: Path, n: int = 1) -> NightPlan:
    return NightPlan.model_validate_json((root / "data" / "nights" / f"{n:04d}" / "plan.json").read_bytes())


# --- a first night ---------------------------------------------------------------------------------


def test_a_first_night_plans_trains_stages_and_records_the_night(root: Path) -> None:
    result = night(root, settings(root), managed(root))
    assert result.outcome == "accepted" and result.night == 1 and not result.resumed
    plan = plan_of(root)
    assert plan.sessions == 3 * len(TASKS) and sorted(m.task.prompt for m in plan.mined.tasks) == sorted(TASKS)
    folder = root / "data" / "nights" / "0001"
    assert all((folder / name).is_file() for name in REPORT_FILES)
    # a dreamed task links to its real training task; plan.json keeps only the id that says so
    assert plan.dreams and all(d.parent is not None and plan.splits[d.parent] == "train" for d in plan.dreams)
    assert '"parent"' not in (folder / "plan.json").read_text()
    recurrence = {t.id: t.recurrence for t in result.tasks}
    assert all(recurrence[d.id] == recurrence[d.parent] == 3 for d in plan.dreams if d.parent)
    saved = record_of(root)
    end = saved.end
    assert saved.status == "finished" and end.outcome == "accepted" and end.accepted
    assert saved.pid == 4242 and saved.started == NOW == end.finished
    assert end.proposal_id == result.proposal and saved.spend.calls > 0 and saved.spend.tokens > 0
    assert (end.baseline, end.candidate) == (
        result.baseline_score(),
        result.gate.candidate if result.gate else None,
    )
    assert saved.plan.tasks == {**{k: len(v) for k, v in plan.tasks().items()}, "dream": len(plan.dreams)}
    assert saved.point() == result.point()


def test_the_session_filter_keeps_only_sessions_since_the_cutoff(root: Path) -> None:
    # the chat log's sessions are from 2026-11-21 … 2026-11-23: a day back from NOW reads none
    result = night(root, settings(root, since="1d"), managed(root))
    assert plan_of(root).sessions == 0
    assert result.outcome == "no-candidate" and "no task recurred 2+ times" in result.reason
    assert result.proposal is None and record_of(root).status == "finished"
    only_last = night(root, settings(root, since="2026-11-23"), managed(root))
    assert plan_of(root, only_last.night).sessions == len(TASKS)


# --- the candidate and its proposal ----------------------------------------------------------------


def test_the_candidate_is_composed_into_the_live_file_and_staged_against_it(root: Path) -> None:
    skill = live_file(root, LIVE.replace("\n", "\r\n"))
    result = night(root, settings(root), skill)
    assert result.outcome == "accepted" and result.proposal
    proposals = Proposals(root / "data")
    proposal = proposals.get(result.proposal)
    staged = proposals.candidate(proposal)
    assert staged.startswith(LIVE.replace("\n", "\r\n")) and f"{RULE}\r\n" in staged  # the live file's bytes kept
    assert proposals.base(proposal) == LIVE.replace("\n", "\r\n")
    assert (proposal.baseline_score, proposal.candidate_score) == (0.0, 1.0) and proposal.night == 1
    assert proposal.details == {"harness": "chat", "section": None, "managed": False}
    assert f"+- {RULE}" in result.diff and skill.path.read_bytes() == LIVE.replace("\n", "\r\n").encode()


def test_a_night_that_relearns_a_pending_proposal_stages_nothing_new(root: Path) -> None:
    skill = live_file(root)
    first = night(root, settings(root), skill)
    second = night(root, settings(root), skill)
    assert second.proposal == first.proposal and len(Proposals(root / "data").list()) == 1


def test_a_night_that_auto_adopts_a_pending_proposal_rewrites_its_staged_report(root: Path) -> None:
    skill = live_file(root)
    first = night(root, settings(root), skill)
    staged = root / "data" / "staging" / str(first.proposal)
    assert "the live skill was not changed" in (staged / "report.md").read_text()
    second = night(root, settings(root, auto_adopt=True), skill)
    assert second.proposal == first.proposal and second.adopted
    report = json.loads((staged / "report.json").read_text())
    assert report["adopted"] is True and report["night"] == 2
    assert "not changed" not in (staged / "report.md").read_text() and RULE in skill.path.read_text()


def test_a_dry_run_stages_nothing_and_keeps_no_memory(root: Path) -> None:
    skill = live_file(root)
    result = night(root, settings(root), skill, dry_run=True)
    assert result.outcome == "accepted" and result.proposal is None
    assert Proposals(root / "data").list() == [] and record_of(root).dry_run
    assert not (root / "data" / "sleep").exists()  # no memory written


def test_auto_adopt_puts_an_accepted_candidate_live(root: Path) -> None:
    skill = live_file(root)
    result = night(root, settings(root, auto_adopt=True), skill)
    assert result.adopted and result.adopt_error == "" and record_of(root).end.adopted
    assert RULE in skill.path.read_text() and Proposals(root / "data").get(result.proposal).status == "adopted"


def test_auto_adopt_refuses_a_live_file_edited_during_the_night(root: Path) -> None:
    skill = live_file(root)

    def edit_live_file(record: NightRecord) -> NightRecord:
        skill.path.write_text(LIVE + "- My own edit.\n")
        return record

    result = night(root, settings(root, auto_adopt=True), skill, on_start=edit_live_file)
    assert not result.adopted and "changed since proposal" in result.adopt_error
    assert skill.path.read_text() == LIVE + "- My own edit.\n"
    assert Proposals(root / "data").get(result.proposal).status == "staged"
    staged = root / "data" / "staging" / str(result.proposal)  # its copy of the report says so too
    assert "changed since proposal" in json.loads((staged / "report.json").read_text())["adopt_error"]
    assert "`--auto-adopt` did not put it live" in (staged / "report.md").read_text()


# --- across nights ---------------------------------------------------------------------------------


def test_memory_carries_splits_rejected_edits_and_nights_to_the_next_night(root: Path) -> None:
    skill = live_file(root)
    night(root, settings(root), skill)
    first = plan_of(root, 1)
    memory = Nights(root / "data").memory(skill.key())
    assert memory.splits == first.splits and memory.nights == [1]
    second = night(root, settings(root), skill)
    assert second.night == 2
    assert {k: plan_of(root, 2).splits[k] for k in first.splits} == first.splits  # a task keeps its split
    assert Nights(root / "data").memory(skill.key()).nights == [1, 2]
    assert [p.night for p in second.history] == [1]


def test_an_interrupted_night_is_recorded_stopped_and_the_next_one_resumes_it(root: Path) -> None:
    skill = live_file(root)
    with pytest.raises(KeyboardInterrupt):
        night(root, settings(root), skill, interrupt_after=3)
    stopped = record_of(root)
    assert stopped.status == "stopped" and stopped.end.stop is not None and stopped.end.stop.kind == "interrupted"
    assert Proposals(root / "data").list() == []
    resumed = night(root, settings(root), skill)
    assert resumed.resumed and resumed.night == 1 and resumed.outcome == "accepted"
    assert not (root / "data" / "nights" / "0002").exists() and record_of(root).status == "finished"


def test_an_interrupted_night_resumed_spends_no_more_than_its_token_cap_in_both_runs_together(root: Path) -> None:
    skill, cap = live_file(root), 12000  # the whole night takes ~13k tokens
    with pytest.raises(KeyboardInterrupt):
        night(root, settings(root, budget_tokens=cap), skill, interrupt_after=6)
    first = read_ledger(root / "data" / "nights" / "0001" / "ledger.jsonl").spent_tokens
    assert first > 0
    resumed = night(root, settings(root, budget_tokens=cap), skill)
    assert resumed.resumed and resumed.night == 1
    assert read_ledger(root / "data" / "nights" / "0001" / "ledger.jsonl").spent_tokens <= cap
    assert resumed.outcome == "stopped-early" and resumed.stop is not None and resumed.stop.kind == "budget"


def test_a_proposal_rejected_while_a_night_stood_stopped_is_not_staged_by_its_resume(root: Path) -> None:
    skill = live_file(root)
    first = night(root, settings(root), skill)
    assert first.proposal is not None
    with pytest.raises(KeyboardInterrupt):
        night(root, settings(root), skill, interrupt_after=3)  # night 2 stops, its state saved
    reject(first.proposal, data=root / "data")
    resumed = night(root, settings(root), skill)
    assert resumed.resumed and resumed.night == 2 and resumed.proposal is None
    assert [p.status for p in Proposals(root / "data").list()] == ["rejected"]
    assert any(r.stage == "user" for r in Nights(root / "data").memory(skill.key()).rejected)


def test_a_night_still_running_in_a_live_process_is_not_resumed(root: Path) -> None:
    skill = live_file(root)
    with pytest.raises(KeyboardInterrupt):
        night(root, settings(root), skill, interrupt_after=3)
    running = record_of(root).model_copy(update={"status": "running", "pid": 777})
    nights = Nights(root / "data")
    nights.save(running)
    store = Store(root / "data" / "state.db")
    deps = NightDeps(
        nights=nights,
        proposals=Proposals(root / "data"),
        store=store,
        open_models=lambda cfg, ledger, run_id: Models(cfg, ledger, store, run_id),
        open_harness=lambda models: HarnessChoice(
            harness=ChatHarness(models.target, log_dir=root / "logs"), label="chat", timeout_s=30.0
        ),
        clock=lambda: NOW,
        pid=4242,
        alive=lambda pid: pid == 777,
    )
    try:
        assert resumable(deps, skill, settings(root), skill.read()) is None
        gone = deps.model_copy(update={"alive": lambda pid: False})
        assert resumable(gone, skill, settings(root), skill.read()) is not None
        assert resumable(gone, skill, settings(root, steps=5), skill.read()) is None  # other settings
        assert resumable(gone, skill, settings(root), skill.read() + "- edited\n") is None  # other live skill
    finally:
        store.close()


# --- failures ----------------------------------------------------------------------------------------


def test_a_harness_that_cannot_be_built_fails_before_the_night_is_recorded(root: Path) -> None:
    def unusable(models: NightModels) -> HarnessChoice:
        raise ConfigError("the codex harness is not usable here: not installed")

    with pytest.raises(ConfigError, match="not usable"):
        night(root, settings(root), managed(root), open_harness=unusable)
    assert not (root / "data" / "nights").exists()


def test_an_error_mid_night_is_recorded_as_stopped_and_raised(root: Path) -> None:
    def broken(cfg: TrainConfig, ledger: Ledger, run_id: str) -> NightModels:
        models = Models(cfg, ledger, Store(root / "data" / "state.db"), run_id)
        models.optimizer = None  # type: ignore[assignment]  # the first optimizer call fails
        return models

    with pytest.raises(AttributeError):
        night(root, settings(root), managed(root), open_models=broken)
    record = record_of(root)
    assert record.status == "stopped" and record.end.outcome == "stopped-early"
    assert record.end.stop is not None and record.end.stop.kind == "error" and record.end.finished == NOW


# --- candidates --------------------------------------------------------------------------------


@pytest.mark.parametrize(("candidates", "outcome"), [(1, "rejected"), (3, "accepted")])
def test_a_night_gates_as_many_candidates_as_its_settings_ask(root: Path, candidates: int, outcome: str) -> None:
    # the reflection ranks a harmful edit first: the clip (both edits) fails; candidate 2, the quoted
    # literal the judges require (core/train/strategies.py), passes, and so does 3, the worked example
    bad = "Reply in French only."
    finding = {"kind": "skill_defect", "diagnosis": "d", "op": "add", "target": ""}
    write_scripts(root, findings=[{**finding, "content": bad}, {**finding, "content": RULE}])
    rules = json.loads((root / "target.json").read_text())
    (root / "target.json").write_text(json.dumps([{"match": "French", "reply": "Bonjour."}, *rules]))
    result = night(root, settings(root, steps=1, candidates=candidates), live_file(root))
    assert result.outcome == outcome
    state = TrainState.model_validate_json((root / "data" / "nights" / "0001" / "state.json").read_bytes())
    step = state.steps[0]
    assert step.candidates == candidates and step.chosen == (2 if candidates == 3 else None)
    if outcome == "accepted":
        assert step.strategies == {1: "optimizer", 2: "quoted literals", 3: "worked example"}
        assert step.strategy == "quoted literals" and result.kept_strategies == ["quoted literals"]
        assert ("candidates kept", "quoted literals ×1 (of the strategies a step's several candidates came from)") in (
            summary_rows(result)
        )
        staged = Proposals(root / "data").candidate(Proposals(root / "data").get(result.proposal or ""))
        assert "End every reply with a line starting with `ANSWER:`." in staged and bad not in staged
