"""Mine tasks (sleep, step 2): the requests a user keeps giving the agent → ranked, judged Tasks.

    sessions → instances (intent + outcome + evidence) → lexical groups → optimizer merge of
    paraphrases (one call) → tasks ranked by recurrence and failure → one judge call per kept task

Intents. Per session that is not a subagent/sidechain (`Session.sidechain`; those are never mined),
user prompts and slash commands ("/cmd args", with or without args) are read in order. Not intents:
- acknowledgements: every word in a small vocabulary ("ok", "thanks", "continue", "yes", "looks
  good", ...; at most 8 words) or a one-character answer to a menu ("p", "2", "a)"). A positive
  one ("thanks", "great", "works") is a success signal for the open instance;
- housekeeping commands (/clear, /exit, /compact, /model, ...) and shell escapes ("! ls");
- skillsleep's own verbs: /sleep and /skillsleep:sleep (Claude Code, OpenClaw), $sleep and
  $skillsleep:sleep (Codex). The user is talking to skillsleep, not asking the agent for work, so
  the agent's reply to them (the verb's output, its shell call) belongs to no instance either;
- a text that is only a bracketed marker ("[Image #1]") or empty;
- a request that the safety screen of `core.safety` flags (sending data out, fetch-and-run,
  disabling safety, revealing secrets): a replay would do it for real, so it is never a task.
- follow-ups of an open instance that correct the agent ("no, use X", "that's wrong", "don't ...",
  "revert", "still failing", "again", "instead", "great, but ..."), /undo or /rewind, and a repeated
  ask (a follow-up lexically as close to the open request as a near-duplicate is): they become
  `Evidence` of that instance, never new intents. With no open instance such a text is an intent.
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

Grouping. Texts are normalized (lowercase; URLs, uuids, quoted strings, paths, file names, hex
ids and numbers → <url> <id> <str> <path> <num>; a leading slash command → <cmd> and its name, so
"/commit" and "/review" stay two tasks; punctuation dropped; first 1000 characters).
`similarity` = mean of the Ochiai (cosine of sets) overlap of the content words (a small stop
list removed) and of the character 3-grams of those words; it depends on the two texts only, not
on the rest of the night, so the same requests group the same way night after night. Pairs at
or above GROUP_THRESHOLD are joined (union-find, so chains join too) into lexical groups; only the
MAX_COMPARED most frequent distinct normalized texts are compared pairwise (the rest group by
identical normalized text only). Then, when an `llm` is given and there are two or more groups,
ONE optimizer call sees the representatives of the MERGE_REQUESTS largest groups (redacted,
inside data fences) and names groups that are paraphrases of one task; those are merged. A
malformed reply keeps the lexical groups and records the problem in `MineResult.problems`. With
`llm=None` only the lexical pass runs.

Clusters (for the splitter). Tasks whose texts are near each other at the looser
RELATED_THRESHOLD (e.g. "Reply with the word hello" / "... goodbye") are distinct tasks but share
a `cluster`: near-duplicates of a training task must not reach val/test, so keep every cluster in
one split (`MineResult.clusters`, `near_duplicates()`).

Tasks and ranking. A task is a final group. Its representative wording is the most frequent
normalized text (ties: shorter, then alphabetical); `Task.prompt` is the latest instance with that
wording, `Task.workdir` its session's cwd, `provenance` every "harness:session_id". The id is
"mine-" + sha256(representative normalized text)[:12]: the same recurring request keeps its id
across nights while it stays the most frequent wording. recurrence = instances; tasks with fewer
than `min_recurrence` are kept but rank after every recurrent one. Within a tier,
priority = recurrence × (1 + failure rate) (failures / instances; unknown is not failure), then
distinct sessions, then id. `max_tasks` cuts the ranked list (before any judge call).

Judges. With an `llm`, one optimizer call per kept task reads the wordings, the corrections and
the outcome counts (as data) and returns rule checks and/or a rubric. Each check is validated: a
type `core.judges` supports (`records.CheckType`), a value of the right kind by the scorer's own
rules (`judges.check_problem`: text, a compiling regex, a whole number ≥ 0, none for json_valid;
a quoted number is taken as one), at most MAX_CHECKS; a check or a rubric that
the safety screen flags is dropped too, and so is a check value, a feedback or a rubric copied
from the judge-writing instructions rather than the user's words (a small model echoes the
prompt's examples; a check keeps the scorer's own feedback then). Dropped checks are listed per task and counted. With no
valid check and no rubric (or without an llm) the judge is DEFAULT_RUBRIC. It refers to the
request shown in the task data instead of quoting it, because a rubric is read by the judge as
instructions and transcript text must only ever reach a model framed as data.

Safety. Sessions are redacted at harvest; every text taken from them here passes through a
`Redactor` again (idempotent, cheap) before it reaches a task or a prompt. Every transcript text
in a prompt is fenced with `prompts.data_block` (fence markers inside it are defused) and the
prompts say it is data, never instructions. `ParseError` from a reply is recorded and never
crashes mining; `BackendError` and `BudgetExceeded` propagate as in every other stage.
Optimizer calls are made in the role MINE_ROLE ("mine"), so the ledger shows what mining cost.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError

from skillsleep.core.errors import ParseError
from skillsleep.core.judges import COUNT_CHECKS, check_problem
from skillsleep.core.llm import LLM
from skillsleep.core.prompts import data_block, render, truncate
from skillsleep.core.records import Check, CheckType, Edit, Judge, Message, Record, Role, Task
from skillsleep.core.redact import Redactor
from skillsleep.core.safety import screen
from skillsleep.core.session import Session, Turn

__all__ = [
    "CHECK_HELP",
    "DEFAULT_RUBRIC",
    "MINE_ROLE",
    "Evidence",
    "Instance",
    "Intake",
    "MineResult",
    "MinedTask",
    "Outcomes",
    "extract_instances",
    "judge_messages",
    "merge_messages",
    "mine",
    "normalize",
    "similarity",
    "task_id",
    "validate_check",
]

# "mine" is not in records.Role yet (the ledger validates roles): mining is billed as "reflect".
MINE_ROLE: Role = "mine"

GROUP_THRESHOLD = 0.7  # near-duplicates: one task
RELATED_THRESHOLD = 0.55  # near each other: distinct tasks, one cluster (one split)
MAX_COMPARED = 2500  # distinct normalized texts compared pairwise (the most frequent ones)
NORMALIZE_CHARS = 1000
MERGE_REQUESTS = 60  # lexical groups shown to the optimizer for the paraphrase merge
MERGE_CHARS = 400
REQUEST_CHARS = 1500
WORDING_CHARS = 300
EVIDENCE_CHARS = 400
JUDGE_WORDINGS = 3
JUDGE_EVIDENCE = 8
TASK_EVIDENCE = 20
MAX_CHECKS = 6
COPIED_MIN_CHARS = 8  # shorter texts (a word like "JSON") are not taken for a copy of the instructions
RUBRIC_CHARS = 800
REPLY_TOKENS = 1024

DEFAULT_RUBRIC = (
    "The response accomplishes the user's request shown in the task data: it does what was asked, "
    "completely and correctly, in the form the user asked for, without changes nobody asked for."
)

Outcome = Literal["success", "failure", "unknown"]
EvidenceKind = Literal["correction", "repeat", "revert", "interrupt", "error"]

# --- records -----------------------------------------------------------------------------------


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


class MinedTask(Record):
    """A task and what mining knows about it: how often, how it went, what the user corrected."""

    task: Task
    cluster: str  # tasks sharing a cluster are near-duplicates: keep them in one split
    recurrence: int  # instances
    sessions: int  # distinct sessions
    recurrent: bool  # recurrence >= min_recurrence
    priority: float
    outcomes: Outcomes
    instances: list[Instance]
    evidence: list[Evidence] = Field(default_factory=list)  # distinct, up to TASK_EVIDENCE
    wordings: list[str] = Field(default_factory=list)  # distinct requests, most frequent first
    merged_from: int = 1  # lexical groups the optimizer merged into this task
    judge_source: Literal["optimizer", "default"] = "default"
    dropped_checks: list[str] = Field(default_factory=list)


class Intake(Record):
    """What extraction read, used and skipped (by reason)."""

    sessions: int = 0
    sessions_mined: int = 0  # sessions that gave at least one intent
    sessions_skipped: dict[str, int] = Field(default_factory=dict)
    prompts: int = 0  # user prompts and commands read in non-subagent sessions
    intents: int = 0
    prompts_skipped: dict[str, int] = Field(default_factory=dict)
    evidence: dict[str, int] = Field(default_factory=dict)  # follow-ups / signals used as evidence


class MineResult(Record):
    """Ranked tasks, the clusters the splitter must respect, and what happened on the way."""

    tasks: list[MinedTask] = Field(default_factory=list)
    clusters: dict[str, list[str]] = Field(default_factory=dict)  # cluster id → task ids
    intake: Intake = Field(default_factory=Intake)
    groups: int = 0  # lexical groups
    merged: int = 0  # lexical groups merged into another by the optimizer
    cut: int = 0  # tasks beyond max_tasks
    dropped_checks: int = 0
    problems: list[str] = Field(default_factory=list)

    def cluster_of(self, task_id: str) -> str:
        for mined in self.tasks:
            if mined.task.id == task_id:
                return mined.cluster
        raise KeyError(f"no mined task {task_id!r}; known: {', '.join(m.task.id for m in self.tasks) or 'none'}")

    def near_duplicates(self, task_id: str) -> list[str]:
        """The other tasks in `task_id`'s cluster (keep them in the same split)."""
        return [t for t in self.clusters[self.cluster_of(task_id)] if t != task_id]


