"""Intents (mining, step 1): the requests a user gives the agent, each with how that attempt ended.

Per session that is not a subagent/sidechain (`Session.sidechain`; those are never mined) nor
skillsleep's own (`core.harvest.own`: harvest stores none, an older store may hold some), user
prompts and slash commands ("/cmd args", with or without args) are read in order. Not intents:
- acknowledgements: every word in a small vocabulary ("ok", "thanks", "continue", "yes", "looks
  good", ...; at most 8 words) or a one-character answer to a menu ("p", "2", "a)"). A positive
  one ("thanks", "great", "works") is a success signal for the open instance;
- housekeeping commands (/clear, /exit, /compact, /model, ...) and shell escapes ("! ls");
- skillsleep's own verbs (`core.harvest.own.is_sleep_verb`): /sleep and /skillsleep:sleep (Claude
  Code, OpenClaw), $sleep and $skillsleep:sleep (Codex, OpenClaw), /skill sleep (OpenClaw). The
  user is talking to skillsleep, not asking the agent for work, so the agent's reply to them (the
  verb's output, its shell call) belongs to no instance either. A session of nothing but these verbs
  is not even stored (`core.harvest.own`);
- a text that is only a bracketed marker ("[Image #1]") or empty;
- a request that the safety screen of `core.privacy.safety` flags (sending data out, fetch-and-run,
  disabling safety, revealing secrets): a replay would do it for real, so it is never a task.
  Its follow-ups (a correction, a revert, a retry: as below) are screened with it and counted as
  "unsafe_follow_up": "no, put the answer on its own last line" belongs to the screened request,
  and would otherwise recur as a task of its own;
- follow-ups that are about the open instance (`core.mine.followups`, where the rule is defined):
  a correction ("no, use X", "that's wrong", "you forgot …", or "still" / "not" / "instead" …
  about the same subject), a revert ("revert that", /undo, /rewind) or a retry of the same
  request; they become `Evidence` of that instance, never new intents. A follow-up on another
  subject starts a new intent even when it says "still" or "not"; a bare "no" to the agent's
  question declines an offer (skipped as "answer"). With no open instance every text is an intent.
Each kind of skip is counted in `Intake.prompts_skipped`, each kind of evidence in `Intake.evidence`.

Outcome of an instance (its span runs up to the next intent or the session's end):
- "failure" when it has any evidence: a correction, a repeated ask, a revert, a user interrupt
  (an error turn saying "interrupted"/"aborted"), or a span whose last turn is an error (an error
  turn or a tool result with is_error, i.e. the agent stopped on an API or tool error);
  failure signals win over success signals;
- "success" when the user acknowledged positively, or moved on to a new intent after the agent
  did something (assistant text or tool use) without any correction;
- "unknown" otherwise: the session ends after it with no signal, the agent did nothing, or only
  neutral acknowledgements ("ok", "continue") followed.

Every text taken from a session passes through a `Redactor` again (sessions are redacted at
harvest; it is idempotent and cheap) before it reaches an instance.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from skillsleep.core.harvest.own import is_sleep_verb, own_reason
from skillsleep.core.mine.followups import Span, classify, outright
from skillsleep.core.mine.similarity import normalize, vocabulary
from skillsleep.core.models.prompts import truncate
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.privacy.safety import screen
from skillsleep.core.shared.records import Edit, Record
from skillsleep.core.shared.session import Session, Turn

EVIDENCE_CHARS = 400

Outcome = Literal["success", "failure", "unknown"]
EvidenceKind = Literal["correction", "repeat", "revert", "interrupt", "error"]


class Evidence(Record):
    """A sign that an attempt went wrong; `text` is the user's (redacted) words or the error."""

    kind: EvidenceKind
    text: str = ""

    def line(self) -> str:
        """Plain words, for reports."""
        what = {
            "correction": "the user corrected the agent",
            "repeat": "the user asked again",
            "revert": "the user reverted the agent's work",
            "interrupt": "the user interrupted the agent",
            "error": "the agent's work ended in an error",
        }[self.kind]
        return f"{what}: {truncate(self.text, EVIDENCE_CHARS)}" if self.text else what


class Instance(Record):
    """One time the user asked for something, with how that attempt ended."""

    harness: str
    session_id: str
    project: str | None = None
    prompt: str  # the redacted request; a slash command as "/cmd args"
    key: str  # normalize(prompt)
    at: datetime | None = None
    outcome: Outcome = "unknown"
    evidence: list[Evidence] = Field(default_factory=list)
    acknowledged: bool = False  # the user acknowledged it positively

    @property
    def source(self) -> str:
        return f"{self.harness}:{self.session_id}"

    @property
    def when(self) -> datetime:
        """When it was asked; the earliest time when that is unknown (for sorting)."""
        return self.at or datetime.min.replace(tzinfo=UTC)


