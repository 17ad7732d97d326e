"""The events of a night's own stages (harvest, plan, report, proposal, adopt); its training
reports the events of core/shared/run_events.py. core/shared/events.py has the union and the sink."""

from __future__ import annotations

from typing import ClassVar, Literal

from skillsleep.core.shared.display import counted
from skillsleep.core.shared.run_events import EventRecord

__all__ = [
    "AdoptRefused",
    "Adopted",
    "AskingRelevance",
    "Dreaming",
    "HarvestDone",
    "HarvestStarted",
    "Mining",
    "NightPlanned",
    "NightResumed",
    "NotEnoughEvidence",
    "ProposalPending",
    "ProposalStaged",
    "ReportWritten",
    "WritingJudges",
]


class HarvestStarted(EventRecord):
    """A night reads the agents' new transcripts."""

    kind: Literal["harvest_started"] = "harvest_started"

    def describe(self) -> str:
        return "harvesting new sessions"


class HarvestDone(EventRecord):
    """The new transcripts are stored: new sessions by harness, files that failed."""

    shown: ClassVar[bool] = False
    kind: Literal["harvest_done"] = "harvest_done"
    sessions: dict[str, int]
    errors: int

    def describe(self) -> str:
        return f"harvested {sum(self.sessions.values())} new session(s), {self.errors} error(s)"


class NightResumed(EventRecord):
    """A night that stopped before its end goes on (same tasks, finished steps kept)."""

    kind: Literal["night_resumed"] = "night_resumed"
    night: int
    skill: str
    stopped: str  # why it stopped ("" when its process died)

    def describe(self) -> str:
        return f"resuming night {self.night} of {self.skill} (stopped: {self.stopped or 'the process died'})"


class Mining(EventRecord):
    """The stored sessions are mined for recurring tasks."""

    kind: Literal["mining"] = "mining"
    sessions: int

    def describe(self) -> str:
        return f"mining {counted(self.sessions, 'session')} for recurring tasks"


class AskingRelevance(EventRecord):
    """The optimizer is asked which recurring tasks the skill is about."""

    kind: Literal["asking_relevance"] = "asking_relevance"
    tasks: int
    skill: str

    def describe(self) -> str:
        return f"asking which of {self.tasks} recurring tasks {self.skill} is about"


class WritingJudges(EventRecord):
    """Judges are written for the night's tasks."""

    kind: Literal["writing_judges"] = "writing_judges"
    tasks: int

    def describe(self) -> str:
        return f"writing judges for {counted(self.tasks, 'task')}"


class Dreaming(EventRecord):
    """Paraphrases of the training tasks are dreamed."""

    kind: Literal["dreaming"] = "dreaming"
    variants: int
    tasks: int

    def describe(self) -> str:
        return f"dreaming {self.variants} variant(s) of {self.tasks} training tasks"


class NightPlanned(EventRecord):
    """The night's tasks are split; replay starts."""

    kind: Literal["night_planned"] = "night_planned"
    night: int
    train: int
    dreamed: int
    val: int
    test: int
    harness: str  # the label of what replays the tasks

    def describe(self) -> str:
        return (
            f"night {self.night}: {self.train} train ({self.dreamed} dreamed), {self.val} val, {self.test} test "
            f"tasks; replaying with {self.harness}"
        )


class NotEnoughEvidence(EventRecord):
    """The night has too few real held-out tasks for the gate to accept anything: it trains nothing."""

    kind: Literal["not_enough_evidence"] = "not_enough_evidence"
    held_out: int  # real held-out (val) tasks tonight
    needed: int  # the gate's `gate_min_wins`

    def describe(self) -> str:
        return (
            f"not enough evidence: {self.held_out} held-out task(s), the gate needs a higher score on at least "
            f"{self.needed}; nothing is trained tonight"
        )


class ReportWritten(EventRecord):
    """The night's report files are written in its folder."""

    shown: ClassVar[bool] = False
    kind: Literal["report_written"] = "report_written"
    folder: str
    outcome: str

    def describe(self) -> str:
        return f"night report ({self.outcome}) written in {self.folder}"


class ProposalStaged(EventRecord):
    """The night's candidate is staged as a proposal for `adopt`."""

    kind: Literal["proposal_staged"] = "proposal_staged"
    proposal: str
    accepted: bool
    reason: str

    def describe(self) -> str:
        return f"staged proposal {self.proposal} ({'accepted' if self.accepted else 'not accepted'}: {self.reason})"


class ProposalPending(EventRecord):
    """The same proposal is already staged and waiting; nothing new is staged."""

    kind: Literal["proposal_pending"] = "proposal_pending"
    proposal: str

    def describe(self) -> str:
        return f"the same proposal is already pending: {self.proposal} (`skillsleep adopt {self.proposal}`)"


class Adopted(EventRecord):
    """`auto_adopt` put the accepted proposal live."""

    kind: Literal["adopted"] = "adopted"
    proposal: str
    path: str

    def describe(self) -> str:
        return f"adopted {self.proposal} into {self.path} (--auto-adopt; `skillsleep rollback` undoes it)"


class AdoptRefused(EventRecord):
    """`auto_adopt` could not put the proposal live (the live file changed since, …)."""

    kind: Literal["adopt_refused"] = "adopt_refused"
    proposal: str
    error: str

    def describe(self) -> str:
        return f"--auto-adopt did not adopt {self.proposal}: {self.error}"