# --- normalization and similarity --------------------------------------------------------------

_SUBS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:https?|ftp|file|ssh)://\S+"), " <url> "),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), " <id> "),
    (re.compile(r"`[^`\n]{1,120}`|\"[^\"\n]{1,120}\"|(?<!\w)'[^'\n]{1,120}'(?!\w)|“[^”\n]{1,120}”"), " <str> "),
    (re.compile(r"(?<!\S)[@~.]?[\w.-]*[/\\][\w./\\-]*"), " <path> "),
    (re.compile(r"\b[\w-]+(?:\.[\w-]+)*\.(?:[a-z][a-z0-9]{0,4})\b(?!\.\w)"), " <path> "),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"), " <id> "),
    (re.compile(r"(?<![\w<])[v#]?\d+(?:[.,:]\d+)*(?:st|nd|rd|th|px|ms|s|kb|mb|gb|%)?\b"), " <num> "),
    (re.compile(r"[^\w\s<>]|_"), " "),
)
# A leading slash command ("/review-pr 12", "/commit") names the command: its name stays words (the
# path pattern below would make every "/name" the same "<path>", merging distinct commands).
_COMMAND = re.compile(r"^\s*/([\w][\w:.-]*)(?=\s|$)")
_PLACEHOLDERS = frozenset({"<url>", "<id>", "<str>", "<path>", "<num>", "<cmd>"})
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "with",
        "and",
        "or",
        "is",
        "are",
        "be",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "my",
        "our",
        "your",
        "me",
        "i",
        "we",
        "you",
        "please",
        "pls",
        "can",
        "could",
        "would",
        "will",
        "should",
        "just",
        "also",
        "then",
        "now",
        "some",
        "any",
        "all",
        "by",
        "from",
        "as",
        "so",
    ]
)


