"""Literal format lines quoted as ONE instruction, with no model call.

A small optimizer writes the lines a reply must hold (`## Findings`, `Score:`, a fixed sign-off
line) instead of the rule that asks for them; headings are refused as new sections, and a bare
label line is not read as a rule by a small target. When the judges of the batch's failing tasks
all name such lines, every one of them, in any number and any mix, inside one add or across the
step's adds and replaces, becomes one instruction quoting each:

    add "## Findings\\nScore:"   →   add "Every reply must include the heading `## Findings` and a
                                         line starting with `Score:`."

demands()         what every failing task's judge names: a section (`section_present`), a verbatim
                  text (`contains`, `starts_with`, `ends_with`), a pattern (`regex`,
                  `last_line_regex`), JSON (`json_valid`)
quote_literals()  a step's edits with the named literal lines of its adds and replaces gathered into
                  one instruction, in the first replace that has any (else the first add); the
                  prose lines of each edit stay, an add left empty is dropped and a replace left
                  empty deletes its target; the instruction's support is theirs joined
quote_one()       one edit (a repair's rewrite) with its own named literal lines quoted
format_rule()     the rewrite a refused heading asks for whatever the judges name: every heading
                  and label line of the content quoted (core/train/edits.py names it in its reason)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import Field

from skillsleep.core.shared.records import Edit, Record, Task
from skillsleep.core.train.aggregate import joined
from skillsleep.core.train.literals import (
    AT_END,
    AT_START,
    INSTRUCTION_VERB,
    JSON_SHAPE,
    LABEL_WORDS,
    TEMPLATE_LINE,
    literal_rule,
)

_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_HEADING = re.compile(r"^#{1,6}\s+(?P<text>\S.*?)\s*#*$")
_LABEL = re.compile(rf"^(?P<label>{LABEL_WORDS}):\s*$")  # `Score:`, nothing after the colon
# `Verdict: valid`: a label and a short value (an example of it, often one task's answer)
_VALUED = re.compile(rf"^(?P<label>{LABEL_WORDS}):\s+\S+(?:\s+\S+){{0,3}}$")
_ESCAPED = re.compile(r"\\([^\w\s])")
_PREFIX = re.compile(r"^\^?((?:\\[^\w\s]|[^\\.^$*+?{}\[\]()|])+)")
# a group of plain alternatives right after the prefix: `(plausible|implausible)`, `(?:yes|no)`
_CHOICES = re.compile(r"^\((?:\?:)?(?P<values>[A-Za-z][\w -]*(?:\|[A-Za-z][\w -]*)+)\)")
_TEXTS = frozenset({"contains", "starts_with", "ends_with"})
_PATTERNS = frozenset({"regex", "last_line_regex"})
LITERAL_CHECKS = _TEXTS | _PATTERNS | {"section_present", "json_valid"}  # the check types `demands` reads


class Demands(Record):
    """What the judges of a batch's failing tasks all name (`demands()`); empty names nothing.
    `every` names every heading and label line (the rewrite a refused heading asks for)."""

    sections: frozenset[str] = Field(default_factory=frozenset)  # `section_present` names
    texts: frozenset[str] = Field(default_factory=frozenset)  # verbatim one-line texts
    patterns: frozenset[str] = Field(default_factory=frozenset)  # regular expressions' source
    json_valid: bool = False  # a `json_valid` check
    every: bool = False

    def piece(self, line: str) -> str | None:
        """How an instruction names `line` when it is a literal format line the judges name
        ("the heading `## Findings`", "a line starting with `Score:`", "the line `…`"), else None.
        A label with a short value (`Verdict: valid`, `ANSWER: True`) is named by its label alone:
        the value is one reply's (often one task's answer), the label is what every reply needs;
        when a judge's pattern lists the label's values, a label line is named by every line it
        allows (`pattern_piece`)."""
        text = _LIST_MARKER.sub("", line.strip(), count=1)
        if not text or "`" in text:
            return None
        if heading := _HEADING.match(text):
            named = self.every or text in self.texts
            named = named or any(s.casefold() in heading.group("text").casefold() for s in self.sections)
            return f"the heading `{text}`" if named else None
        label = TEMPLATE_LINE.match(text) or _LABEL.match(text)
        word = label.group("label") if label is not None and not INSTRUCTION_VERB.match(label.group("label")) else None
        if label is not None and word is not None and (self.every or self._names_label(word)):
            if (allowed := self._choices(word)) is not None:
                return allowed
            return f"the line `{text}`" if label.re is TEMPLATE_LINE else f"a line starting with `{text}`"
        if text in self.texts:
            return f"the line `{text}`"
        valued = _VALUED.match(text)
        lead = valued.group("label") if valued is not None else ""
        if lead and not INSTRUCTION_VERB.match(lead) and self._names_label(lead):
            # the label the judges name, without one reply's value (or every value their pattern allows)
            return self._choices(lead) or f"a line starting with `{lead}:`"
        return f"JSON shaped like `{text}`" if self.json_valid and JSON_SHAPE.match(text) else None

    def _choices(self, label: str) -> str | None:
        """The judges' pattern for `label` as a piece quoting every line it allows, when one does."""
        lead = f"{label}:"
        return next(
            (pattern_piece(p) for p in sorted(self.patterns) if (c := choices(p)) and c[0].startswith(lead)), None
        )

    def _names_label(self, label: str) -> bool:
        lead = f"{label}:"
        return any(t.strip().startswith(lead) for t in self.texts) or any(
            lead in p or re.escape(lead) in p for p in self.patterns
        )


