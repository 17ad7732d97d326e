"""Bounded edits: ADD / DELETE / REPLACE single lines of a skill's editable body.

`apply_edits` never raises for a bad edit: an edit that cannot be applied within the bounds is
skipped, as a `RejectedEdit` of stage "apply" whose reason is in plain words the optimizer can act
on next time. The rules:

- Targets match one body line exactly, ignoring trailing whitespace. When no line matches
  exactly, a second try also ignores leading whitespace and a leading list marker (`-`, `*`,
  `+`, `1.`, `1)`) on both sides; it is used only when exactly one editable line matches.
- New lines read like the skill (`skill_lines.in_style`): an added line takes the list marker of
  its neighbours in the section, or none where they are plain; a replacement takes the style of
  the line it replaces.
- No line is said twice (`skill_lines.key`: marker, spacing, case and a final '.' aside): an edit
  whose line the skill already has, anywhere, is skipped; a rule that lands in the body takes its
  reminder out of the appendix, and a reminder the body already states is skipped.
- Lines in protected regions (and the region markers) are never touched, nor is the frontmatter
  unless the user opted in (`[edits] edit_frontmatter = true`, `_frontmatter_edit`).
- Edits add no sections: content with a markdown heading line is skipped (its reason names the
  rewrite to make instead, `named_fix`: every heading and label line of the content quoted as one
  instruction), and heading lines cannot be deleted or replaced. A heading inside a fenced code
  block or an inline code span is literal text, not a section (a rule about the reply's format
  quotes it: Start every reply with `## Summary`); content that opens a code fence must close it.
- An edit replaces one line, never the whole skill (target "SKILL", or content starting with the
  skill's own title): such an edit is skipped with a reason that says to propose one line.
- ADD writes after `target` when it is found in the editable body, otherwise at the end of the
  editable body (before the protected regions).
- `kind="execution_lapse"` edits leave the body alone: their content becomes a note in the
  protected appendix region (de-duplicated, the newest `MAX_NOTES` kept).
- Edits apply in order (a later edit sees the earlier ones); only the first `max_edits` count.

`structure_problems` checks the same rules on text: a file made of some of a proposal's line
changes (`adopt --edits`) keeps the frontmatter, each protected region and the headings as they
were or as proposed, never a mix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from skillsleep.core.document.sections import headings, unclosed_fence
from skillsleep.core.document.skill import REGIONS, RegionName, Skill
from skillsleep.core.document.skill_lines import countable_lines, in_style, key, neighbours
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import RejectedEdit
from skillsleep.core.train.quoting import format_rule
from skillsleep.core.train.reduce import whole_skill

MAX_NOTES = 20

_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_REGION_MARKER = "<!-- skillsleep:"
_INSTEAD = "instead: "  # a refusal that names its fix: "… instead: «the content to write»"
_NAMED_FIX = re.compile(rf"{_INSTEAD}«(.*)»", re.S)


class EditLimits(BaseModel):
    """Bounds on one application of edits (the textual step size)."""

    model_config = ConfigDict(extra="forbid")

    max_edits: int = Field(default=8, ge=0)
    max_content_chars: int = Field(default=500, ge=1)
    max_content_lines: int = Field(default=4, ge=1)
    max_skill_chars: int | None = Field(default=None, ge=1)
    edit_frontmatter: bool = False  # the user opted in: replace and delete may change frontmatter lines


@dataclass(frozen=True)
class EditResult:
    """The edited skill, the edits applied, and the edits skipped with the reason why; `moot` are
    the skipped ones that refuse nothing of substance (the skill already says it, or past the
    step's count of edits): no rewrite would help them."""

    skill: Skill
    applied: list[Edit] = field(default_factory=list)
    skipped: list[RejectedEdit] = field(default_factory=list)
    moot: list[Edit] = field(default_factory=list)

    def refusals(self) -> list[RejectedEdit]:
        """The skipped edits that are not moot: the ones a rewrite can save."""
        return [r for r in self.skipped if not any(r.edit is m for m in self.moot)]


class _Skip(Exception):
    """An edit outside the bounds; the message is the reason shown to the optimizer."""


class _Moot(_Skip):
    """An edit that changes nothing: the skill already says it."""


def apply_edits(skill: Skill, edits: list[Edit], limits: EditLimits) -> EditResult:
    """Apply `edits` in order within `limits`; bad edits are skipped with a reason, never raised."""
    current = skill
    applied: list[Edit] = []
    skipped: list[RejectedEdit] = []
    moot: list[Edit] = []
    for i, edit in enumerate(edits):
        if i >= limits.max_edits:
            why = f"only the first {limits.max_edits} edits of a step are applied"
            skipped.append(RejectedEdit(edit=edit, stage="apply", reason=why))
            moot.append(edit)
            continue
        try:
            new = _apply_one(current, edit, limits)
            _check_size(current, new, limits)
        except _Skip as exc:
            skipped.append(RejectedEdit(edit=edit, stage="apply", reason=str(exc)))
            moot += [edit] if isinstance(exc, _Moot) else []
            continue
        current = new
        applied.append(edit)
    return EditResult(skill=current, applied=applied, skipped=skipped, moot=moot)


def _apply_one(skill: Skill, edit: Edit, limits: EditLimits) -> Skill:
    _refuse_whole_skill(skill, edit)
    if edit.kind == "execution_lapse":
        return _add_note(skill, edit, limits)
    lines = skill.body.split("\n")
    protected = _protected(skill, lines)
    if limits.edit_frontmatter and edit.op != "add" and (front := _frontmatter_edit(skill, lines, edit, limits)):
        return front
    if edit.op == "add":
        new = _content_lines(edit, limits)
        at = _anchor(skill, lines, protected, edit.target)
        at, new = _end_of_body(lines, protected, new) if at is None else (at + 1, new)
        new = in_style(new, *neighbours(lines, at, protected))
        _refuse_duplicate(skill, lines, new)
        lines[at:at] = new
    elif edit.op == "delete":
        at, _ = _find(skill, lines, protected, edit.target, "delete")
        if at in _heading_indexes(lines):
            raise _Skip(f"edits may not delete whole sections; {_q(lines[at])} is a section heading")
        del lines[at]
        if 0 < at < len(lines) and not lines[at - 1].strip() and not lines[at].strip():
            del lines[at]  # do not leave two blank lines where the deleted line was
    else:
        new = _content_lines(edit, limits)
        at, _ = _find(skill, lines, protected, edit.target, "replace")
        if at in _heading_indexes(lines):
            raise _Skip(f"edits may not rename or replace section headings; {_q(lines[at])} is a heading")
        new = in_style(new, None, lines[at])
        if new == [lines[at].rstrip()]:
            raise _Moot(f"the replacement is identical to the line it would replace: {_q(lines[at])}")
        _refuse_duplicate(skill, lines, new, replacing=at)
        lines[at : at + 1] = new
    _refuse_new_structure(skill.body.split("\n"), lines)
    return _without_stated_notes(Skill(skill.frontmatter + "\n".join(lines)))


def _frontmatter_edit(skill: Skill, lines: list[str], edit: Edit, limits: EditLimits) -> Skill | None:
    """With the user's opt-in: a replace or delete of exactly one frontmatter line (and no body
    line), applied there, one line for one, its `---` fences kept; None for any other edit."""
    wanted = (edit.target or "").strip("\n").rstrip()
    at = skill.frontmatter_index(wanted)
    if at is None or any(line.rstrip() == wanted for line in lines):
        return None
    new = None if edit.op == "delete" else _content_lines(edit, limits)
    if new is not None and (len(new) != 1 or new[0].strip().startswith("---") or new == [wanted]):
        raise _Skip("a frontmatter line is replaced by one other line (`key: value`), never by several or a `---`")
    return skill.with_frontmatter_line(at, None if new is None else new[0])


def _protected(skill: Skill, lines: list[str]) -> set[int]:
    """Protected region lines plus any stray skillsleep marker line (e.g. an unclosed region)."""
    out = skill.protected_line_indexes()
    out.update(i for i, line in enumerate(lines) if line.lstrip().startswith(_REGION_MARKER))
    return out


def _content_lines(edit: Edit, limits: EditLimits) -> list[str]:
    raw = (edit.content or "").replace("\r\n", "\n")
    if not raw.strip():
        raise _Skip(f"an {edit.op} edit needs content: the new line to write into the skill")
    if len(raw) > limits.max_content_chars:
        raise _Skip(
            f"the new content is {len(raw)} characters long; one edit may add at most "
            f"{limits.max_content_chars} — say it shorter or split it into separate edits"
        )
    lines = [line.rstrip() for line in raw.strip("\n").split("\n")]
    if len(lines) > limits.max_content_lines:
        raise _Skip(
            f"the new content has {len(lines)} lines; one edit may add at most "
            f"{limits.max_content_lines} — say it shorter or split it into separate edits"
        )
    _refuse_forbidden(lines)
    return lines


def _refuse_forbidden(lines: list[str]) -> None:
    if any(_REGION_MARKER in line for line in lines):
        raise _Skip("edits may not write skillsleep region markers")
    if unclosed_fence("\n".join(lines)):
        raise _Skip("the content opens a code fence (``` or ~~~) it does not close; close it in the same edit")
    for i in sorted(_heading_indexes(lines)):
        literal, fix = lines[i].strip(), format_rule(lines)
        quote = (
            f"write the rule that quotes it in backticks {_INSTEAD}«{fix}»"
            if fix is not None
            else f"quote the heading the reply must contain in backticks: Start every reply with `{literal}`"
        )
        raise _Skip(
            f"edits may not add sections (the content has the heading line {_q(literal)}); if the agent's "
            f"reply must contain that heading, {quote}; otherwise add plain lines under an existing section"
        )


def named_fix(reason: str) -> str | None:
    """The concrete rewrite a refusal's `reason` names (the content it says to write instead, in
    «»), or None: the repair tries it when its own rewrite is refused again (core/train/repair.py)."""
    found = _NAMED_FIX.search(reason)
    return found.group(1) if found and found.group(1).strip() else None


def _refuse_new_structure(before: list[str], after: list[str]) -> None:
    """Skip an edit whose lines change the skill's sections in place: a code fence that swallows
    headings below it, or a line that becomes a heading once a fence closes before it."""
    if _titles(after) != _titles(before) or unclosed_fence("\n".join(after)) > unclosed_fence("\n".join(before)):
        raise _Skip(
            "the edit would change the skill's sections (a code fence in it would hide a heading or "
            "turn a line into one); add plain lines, and close every code fence the edit opens"
        )


def _titles(lines: list[str]) -> list[str]:
    return [lines[i].strip() for i in sorted(_heading_indexes(lines))]


def _heading_indexes(lines: list[str]) -> set[int]:
    """Indexes of the markdown heading lines, not counting those inside fenced code blocks."""
    return {i for i, _, _ in headings("\n".join(lines))}


def _refuse_whole_skill(skill: Skill, edit: Edit) -> None:
    """Skip an edit that would replace the whole skill (`whole_skill`)."""
    if whole_skill(skill, edit):
        raise _Skip(
            "an edit changes one line, never the whole skill; propose one line instead: an add edit "
            "whose content is the one instruction the skill lacks, or a replace of the one line that is wrong"
        )


def _find(skill: Skill, lines: list[str], protected: set[int], target: str | None, verb: str) -> tuple[int, bool]:
    """Index of the one editable line equal to `target`, and whether the loose match was used."""
    if target is None or not target.strip():
        raise _Skip(f"a {verb} edit needs a target: the line to {verb}, copied exactly from the skill")
    wanted = target.strip("\n").rstrip()
    if "\n" in wanted:
        raise _Skip(
            f"the target must be a single line of the skill, copied exactly; it spans "
            f"{wanted.count(chr(10)) + 1} lines — make one edit per line"
        )
    exact = [i for i, line in enumerate(lines) if line.rstrip() == wanted]
    loose_wanted = _loose(wanted)
    loose = [i for i, line in enumerate(lines) if loose_wanted and _loose(line) == loose_wanted]
    for candidates, is_loose in ((exact, False), (loose, True)):
        editable = [i for i in candidates if i not in protected]
        if len(editable) == 1:
            return editable[0], is_loose
        if len(editable) > 1:
            raise _Skip(
                f"the line to {verb} appears {len(editable)} times in the skill, so it is ambiguous: "
                f"{_q(wanted)}; quote a line that appears only once"
            )
    if exact or loose:
        raise _Skip(f"the line to {verb} is in a protected region that step edits may not change: {_q(wanted)}")
    if any(line.rstrip() == wanted or _loose(line) == loose_wanted for line in skill.frontmatter.split("\n")):
        raise _Skip(f"the line to {verb} is in the frontmatter, which the user keeps as it is: {_q(wanted)}")
    raise _Skip(
        f"the line to {verb} was not found in the skill: {_q(wanted)}; "
        "copy the target line exactly as it appears in the skill"
    )


def _anchor(skill: Skill, lines: list[str], protected: set[int], target: str | None) -> int | None:
    """The line an ADD goes after, or None (end of the body) when absent, unknown or ambiguous."""
    if target is None or not target.strip():
        return None
    try:
        return _find(skill, lines, protected, target, "add after")[0]
    except _Skip:
        return None


def _end_of_body(lines: list[str], protected: set[int], new: list[str]) -> tuple[int, list[str]]:
    """Where an untargeted ADD goes: after the last non-blank editable line."""
    last = max((i for i, line in enumerate(lines) if i not in protected and line.strip()), default=-1)
    if last >= 0:
        return last + 1, new
    if lines and lines[0].strip():  # the body holds only protected regions: keep a blank line before them
        return 0, [*new, ""]
    return 0, new


def _refuse_duplicate(skill: Skill, lines: list[str], new: list[str], *, replacing: int | None = None) -> None:
    """Skip an edit that would say a line twice; the appendix's reminders do not count (a rule
    written into the body takes their place, `_without_stated_notes`)."""
    span = skill.region_span("appendix")
    notes = set(range(span[0], span[1] + 1)) if span else set()
    others = [line for i, line in enumerate(lines) if i != replacing and i not in notes]
    present = {key(others[i]): others[i] for i in countable_lines(others)}
    seen: set[str] = set()
    for line in (new[i] for i in countable_lines(new)):
        if key(line) in present:
            raise _Moot(
                f"the skill already has this line: {_q(present[key(line)])}; edit that line instead of writing it again"
            )
        if key(line) in seen:
            raise _Skip(f"the content says the same line twice: {_q(line)}; write it once")
        seen.add(key(line))


def _without_stated_notes(skill: Skill) -> Skill:
    """`skill` without the appendix reminders that its body now states as rules."""
    notes = skill.region("appendix").split("\n")
    stated = {key(line) for line in skill.editable_lines() if line.strip()}
    kept = [note for note in notes if not note.strip() or key(note) not in stated]
    return skill if kept == notes else skill.with_region("appendix", "\n".join(kept))


def _add_note(skill: Skill, edit: Edit, limits: EditLimits) -> Skill:
    text = " ".join((edit.content or "").split())
    if not text:
        raise _Skip("an execution-lapse note needs content: the reminder to record")
    if len(text) > limits.max_content_chars:
        raise _Skip(f"the note is {len(text)} characters long; a note may be at most {limits.max_content_chars}")
    _refuse_forbidden([text])
    note = _LIST_MARKER.sub("", text, count=1)
    notes = [_LIST_MARKER.sub("", line, count=1).strip() for line in skill.region("appendix").split("\n")]
    notes = [n for n in notes if n]
    if key(note) in {key(n) for n in notes}:
        raise _Moot(f"the reminders already hold this note: {_q(note)}")
    body = {key(line): line for line in skill.editable_lines() + skill.region("slow-update").split("\n")}
    if key(note) in body:
        raise _Moot(
            f"the skill already states this as a rule: {_q(body[key(note)])}; "
            "a reminder would repeat it — propose a skill_defect edit if the rule needs rewording"
        )
    notes = [*notes, note][-MAX_NOTES:]
    return skill.with_region("appendix", "\n".join(f"- {n}" for n in notes))


def structure_problems(base: str, candidate: str, result: str) -> list[str]:
    """Why `result` — `base` with only some of the line changes that made `candidate` — breaks what
    the rules above keep and the whole candidate kept: the frontmatter, each protected region (a
    whole, as the night wrote it) and the section headings must each be as in the base or as in
    the candidate, and no region marker may lose its pair. Empty when it is sound."""
    old, new, got = Skill.parse(base), Skill.parse(candidate), Skill.parse(result)
    problems = []
    if got.frontmatter not in (old.frontmatter, new.frontmatter):
        problems.append("the frontmatter would be neither as it is nor as proposed; choose all of its changes")
    for name in REGIONS:
        if _region_lines(got, name) not in (_region_lines(old, name), _region_lines(new, name)):
            problems.append(f"the protected region {name!r} is adopted whole or not at all; choose all of its changes")
    if _headings(got) not in (_headings(old), _headings(new)):
        problems.append("the section headings would change; edits add and delete no sections")
    unpaired = [p for p in got.region_problems() if p not in old.region_problems()]
    if unpaired:
        problems.append(
            f"a skillsleep region marker would lose its pair ({'; '.join(unpaired)}); choose all the changes of that region"
        )
    return problems


def _region_lines(skill: Skill, name: RegionName) -> list[str] | None:
    span = skill.region_span(name)
    return None if span is None else skill.body.split("\n")[span[0] : span[1] + 1]


def _headings(skill: Skill) -> list[str]:
    protected = skill.protected_line_indexes()
    lines = skill.body.split("\n")
    return [lines[i].rstrip() for i in sorted(_heading_indexes(lines)) if i not in protected]


def _check_size(before: Skill, after: Skill, limits: EditLimits) -> None:
    cap = limits.max_skill_chars
    if cap is not None and len(after.text) > cap and len(after.text) > len(before.text):
        raise _Skip(
            f"the skill would grow to {len(after.text)} characters, over its cap of {cap}; "
            "replace or delete a line instead of adding one"
        )


def _loose(line: str) -> str:
    return _LIST_MARKER.sub("", line, count=1).strip()


def _q(text: str, limit: int = 120) -> str:
    text = text.strip()
    return f"'{text if len(text) <= limit else text[: limit - 1] + '…'}'"