def normalize(text: str) -> str:
    """The comparable form of a request: lowercase, variable parts replaced by placeholders."""
    s = _COMMAND.sub(r"<cmd> \1 ", text[:NORMALIZE_CHARS].lower(), count=1)
    for pattern, repl in _SUBS:
        s = pattern.sub(repl, s)
    return " ".join(w for w in s.split() if w not in {"<", ">"})


def _features(key: str) -> tuple[frozenset[str], frozenset[str]]:
    tokens = key.split()
    words = [w for w in tokens if w not in _STOP] or tokens
    grams = {f" {w} "[i : i + 3] for w in words if w not in _PLACEHOLDERS for i in range(len(w))}
    return frozenset(words), frozenset(grams)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def _sim(fa: tuple[frozenset[str], frozenset[str]], fb: tuple[frozenset[str], frozenset[str]]) -> float:
    return 0.5 * _overlap(fa[0], fb[0]) + 0.5 * _overlap(fa[1], fb[1])


def similarity(a: str, b: str) -> float:
    """How alike two requests are, 0–1, after `normalize` (1.0: the same normalized text)."""
    ka, kb = normalize(a), normalize(b)
    return 1.0 if ka == kb else _sim(_features(ka), _features(kb))


def task_id(key: str) -> str:
    """The stable id of a task whose representative normalized text is `key`."""
    return "mine-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


# --- intents, evidence and outcomes ------------------------------------------------------------

_HOUSEKEEPING = frozenset(
    [
        "clear",
        "exit",
        "quit",
        "compact",
        "help",
        "model",
        "resume",
        "cost",
        "status",
        "config",
        "login",
        "logout",
        "doctor",
        "memory",
        "permissions",
        "vim",
        "theme",
        "terminal-setup",
        "mcp",
        "agents",
        "hooks",
        "ide",
        "bug",
        "release-notes",
        "upgrade",
        "usage",
        "context",
        "export",
        "add-dir",
        "statusline",
        "output-style",
        "privacy-settings",
        "new",
        "approvals",
        "mention",
        "feedback",
        "fast",
        "settings",
        "plugin",
        "plugins",
        "continue",
        "fork",
        "rename",
        "tasks",
        "todos",
    ]
)
_REVERT_COMMANDS = frozenset({"undo", "rewind"})
_SKILLSLEEP_COMMANDS = frozenset({"sleep", "skillsleep:sleep"})  # /sleep in an agent, by the pack's own name too
_SKILL_MENTION = re.compile(r"^\$(sleep|skillsleep:sleep)(?:\s|$)")  # Codex: $sleep status
_COMMAND_TEXT = re.compile(r"^/([A-Za-z][\w:.\-]*)(?:\s+(.*))?$", re.S)
_MARKER_ONLY = re.compile(r"^\[[^\]\n]{0,200}\]$")

