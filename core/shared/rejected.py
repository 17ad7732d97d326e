"""An edit turned down: the one record of a refused or rejected edit, wherever it happens.

    stage     what turned it down                       where the record goes
    safety    the safety screen (core/privacy/safety.py; a  a step's `refused`, the epoch's slow
              slow-update guidance line that echoes the    update, the repair round's `screened`,
              skill's structure or is cut off, too)        the report's `refused_edits`
    memory    dropped before ranking: the memory holds it  a step's `skipped`
              (refused before, rejected alone by the gate
              on the same skill text, or ignored before)
    support   held back before ranking: it rests on fewer  a step's `skipped`
              distinct trajectories than `min_support`
    user      the user rejected `proposal` holding it      the rejected-edit memory; a step's
              (core/night/rejections.py), or it says only  `skipped` when dropped before ranking
              what such a proposal said
    apply     the bounded-edit rules (core/train/edits.py),  a step's `skipped`; the memory when
              a `rewrite` of the repair call included      still refused after the repair round
    repair    the gate rejected its `repair` (the rewrite  the memory
              that applied in its place)
    gate      the gate, with the score it produced         the memory; the report's `rejected_edits`
    ignored   the gate, on a tie: applied, and the target   the memory; the report's `rejected_edits`
              did not follow it (no held-out task scored
              differently: core/train/gate.untouched); with
              `repair`, the proposal whose repair that was

`reason` says why in words the optimizer can act on; `why()` is the line shown to people. Entries
of the memory carry the `epoch` and `step` that turned them down.

On disk a safety refusal keeps its first layout (`edit`, `rule`, `why`, `matched`), and a gate
rejection is written without its stage (report.json's layout); the other fields are written when
set (an "ignored" entry with its stage and the scores `before` and `after`). Files of earlier versions read back: the full layout of the memory (every field, null when
unset), and a step's `skipped` as lines ("add 'X': why", "repair: …").
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import SerializerFunctionWrapHandler, model_serializer, model_validator

from skillsleep.core.shared.records import Edit, Record

RejectStage = Literal["safety", "memory", "support", "user", "apply", "repair", "gate", "ignored"]

DROPPED = "dropped before ranking"  # how the reason of an edit the memory or the user's rejection drops begins
HELD_BACK = "held back before ranking"  # how the reason of an edit on too few trajectories begins
REPAIR_HELD = "held back from the repair"  # for a rewrite or named fix the memory holds, in place of DROPPED
USER_REJECTED = "the user rejected proposal"  # how a user entry's reason begins (a dropped edit's after DROPPED)
NOT_FOLLOWED = "the target did not follow it"  # what a dropped edit's reason says of an "ignored" entry
IGNORED = f"applied; {NOT_FOLLOWED}"  # how an "ignored" entry's reason begins (what people read)


class RejectedEdit(Record):
    """An edit turned down by `stage` (see the module's table), with why and what it knew then."""

    edit: Edit
    stage: RejectStage
    reason: str = ""  # why, in words (stage "safety": the rule's why)
    rule: str | None = None  # stage "safety": the rule's name
    matched: str | None = None  # stage "safety": the words that matched
    rewrite: bool = False  # stage "apply": a rewrite the repair call wrote for a refused edit
    repair: Edit | None = None  # stages "repair" and "ignored": the repaired edit gated in this proposal's place
    proposal: str | None = None  # stage "user": the proposal the user rejected
    before: float | None = None  # stages "gate", "repair" and "ignored": the selection score before → after
    after: float | None = None
    skill: str | None = None  # the hash of the skill the gate rejected it on, alone: not tried again there
    epoch: int | None = None  # the step that turned it down (memory entries)
    step: int | None = None

    def why(self) -> str:
        """Why it was turned down, for people: a safety refusal names its rule and the words that matched."""
        if self.stage == "safety":
            return f"refused before the gate ({self.rule}): {self.reason} — “{self.matched}”"
        return self.reason

    def where(self) -> str:
        """The step that turned it down, counted from 1: "epoch 1, step 2"."""
        if self.epoch is None or self.step is None:
            return "an earlier step"
        return f"epoch {self.epoch + 1}, step {self.step + 1}"

    @model_validator(mode="after")
    def _rule_of_a_refusal(self) -> RejectedEdit:
        if (self.stage == "safety") != (self.rule is not None and self.matched is not None):
            raise ValueError("a safety refusal names its `rule` and the words `matched`, and only it does")
        return self

    @model_validator(mode="before")
    @classmethod
    def _from_earlier_layouts(cls, data: object) -> object:
        if isinstance(data, str):
            return _from_line(data)
        if isinstance(data, dict) and "stage" not in data:
            if "why" in data:  # a safety refusal as written
                rest = {k: v for k, v in data.items() if k != "why"}
                return {**rest, "stage": "safety", "reason": data["why"]}
            return {**data, "stage": "gate"}
        return data

    @model_serializer(mode="wrap")
    def _layout(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.stage == "safety":
            return {"edit": data["edit"], "rule": self.rule, "why": self.reason, "matched": self.matched}
        kept = {"edit", "reason", *(("before", "after") if self.stage in ("gate", "ignored") else ())}
        out = {k: v for k, v in data.items() if k in kept or (v is not None and v is not False)}
        if self.stage == "gate":
            del out["stage"]
        return out


def distinct(rejected: Iterable[RejectedEdit]) -> list[RejectedEdit]:
    """`rejected` in order, each equal entry once (several candidates skip the same edit alike)."""
    out: list[RejectedEdit] = []
    for r in rejected:
        if r not in out:
            out.append(r)
    return out


# A step's `skipped` line of earlier versions: "[repair: ]<op> <target, or the content quoted>: <why>".
_LINE = re.compile(r"(repair: )?(add|delete|replace) ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|.*?): (.*)", re.S)


def _from_line(line: str) -> dict[str, object]:
    """The fields of a step's `skipped` line as earlier versions wrote it."""
    m = _LINE.fullmatch(line)
    if m is None:
        raise ValueError(f'not a skipped edit\'s line ("<op> <line>: <why>"): {line[:120]!r}')
    rewrite, op, shown, reason = m.groups()
    quoted = shown[:1] in ("'", '"') or shown == "None"
    content = ast.literal_eval(shown) if quoted else None
    edit = {"op": op, "target": None if quoted else shown, "content": content}
    stage = "apply"
    if reason.startswith(HELD_BACK):
        stage = "support"
    elif reason.startswith(DROPPED):
        stage = "user" if reason.startswith(f"{DROPPED}, {USER_REJECTED}") else "memory"
    return {"edit": edit, "stage": stage, "reason": reason, "rewrite": rewrite is not None}