def demands(tasks: Iterable[Task]) -> Demands:
    """What every one of `tasks` (the batch's failing tasks) names in its judge's checks."""
    named: list[set[tuple[str, str]]] = []
    for task in tasks:
        mine: set[tuple[str, str]] = set()
        for check in task.judge.checks:
            value = check.value if isinstance(check.value, str) else ""
            if check.type == "section_present" and value.strip():
                mine.add(("section", value.strip()))
            elif check.type in _TEXTS and value.strip() and "\n" not in value:
                mine.add(("text", value.strip()))
            elif check.type in _PATTERNS and value:
                mine.add(("pattern", value))
            elif check.type == "json_valid":
                mine.add(("json", ""))
        named.append(mine)
    common = set.intersection(*named) if named else set()
    return Demands(
        sections=frozenset(v for k, v in common if k == "section"),
        texts=frozenset(v for k, v in common if k == "text"),
        patterns=frozenset(v for k, v in common if k == "pattern"),
        json_valid=("json", "") in common,
    )


def literal_prefix(pattern: str) -> str | None:
    """The literal text a regular expression starts with (`ANSWER: .+` → `ANSWER:`), when it names a
    label or heading (a letter, and a colon or a leading #); else None."""
    match = _PREFIX.match(pattern)
    if match is None:
        return None
    rest, text = pattern[match.end() :], match.group(1)
    if rest[:1] in ("?", "*", "{"):
        text = text[:-1]  # the last character is optional
    text = _ESCAPED.sub(r"\1", text).strip()
    if "`" in text or not re.search(r"[A-Za-z]", text) or not (":" in text or text.startswith("#")):
        return None
    return text


def choices(pattern: str) -> list[str] | None:
    """The lines a pattern allows when it is a literal label and a group of plain alternatives
    (`^Label: (plausible|implausible)\\.?$` → `Label: plausible`, `Label: implausible`); else None."""
    match, prefix = _PREFIX.match(pattern), literal_prefix(pattern)
    if match is None or prefix is None or (group := _CHOICES.match(pattern[match.end() :])) is None:
        return None
    lead = _ESCAPED.sub(r"\1", match.group(1)).lstrip()  # the label as written, with its space
    return [f"{lead}{value.strip()}" for value in group.group("values").split("|")]


def pattern_piece(pattern: str) -> str | None:
    """How an instruction names a line a judge's pattern requires: each allowed line quoted when it
    names them ("a line `Label: plausible` or `Label: implausible`": the label alone leaves a small
    target to guess the values), else its literal prefix ("a line starting with `Score:`"), else None."""
    if lines := choices(pattern):
        quoted = [f"`{line}`" for line in lines]
        return f"a line {', '.join(quoted[:-1])} or {quoted[-1]}"
    prefix = literal_prefix(pattern)
    return f"a line starting with `{prefix}`" if prefix else None