_POSITIVE = frozenset(
    [
        "thanks",
        "thank",
        "thx",
        "ty",
        "great",
        "perfect",
        "nice",
        "cool",
        "awesome",
        "excellent",
        "lgtm",
        "works",
        "worked",
        "good",
        "correct",
        "exactly",
        "appreciated",
        "approved",
        "brilliant",
        "amazing",
        "wonderful",
        "fantastic",
        "👍",
        "🎉",
        "✅",
    ]
)
_NEUTRAL = frozenset(
    [
        "ok",
        "okay",
        "k",
        "kk",
        "yes",
        "y",
        "yep",
        "yeah",
        "yup",
        "sure",
        "fine",
        "alright",
        "all",
        "right",
        "you",
        "it",
        "that",
        "this",
        "is",
        "now",
        "go",
        "on",
        "ahead",
        "continue",
        "proceed",
        "please",
        "pls",
        "do",
        "next",
        "keep",
        "going",
        "carry",
        "done",
        "sounds",
        "well",
        "job",
        "looks",
        "look",
        "much",
        "very",
        "so",
        "ship",
        "approve",
        "that's",
        "thats",
        "it's",
    ]
)
_NEUTRAL_PHRASES = frozenset({"what else", "and", "more", "go", "next step", "what next"})

_CORRECTION_START = re.compile(
    r"^(?:no\b|nope\b|nah\b|wrong\b|incorrect\b|not\b|that'?s not\b|that is not\b|this is not\b|it'?s not\b|"
    r"that'?s wrong|this is wrong|it'?s wrong|still\b|again\b|try again|revert|undo\b|roll ?back|stop\b|"
    r"wait\b|actually\b|instead\b|don'?t\b|do not\b|never\b|why did you|why are you|why did it|you forgot|"
    r"you missed|you didn'?t|you did not|you broke|you should have|i said|i asked|i told you|as i said|"
    r"please fix|fix (?:it|this|that)\b|it'?s bad|bad idea|same (?:error|problem|issue|thing)|"
    r"(?:ok|okay|good|great|nice|fine|cool|thanks|yes|yeah|sure|almost|it'?s good|looks good|that'?s good|"
    r"the (?:main )?idea is (?:fine|good))\b[^.!?\n]{0,40}?\b(?:but|however)\b)",
    re.I,
)
_CORRECTION_ANYWHERE = re.compile(
    r"\b(?:still (?:fail\w*|broken|wrong|not\b|doesn'?t|does not|the same|getting|seeing|crash\w*|error\w*)|"
    r"(?:doesn'?t|does not|didn'?t|did not|isn'?t|is not|won'?t) work\w*|not working|"
    r"(?:is|was|are|were) (?:wrong|incorrect|broken)|not what i (?:asked|wanted|meant|said)|you broke|"
    r"(?:revert|undo|roll ?back) (?:it|that|this|the|your|those|these|everything|all)\b|"
    r"(?:use|try|do) \S+(?: \S+)? instead\b|instead of\b|not acceptable|unacceptable|bad idea|"
    r"i (?:said|told you|already asked)|(?:do it|try) again\b)",
    re.I,
)
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
    if _CORRECTION_START.match(stripped) or _CORRECTION_ANYWHERE.search(stripped):
        return None
    if len(words) <= 8 and all(w in _POSITIVE or w in _NEUTRAL for w in words):
        return "positive" if any(w in _POSITIVE for w in words) else "neutral"
    if _CHOICE.match(stripped) or " ".join(words) in _NEUTRAL_PHRASES:
        return "neutral"
    return None


def _is_correction(text: str) -> bool:
    stripped = text.strip()
    return bool(_CORRECTION_START.match(stripped) or _CORRECTION_ANYWHERE.search(stripped))


def _request(turn: Turn) -> tuple[Literal["text", "housekeeping", "shell", "revert", "skillsleep"], str]:
    """What a user or command turn asks: a request text, or a command that is not one."""
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
        if _SKILL_MENTION.match(turn.text.strip()):
            return "skillsleep", ""
        found = _COMMAND_TEXT.match(turn.text.strip())
        if not found:
            return "text", turn.text
        name, args = f"/{found.group(1)}", found.group(2) or ""
    bare = name.lstrip("/").lower()
    text = f"{name} {args.strip()}".strip()
    if bare in _SKILLSLEEP_COMMANDS:
        return "skillsleep", text
    if bare in _HOUSEKEEPING:
        return "housekeeping", text
    if bare in _REVERT_COMMANDS:
        return "revert", text
    return "text", text


