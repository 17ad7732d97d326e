"""What `skillsleep run` prints of a night that trained one skill: `RunSummary` (`run --json` prints
it flat; the text and markdown are rendered from it), built from the night's result and record."""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from skillsleep.core.harvest.harvester import HarvestReport
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.night.live_skill import LiveSkill
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.record import NightSpend, PlanCounts
from skillsleep.core.night.stages import NightPlan
from skillsleep.core.report.evidence import short_text
from skillsleep.core.report.files import REPORT_FILES
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.report.result import NightResult
from skillsleep.core.shared.records import Record, Split

__all__ = ["HarvestSummary", "RunSummary", "SkillSummary"]


class SkillSummary(Record):
    """The skill a night trained, as `run --json` names it."""

    path: str
    section: str | None
    name: str
    managed: bool


class HarvestSummary(Record):
    """What the night's harvest found: sessions by harness, errors, what could not be read."""

    sessions: dict[str, int] = Field(default_factory=dict)
    errors: int = 0
    unreadable: list[str] = Field(default_factory=list)


class RunSummary(Record):
    """What `skillsleep run --json` prints (and the text and markdown are rendered from): the night's
    result, with the skill it trained, the harvest before it, the parts of its record that say what
    its plan held and what it spent, its plan's splits and its report's files (`of()`). It prints
    flat, its keys in the order tests/fixtures/run_summary.json pins (`_printed`)."""

    result: NightResult
    skill: SkillSummary
    harvest: HarvestSummary
    plan: PlanCounts
    unrelated: list[str]
    splits: dict[str, Split]
    spend: NightSpend
    report: dict[str, str]  # file name → path

    @classmethod
    def of(cls, result: NightResult, nights: Nights, target: LiveSkill, harvested: HarvestReport) -> RunSummary:
        """The summary of night `result` of `target`, after `harvested` (`run_harvest()`'s report)."""
        record, folder = nights.get(result.night), nights.folder(result.night)
        plan = RunDir(folder).load("plan.json", NightPlan)
        return cls(
            result=result,
            skill=SkillSummary(path=str(target.path), section=target.section, name=target.name, managed=target.managed),
            harvest=HarvestSummary(
                sessions=harvested.sessions, errors=harvested.errors, unreadable=harvested.unreadable
            ),
            plan=record.plan,
            unrelated=plan.unrelated if plan else [],
            splits=plan.splits if plan else {},
            spend=record.spend,
            report={name: str(folder / name) for name in REPORT_FILES},
        )

    @model_serializer(mode="wrap")
    def _printed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`run --json`: flat, each key from the part that holds it, in the order it always had."""
        part, r = handler(self), self.result
        point = r.point()
        return {
            "night": r.night,
            "outcome": r.outcome,
            "reason": r.reason,
            "stop": part["result"]["stop"],
            "skill": part["skill"],
            "harness": r.harness,
            "dry_run": r.dry_run,
            "resumed": r.resumed,
            "harvest": part["harvest"],
            "sessions": self.plan.sessions,
            "recurring_tasks": self.plan.mined,
            "tasks": self.plan.tasks,
            "unrelated": self.unrelated,
            "splits": self.splits,
            "baseline": point.baseline,
            "candidate": point.candidate,
            "test": part["result"]["test"],
            "paired": short_text(r.paired) or None,  # the held-out paired difference, candidate − live skill
            "validation": part["result"]["validation"],
            "accepted_edits": len(r.accepted_edits),
            "rejected_edits": len(r.rejected_edits),
            "refused_edits": [refused.why() for refused in r.refused_edits],
            "proposal": r.proposal,
            "adopted": r.adopted,
            "adopt_error": r.adopt_error or None,
            "report": self.report,
            "problems": r.problems,
            "calls_made": self.spend.calls,
            "cache_hits": self.spend.cache_hits,
            "tokens": self.spend.tokens,
            "cost_usd": self.spend.cost_usd,
            "calls_by_role": part["result"]["usage"]["by_role"],
            "markdown": render_markdown(r),
        }