class Outcomes(Record):
    """How the instances of a task ended."""

    success: int = 0
    failure: int = 0
    unknown: int = 0

    @property
    def total(self) -> int:
        return self.success + self.failure + self.unknown

    @property
    def failure_rate(self) -> float:
        return self.failure / self.total if self.total else 0.0


class Intake(Record):
    """What extraction read, used and skipped (by reason)."""

    sessions: int = 0
    sessions_mined: int = 0  # sessions that gave at least one intent
    sessions_skipped: dict[str, int] = Field(default_factory=dict)
    prompts: int = 0  # user prompts and commands read in non-subagent sessions
    intents: int = 0
    prompts_skipped: dict[str, int] = Field(default_factory=dict)
    evidence: dict[str, int] = Field(default_factory=dict)  # follow-ups / signals used as evidence


# --- reading sessions ----------------------------------------------------------------------------

_HOUSEKEEPING = vocabulary(
    "clear exit quit compact help model resume cost status config login logout doctor memory permissions vim "
    "theme terminal-setup mcp agents hooks ide bug release-notes upgrade usage context export add-dir statusline "
    "output-style privacy-settings new approvals mention feedback fast settings plugin plugins continue fork "
    "rename tasks todos"
)
_REVERT_COMMANDS = frozenset({"undo", "rewind"})
_COMMAND_TEXT = re.compile(r"^/([A-Za-z][\w:.\-]*)(?:\s+(.*))?$", re.S)
_MARKER_ONLY = re.compile(r"^\[[^\]\n]{0,200}\]$")

_POSITIVE = vocabulary(
    "thanks thank thx ty great perfect nice cool awesome excellent lgtm works worked good correct exactly "
    "appreciated approved brilliant amazing wonderful fantastic 👍 🎉 ✅"
)
_NEUTRAL = vocabulary(
    "ok okay k kk yes y yep yeah yup sure fine alright all right you it that this is now go on ahead continue "
    "proceed please pls do next keep going carry done sounds well job looks look much very so ship approve "
    "that's thats it's"
)
_NEUTRAL_PHRASES = frozenset({"what else", "and", "more", "go", "next step", "what next"})

_INTERRUPT = re.compile(r"interrupt|abort", re.I)
_CHOICE = re.compile(r"^[a-z0-9][.)]?$", re.I)  # an answer to a menu: "p", "2", "a)"


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'’👍🎉✅]+", text.lower().replace("’", "'"))


def _acknowledgement(text: str) -> Literal["positive", "neutral"] | None:
    """'positive' / 'neutral' when the text only acknowledges or continues, else None."""
    stripped = text.strip()
    words = _words(stripped)
    if not words:
        return None
    if outright(stripped):
        return None
    if len(words) <= 8 and all(w in _POSITIVE or w in _NEUTRAL for w in words):
        return "positive" if any(w in _POSITIVE for w in words) else "neutral"
    if _CHOICE.match(stripped) or " ".join(words) in _NEUTRAL_PHRASES:
        return "neutral"
    return None


def _request(turn: Turn) -> tuple[Literal["text", "housekeeping", "shell", "revert", "skillsleep"], str]:
    """What a user or command turn asks: a request text, or a command that is not one."""
    if is_sleep_verb(turn):
        return "skillsleep", ""
    if turn.kind == "command":
        parts = turn.text.strip().split(maxsplit=1)
        name = turn.tool or (parts[0] if parts else "")
        args = (turn.arguments or {}).get("args")
        if not isinstance(args, str):
            args = parts[1] if len(parts) > 1 else ""
        if name.startswith("!"):
            return "shell", ""
        name = name if name.startswith("/") else f"/{name}"
    else:
        found = _COMMAND_TEXT.match(turn.text.strip())
        if not found:
            return "text", turn.text
        name, args = f"/{found.group(1)}", found.group(2) or ""
    bare = name.lstrip("/").lower()
    text = f"{name} {args.strip()}".strip()
    if bare in _HOUSEKEEPING:
        return "housekeeping", text
    if bare in _REVERT_COMMANDS:
        return "revert", text
    return "text", text