class _Open:
    """An instance being read: the request and what followed it."""

    def __init__(self, session: Session, prompt: str, key: str, at: datetime | None) -> None:
        self.session, self.prompt, self.key, self.at = session, prompt, key, at
        self.features = _features(key)
        self.evidence: list[Evidence] = []
        self.active = False  # the agent did something
        self.positive = False  # the user acknowledged positively
        self.last: Turn | None = None  # the last agent-side turn since the last user turn

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

    def attach(kind: EvidenceKind, text: str) -> None:
        assert current is not None
        current.evidence.append(Evidence(kind=kind, text=truncate(text, EVIDENCE_CHARS)))
        current.last = None

    for turn in session.turns:
        if turn.kind not in ("user", "command"):
            if current is None or aside:
                continue
            if turn.kind == "error" and _INTERRUPT.search(turn.text):
                attach("interrupt", "")
                continue
            current.active = current.active or turn.kind != "error"
            current.last = turn
            continue
        kind, raw = _request(turn)
        aside = kind == "skillsleep"
        if kind in ("housekeeping", "shell", "skillsleep"):
            skipped[f"{kind}_command"] += 1
            continue
        text = redactor.text(raw).strip()
        if kind == "revert":
            if current is not None:
                attach("revert", text)
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
            if _is_correction(text):
                attach("correction", text)
                continue
            if key == current.key or _sim(_features(key), current.features) >= GROUP_THRESHOLD:
                attach("repeat", text)
                continue
        if screen(Edit(op="add", content=text)) is not None:
            skipped["unsafe_intent"] += 1
            if current is not None:
                out.append(current.close(True, redactor))
                current = None
            continue
        if current is not None:
            out.append(current.close(True, redactor))
        current = _Open(session, text, key, turn.ts or session.started)
    if current is not None:
        out.append(current.close(False, redactor))
    evidence.update(e.kind for instance in out for e in instance.evidence)
    return out


# --- grouping ----------------------------------------------------------------------------------


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)  # the smaller index (the more frequent text) leads
        return True

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return [out[root] for root in sorted(out)]


def _lexical(keys: list[str]) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """Group distinct normalized texts (ordered most frequent first) → (groups, related pairs)."""
    features = [_features(k) for k in keys[:MAX_COMPARED]]
    # similarity <= 0.5 * word overlap + 0.5, and RELATED_THRESHOLD > 0.5: only pairs that share a
    # word can reach it, so the word postings give every candidate pair (an exact pruning).
    postings: dict[str, list[int]] = {}
    for i, (words, _) in enumerate(features):
        for word in words:
            postings.setdefault(word, []).append(i)
    uf = _UnionFind(len(keys))
    related: list[tuple[int, int]] = []
    for i, fi in enumerate(features):
        candidates = {j for word in fi[0] for j in postings[word] if j > i}
        for j in sorted(candidates):
            s = _sim(fi, features[j])
            if s >= GROUP_THRESHOLD:
                uf.union(i, j)
            elif s >= RELATED_THRESHOLD:
                related.append((i, j))
    return uf.groups(), related


class _Group:
    """Instances of one (lexical or merged) group, with its representative."""

    def __init__(self, instances: list[Instance]) -> None:
        self.instances = instances
        counts = Counter(i.key for i in instances)
        self.keys = counts
        self.key = min(counts, key=lambda k: (-counts[k], len(k), k))
        with_key = [i for i in instances if i.key == self.key]
        self.representative = max(with_key, key=lambda i: (_when(i), i.session_id))

    @property
    def size(self) -> int:
        return len(self.instances)


def _when(instance: Instance) -> datetime:
    return instance.at or datetime.min.replace(tzinfo=UTC)


MERGE_SCHEMA: dict[str, Any] = {
    "title": "mine_merge",
    "type": "object",
    "properties": {"groups": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}},
    "required": ["groups"],
}


def merge_messages(requests: list[tuple[str, int]]) -> list[Message]:
    """The paraphrase-merge prompt for (representative request, times asked) pairs, fenced as data."""
    parts = []
    for n, (text, size) in enumerate(requests, 1):
        times = "once" if size == 1 else f"{size} times"
        parts.append(f"Request {n} (asked {times}):\n" + data_block(f"REQUEST {n}", text, limit=MERGE_CHARS))
    user = render("mine_merge_user", count=len(requests), requests="\n\n".join(parts))
    return [Message(role="system", content=render("mine_merge_system")), Message(role="user", content=user)]