def instruction(pieces: Sequence[str], rationale: str = "") -> str:
    """One sentence quoting every piece; a single piece starts or ends the reply as `rationale` says."""
    if len(pieces) == 1 and AT_END.search(rationale):
        return f"End every reply with {pieces[0]}."
    if len(pieces) == 1 and AT_START.search(rationale):
        return f"Start every reply with {pieces[0]}."
    listed = pieces[0] if len(pieces) == 1 else f"{', '.join(pieces[:-1])} and {pieces[-1]}"
    return f"Every reply must include {listed}."


class _Parts(Record):
    """One edit's content as its prose lines, the literal pieces it names, and where the first was."""

    prose: list[str]
    pieces: list[str]
    at: int


def _parts(edit: Edit, demands: Demands) -> _Parts | None:
    if edit.op == "delete" or not (edit.content or "").strip():
        return None
    return _lines_parts((edit.content or "").strip("\n").split("\n"), demands)


def _lines_parts(lines: list[str], demands: Demands) -> _Parts | None:
    lines = [line for line in lines if line.strip()]
    if any(line.lstrip().startswith(("```", "~~~")) for line in lines):
        return None  # a fenced block quotes its lines already
    named = [demands.piece(line) for line in lines]
    if not any(named):
        return None
    prose = [line for line, piece in zip(lines, named, strict=True) if piece is None]
    at = next(i for i, piece in enumerate(named) if piece)
    return _Parts(prose=prose, pieces=[p for p in named if p], at=at)


def _with(parts: _Parts, rule: str) -> str:
    lines = list(parts.prose)
    lines.insert(min(parts.at, len(lines)), rule)
    return "\n".join(lines)


def quote_one(edit: Edit, demands: Demands) -> Edit:
    """`edit` with its named literal lines quoted as one instruction (a lone template line without
    a judge naming it as `literal_rule` quotes it), or as it is."""
    parts = _parts(edit, demands)
    if parts is None:
        return literal_rule(edit) or edit
    rule = instruction(list(dict.fromkeys(parts.pieces)), edit.rationale)
    return edit.model_copy(update={"content": _with(parts, rule)})


def quote_literals(edits: list[Edit], demands: Demands) -> list[Edit]:
    """`edits` with the named literal lines of every add and replace (skill defects) gathered into
    one instruction (see the module's docstring); every other edit as `quote_one` leaves it."""
    parts = {i: p for i, e in enumerate(edits) if e.kind == "skill_defect" and (p := _parts(e, demands))}
    if not parts:
        return [quote_one(e, demands) for e in edits]
    host = next((i for i in parts if edits[i].op == "replace"), min(parts))
    pieces = list(dict.fromkeys(piece for i in sorted(parts) for piece in parts[i].pieces))
    givers = [edits[i] for i in sorted(parts)]
    rationale = "; ".join(dict.fromkeys(e.rationale for e in givers if e.rationale))
    out: list[Edit] = []
    for i, edit in enumerate(edits):
        if i == host:
            rule = instruction(pieces, edit.rationale if len(givers) == 1 else rationale)
            support = joined(givers) if len(givers) > 1 else {}
            out.append(edit.model_copy(update={"content": _with(parts[i], rule), "rationale": rationale, **support}))
        elif i not in parts:
            out.append(quote_one(edit, demands))
        elif parts[i].prose:
            out.append(edit.model_copy(update={"content": "\n".join(parts[i].prose)}))
        elif edit.op == "replace":
            out.append(edit.model_copy(update={"op": "delete", "content": None}))
    return out


def format_rule(lines: list[str]) -> str | None:
    """`lines` (an edit's content that adds a heading) with every heading and label line quoted as
    one instruction, the other lines kept: the rewrite the section rule's refusal names. None when
    there is nothing to quote or the content holds a fenced block."""
    parts = _lines_parts(lines, Demands(json_valid=True, every=True))
    return None if parts is None else _with(parts, instruction(list(dict.fromkeys(parts.pieces))))