class _Open:
    """An instance being read: the request and what followed it."""

    def __init__(self, session: Session, prompt: str, key: str, at: datetime | None, *, screened: bool) -> None:
        self.session, self.prompt, self.key, self.at = session, prompt, key, at
        self.screened = screened  # the safety screen flagged the request: it and its follow-ups are no task
        self.span = Span(prompt, key)
        self.evidence: list[Evidence] = []
        self.active = False  # the agent did something
        self.positive = False  # the user acknowledged positively
        self.last: Turn | None = None  # the last agent-side turn since the last user turn

    def attach(self, kind: EvidenceKind, text: str) -> None:
        """A sign that this attempt went wrong: a follow-up of the user's, or an interrupt."""
        self.evidence.append(Evidence(kind=kind, text=truncate(text, EVIDENCE_CHARS)))
        self.span.user_text(text)
        self.last = None

    def observe(self, turn: Turn) -> None:
        """An agent-side turn (assistant text, tool use or result, error) after the request."""
        if turn.kind == "error" and _INTERRUPT.search(turn.text):
            self.attach("interrupt", "")
            return
        self.active = self.active or turn.kind != "error"
        self.last = turn
        if turn.kind == "assistant":
            self.span.agent_text(turn.text)
        elif turn.kind == "tool_call":
            self.span.tool_call(turn.arguments, turn.tool)

    def close(self, moved_on: bool, redactor: Redactor) -> Instance:
        last = self.last
        if last is not None and (last.kind == "error" or (last.kind == "tool_result" and last.is_error)):
            self.evidence.append(Evidence(kind="error", text=truncate(redactor.text(last.text), EVIDENCE_CHARS)))
        if self.evidence:
            outcome: Outcome = "failure"
        elif self.positive or (moved_on and self.active):
            outcome = "success"
        else:
            outcome = "unknown"
        return Instance(
            harness=self.session.harness,
            session_id=self.session.id,
            project=self.session.project,
            prompt=self.prompt,
            key=self.key,
            at=self.at,
            outcome=outcome,
            evidence=self.evidence,
            acknowledged=self.positive,
        )


def extract_instances(
    sessions: Iterable[Session], *, redactor: Redactor | None = None
) -> tuple[list[Instance], Intake]:
    """Every intent instance in `sessions` (subagent sessions skipped), with outcome and evidence."""
    redactor = redactor or Redactor()
    intake = Intake()
    skipped_sessions: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    evidence: Counter[str] = Counter()
    instances: list[Instance] = []
    for session in sessions:
        intake.sessions += 1
        if session.sidechain:
            skipped_sessions["subagent"] += 1
            continue
        if own_reason(session) is not None:  # stored before harvest refused them (`core.harvest.own`)
            skipped_sessions["skillsleep_own"] += 1
            continue
        found = _session_instances(session, redactor, skipped, evidence)
        intake.prompts += sum(1 for t in session.turns if t.kind in ("user", "command"))
        if found:
            intake.sessions_mined += 1
            instances += found
        else:
            skipped_sessions["no_intents"] += 1
    intake.intents = len(instances)
    intake.sessions_skipped = dict(sorted(skipped_sessions.items()))
    intake.prompts_skipped = dict(sorted(skipped.items()))
    intake.evidence = dict(sorted(evidence.items()))
    return instances, intake


def _session_instances(
    session: Session, redactor: Redactor, skipped: Counter[str], evidence: Counter[str]
) -> list[Instance]:
    out: list[Instance] = []
    current: _Open | None = None
    aside = False  # after a skillsleep verb: the agent's reply to it belongs to no instance
    for turn in session.turns:
        if turn.kind not in ("user", "command"):
            if current is not None and not aside:
                current.observe(turn)
            continue
        kind, raw = _request(turn)
        aside = kind == "skillsleep"
        if kind in ("housekeeping", "shell", "skillsleep"):
            skipped[f"{kind}_command"] += 1
            continue
        text = redactor.text(raw).strip()
        if kind == "revert":
            if current is not None:
                _follow(current, "revert", text, skipped)
            else:
                skipped["revert_without_request"] += 1
            continue
        if not text or _MARKER_ONLY.match(text):
            skipped["empty"] += 1
            continue
        ack = _acknowledgement(text)
        if ack is not None:
            skipped["acknowledgement"] += 1
            if current is not None:
                current.positive = current.positive or ack == "positive"
                current.last = None
            continue
        key = normalize(text)
        if not key:
            skipped["empty"] += 1
            continue
        if current is not None:
            follow_up = classify(text, current.span)
            if follow_up == "answer":
                skipped["answer"] += 1
                current.last = None
                continue
            if follow_up != "request":
                _follow(current, follow_up, text, skipped)
                continue
        screened = screen(Edit(op="add", content=text)) is not None
        if screened:
            skipped["unsafe_intent"] += 1
        if current is not None and not current.screened:
            out.append(current.close(True, redactor))
        current = _Open(session, text, key, turn.ts or session.started, screened=screened)
    if current is not None and not current.screened:
        out.append(current.close(False, redactor))
    evidence.update(e.kind for instance in out for e in instance.evidence)
    return out


def _follow(current: _Open, kind: EvidenceKind, text: str, skipped: Counter[str]) -> None:
    """A follow-up about the open request: evidence of it, or screened with it when it was screened."""
    if current.screened:
        skipped["unsafe_follow_up"] += 1
    current.attach(kind, text)