async def _merge(llm: LLM, groups: list[_Group], problems: list[str]) -> list[list[int]]:
    """Index sets (into `groups`) the optimizer says are one task; [] when the reply is unusable."""
    shown = groups[:MERGE_REQUESTS]
    try:
        messages = merge_messages([(g.representative.prompt, g.size) for g in shown])
        reply = await llm.ask_json(MINE_ROLE, messages, MERGE_SCHEMA, max_tokens=REPLY_TOKENS)
    except ParseError as exc:
        problems.append(f"paraphrase merge: the optimizer's reply could not be read ({exc}); kept the lexical groups")
        return []
    items = reply.get("groups")
    if not isinstance(items, list):
        problems.append("paraphrase merge: the reply has no list under 'groups'; kept the lexical groups")
        return []
    merges: list[list[int]] = []
    for n, item in enumerate(items, 1):
        numbers = item if isinstance(item, list) else None
        if numbers is None or not all(isinstance(x, int) and not isinstance(x, bool) for x in numbers):
            problems.append(f"paraphrase merge: group {n} is not a list of request numbers ({item!r}); ignored")
            continue
        bad = sorted({x for x in numbers if not 1 <= x <= len(shown)})
        members = sorted({x - 1 for x in numbers if 1 <= x <= len(shown)})
        if bad:
            problems.append(f"paraphrase merge: group {n} names requests that do not exist ({bad}); those ignored")
        if len(shown) >= 4 and len(members) > max(3, len(shown) // 2):
            problems.append(
                f"paraphrase merge: group {n} joins {len(members)} of {len(shown)} requests into one task, "
                "which no real set of paraphrases does; ignored (a weak optimizer model lumps requests "
                "together: use a stronger --optimizer-model)"
            )
            continue
        if len(members) >= 2:
            merges.append(members)
    return merges


# --- judges ------------------------------------------------------------------------------------

_CHECK_TYPES: tuple[str, ...] = get_args(CheckType)
CHECK_HELP: dict[str, str] = {
    "contains": "the answer contains the text `value`",
    "not_contains": "the answer does not contain the text `value`",
    "regex": "some part of the answer matches the regular expression `value`",
    "not_regex": "no part of the answer matches the regular expression `value`",
    "starts_with": "the answer starts with the text `value`",
    "ends_with": "the answer ends with the text `value`",
    "last_line_regex": "the answer's last line matches the regular expression `value` in full",
    "section_present": "the answer has a markdown heading containing `value`",
    "max_chars": "the answer has at most `value` characters",
    "min_chars": "the answer has at least `value` characters",
    "max_lines": "the answer has at most `value` lines",
    "max_words": "the answer has at most `value` words",
    "min_words": "the answer has at least `value` words",
    "json_valid": "the answer is valid JSON (value null)",
    "tool_called": "the agent called the tool named `value` (for example Bash, Edit, Write)",
}

JUDGE_SCHEMA: dict[str, Any] = {
    "title": "mine_judge",
    "type": "object",
    "properties": {
        "checks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": list(_CHECK_TYPES)},
                    "value": {"type": ["string", "integer", "null"]},
                    "case_sensitive": {"type": "boolean"},
                    "feedback": {"type": "string"},
                },
                "required": ["type", "value", "feedback"],
            },
        },
        "rubric": {"type": "string"},
    },
    "required": ["checks", "rubric"],
}


def _unsafe(text: str) -> str | None:
    refusal = screen(Edit(op="add", content=text))
    return None if refusal is None else f"{refusal.rule}: “{refusal.matched}”"


def validate_check(raw: object) -> tuple[Check | None, str]:
    """A model's check → a Check that `core.judges` can run, or None and why it was dropped."""
    if not isinstance(raw, dict):
        return None, f"not an object: {raw!r}"
    kind, value = raw.get("type"), raw.get("value")
    if kind not in _CHECK_TYPES:
        return None, f"unknown check type {kind!r} (supported: {', '.join(_CHECK_TYPES)})"
    if kind in COUNT_CHECKS and isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())  # models often quote numbers
    elif kind == "json_valid":
        value = None
    sensitive = raw.get("case_sensitive", True)
    if not isinstance(sensitive, bool):
        return None, f"case_sensitive must be true or false, got {sensitive!r}"
    feedback = raw.get("feedback")
    feedback = " ".join(feedback.split()) if isinstance(feedback, str) and feedback.strip() else None
    try:
        check = Check(type=kind, value=value, case_sensitive=sensitive, feedback=feedback)
    except ValidationError:
        return None, f"{kind} needs text or a whole number as its value, got {value!r}"
    problem = check_problem(check)
    if problem:
        return None, f"the {kind} check {problem}"
    for text in (value if isinstance(value, str) else "", feedback or ""):
        problem = _unsafe(text) if text else None
        if problem:
            return None, f"{kind} check refused by the safety screen ({problem})"
    return check, ""


def judge_messages(wordings: list[str], evidence: list[Evidence], outcomes: Outcomes) -> list[Message]:
    """The judge-writing prompt: the wordings (the representative first), corrections and errors
    fenced as data."""
    others = wordings[1 : 1 + JUDGE_WORDINGS]
    if others:
        blocks = "\n".join(data_block(f"WORDING {n}", w, limit=WORDING_CHARS) for n, w in enumerate(others, 2))
        wording_text = "Other wordings of the same request:\n" + blocks
    else:
        wording_text = "(no other wordings)"
    shown = evidence[:JUDGE_EVIDENCE]
    if shown:
        lines = []
        for n, e in enumerate(shown, 1):
            head = Evidence(kind=e.kind).line()
            block = ":\n" + data_block(f"{e.kind.upper()} {n}", e.text, limit=EVIDENCE_CHARS) if e.text else ""
            lines.append(f"{n}. {head}{block}")
        corrections = "\n".join(lines)
    else:
        corrections = "(none recorded: no correction, repeated ask, revert or error followed the request)"
    outcome_text = (
        f"{outcomes.total} attempt(s): {outcomes.success} succeeded, {outcomes.failure} failed, "
        f"{outcomes.unknown} without a clear outcome."
    )
    user = render(
        "mine_judge_user",
        request=data_block("REQUEST", wordings[0] if wordings else "", limit=REQUEST_CHARS),
        wordings=wording_text,
        corrections=corrections,
        outcomes=outcome_text,
    )
    check_types = "\n".join(f"   - {name}: {CHECK_HELP.get(name, name)}" for name in _CHECK_TYPES)
    system = render("mine_judge_system", check_types=check_types)
    return [Message(role="system", content=system), Message(role="user", content=user)]


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


class _Copied:
    """Whether a text of the optimizer's judge reply is copied from the judge-writing instructions
    (their examples: "no, use X", the sample feedback) rather than from the user's words. A small
    model returns the prompt's example feedback and rubric for nearly every task; such text is
    never a judge (a judge comes from what the user asked or corrected, never from a prompt's
    examples), and feedback like it would send the reflection after a requirement nobody made."""

    def __init__(self, instructions: str, users_words: Iterable[str]) -> None:
        self.instructions = _flat(instructions)
        self.users_words = _flat("\n".join(users_words))

    def __call__(self, text: str) -> bool:
        flat = _flat(text).strip(" .")
        return len(flat) >= COPIED_MIN_CHARS and flat in self.instructions and flat not in self.users_words


async def _judge(llm: LLM, mined: MinedTask, problems: list[str]) -> tuple[Judge, bool, list[str]]:
    """(judge, came from the optimizer, dropped checks) for one task."""
    messages = judge_messages(mined.wordings, mined.evidence, mined.outcomes)
    where = f"judge for {mined.task.id}"
    try:
        reply = await llm.ask_json(MINE_ROLE, messages, JUDGE_SCHEMA, max_tokens=REPLY_TOKENS, cache_system=True)
    except ParseError as exc:
        problems.append(f"{where}: the optimizer's reply could not be read ({exc}); the default rubric is used")
        return Judge(rubric=DEFAULT_RUBRIC), False, []
    copied = _Copied(messages[0].content, [*mined.wordings, *(e.text for e in mined.evidence)])
    copies: list[str] = []
    raw_checks = reply.get("checks", [])
    dropped: list[str] = []
    if not isinstance(raw_checks, list):
        dropped.append(f"'checks' is not a list: {raw_checks!r}")
        raw_checks = []
    checks: list[Check] = []
    for n, raw in enumerate(raw_checks, 1):
        check, why = validate_check(raw)
        if check is not None and isinstance(check.value, str) and copied(check.value):
            check, why = (
                None,
                f"its value {check.value!r} is copied from the judge-writing instructions, not the user's words",
            )
            copies.append(f"check {n}")
        if check is not None and check.feedback and copied(check.feedback):
            check = check.model_copy(update={"feedback": None})  # the scorer's own feedback names the requirement
            copies.append(f"the feedback of check {n}")
        if check is None:
            dropped.append(f"check {n}: {why}")
        elif len(checks) >= MAX_CHECKS:
            dropped.append(f"check {n}: more than {MAX_CHECKS} checks")
        else:
            checks.append(check)
    rubric = reply.get("rubric")
    rubric = " ".join(rubric.split()) if isinstance(rubric, str) and rubric.strip() else None
    if rubric is not None and copied(rubric):
        copies.append("the rubric")
        rubric = None
    if copies:
        problems.append(
            f"{where}: the optimizer copied the judge-writing instructions instead of the user's words "
            f"into {', '.join(copies)}; dropped"
        )
    if rubric is not None:
        problem = _unsafe(rubric)
        if problem:
            problems.append(f"{where}: the rubric was refused by the safety screen ({problem})")
            rubric = None
        else:
            rubric = truncate(rubric, RUBRIC_CHARS)
    if not checks and rubric is None:
        return Judge(rubric=DEFAULT_RUBRIC), False, dropped
    return Judge(checks=checks, rubric=rubric), True, dropped


# --- mining ------------------------------------------------------------------------------------


async def mine(
    sessions: Iterable[Session],
    *,
    llm: LLM | None = None,
    min_recurrence: int = 2,
    max_tasks: int | None = 50,
    redactor: Redactor | None = None,
    judges: bool = True,
) -> MineResult:
    """Mine the recurring tasks in `sessions`: ranked, judged, with clusters for the splitter.

    `judges=False` leaves every task with the default rubric (judge the ones you keep later with
    `judge_tasks`, which costs one optimizer call per task)."""
    if min_recurrence < 1:
        raise ValueError(f"min_recurrence must be at least 1, got {min_recurrence}")
    if max_tasks is not None and max_tasks < 0:
        raise ValueError(f"max_tasks must be >= 0 or None (no limit), got {max_tasks}")
    instances, intake = extract_instances(sessions, redactor=redactor)
    result = MineResult(intake=intake)
    if not instances:
        return result

    key_counts = Counter(i.key for i in instances)
    keys = sorted(key_counts, key=lambda k: (-key_counts[k], k))
    lexical, related = _lexical(keys)
    by_key: dict[str, list[Instance]] = {}
    for instance in instances:
        by_key.setdefault(instance.key, []).append(instance)
    groups = [_Group([i for k in members for i in by_key[keys[k]]]) for members in lexical]
    groups.sort(key=lambda g: (-g.size, g.key))
    result.groups = len(groups)
    group_of_key = {k: n for n, g in enumerate(groups) for k in g.keys}

    final = _UnionFind(len(groups))
    if llm is not None and len(groups) >= 2:
        for members in await _merge(llm, groups, result.problems):
            for other in members[1:]:
                result.merged += final.union(members[0], other)

    ranked: list[tuple[MinedTask, _Group, list[int]]] = []
    for members in final.groups():
        merged = _Group([i for m in members for i in groups[m].instances])
        ranked.append((_mined(merged, len(members), min_recurrence), merged, members))
    ranked.sort(key=lambda r: (not r[0].recurrent, -r[0].priority, -r[0].sessions, r[0].task.id))
    kept = ranked if max_tasks is None else ranked[:max_tasks]
    result.cut = len(ranked) - len(kept)

    # Clusters: tasks joined by a related pair of wordings (over every task; kept ones listed).
    position = {m: n for n, (_, _, members) in enumerate(ranked) for m in members}
    links = [(position[group_of_key[keys[a]]], position[group_of_key[keys[b]]]) for a, b in related]
    result.clusters = _clusters([m for m, _, _ in kept], len(ranked), links)

    result.tasks = [m for m, _, _ in kept]
    if llm is not None and judges:
        result.dropped_checks += await judge_tasks(llm, result.tasks, result.problems)
    return result


async def judge_tasks(llm: LLM, tasks: list[MinedTask], problems: list[str]) -> int:
    """Give each task a judge written by the optimizer (concurrently); returns the checks dropped.
    A reply that cannot be read leaves the default rubric and is named in `problems`."""
    verdicts = await asyncio.gather(*(_judge(llm, m, problems) for m in tasks))
    dropped_total = 0
    for mined_task, (judge, from_optimizer, dropped) in zip(tasks, verdicts, strict=True):
        mined_task.task.judge = judge
        mined_task.judge_source = "optimizer" if from_optimizer else "default"
        mined_task.dropped_checks = dropped
        dropped_total += len(dropped)
    return dropped_total


def _clusters(kept: list[MinedTask], total: int, links: list[tuple[int, int]]) -> dict[str, list[str]]:
    """Join ranked tasks (positions 0..total-1, `kept` first) along `links`; set each kept
    task's cluster and return cluster id → kept task ids."""
    uf = _UnionFind(total)
    for a, b in links:
        uf.union(a, b)
    by_root: dict[int, list[str]] = {}
    for n, mined in enumerate(kept):
        by_root.setdefault(uf.find(n), []).append(mined.task.id)
    names = {
        root: "cluster-" + hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:12]
        for root, ids in by_root.items()
    }
    for n, mined in enumerate(kept):
        mined.cluster = names[uf.find(n)]
    return {names[root]: ids for root, ids in by_root.items()}


def _mined(group: _Group, merged_from: int, min_recurrence: int) -> MinedTask:
    outcomes = Outcomes(**Counter(i.outcome for i in group.instances))
    evidence: list[Evidence] = []
    for instance in sorted(group.instances, key=lambda i: (_when(i), i.session_id), reverse=True):
        for e in instance.evidence:
            if e not in evidence and len(evidence) < TASK_EVIDENCE:
                evidence.append(e)
    texts = Counter(i.prompt for i in group.instances)
    rep = group.representative.prompt
    wordings = [rep] + [t for t in sorted(texts, key=lambda t: (-texts[t], t)) if t != rep]
    sources = list(dict.fromkeys(i.source for i in sorted(group.instances, key=lambda i: (_when(i), i.source))))
    task = Task(
        id=task_id(group.key),
        prompt=rep,
        workdir=group.representative.project,
        judge=Judge(rubric=DEFAULT_RUBRIC),
        origin="real",
        provenance=sources,
    )
    recurrence = group.size
    return MinedTask(
        task=task,
        cluster="",
        recurrence=recurrence,
        sessions=len(sources),
        recurrent=recurrence >= min_recurrence,
        priority=recurrence * (1 + outcomes.failure_rate),
        outcomes=outcomes,
        instances=sorted(group.instances, key=lambda i: (_when(i), i.source)),
        evidence=evidence,
        wordings=wordings,
        merged_from=merged_from,
    )
