"""Prompt templates (`core/models/prompts/*.md`) and the small helpers that render data into them.

Templates use `string.Template` placeholders (`$name`), so the JSON braces they show are safe;
a literal dollar sign is written `$$`. An example in a prompt shows its variable part as words in
angle brackets (`<the exact text the feedback asks for>`: `PLACEHOLDER`), so a model that copies
the example instead of filling it in is caught (`copied_placeholders`). Untrusted text (task
prompts, agent responses, tool output) is always rendered through `data_block()`, which fences it
and defuses fence markers inside it, so a transcript cannot close the fence and speak as the
prompt.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.resources import files
from string import Template

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Edit
from skillsleep.core.shared.rejected import RejectedEdit

_OPEN, _CLOSE = "<<<", ">>>"
PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*\s[^<>\n]*[^\s<>]>")
"""How a prompt shows a format, never content: several words in angle brackets (`<the exact text …>`)."""
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")


@cache
def _template(name: str) -> Template:
    text = files("skillsleep.core.models").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")
    return Template(text.rstrip("\n"))


def render(name: str, /, **values: object) -> str:
    """Fill template `prompts/<name>.md`; a missing value is a KeyError, never a silent blank."""
    return _template(name).substitute({k: str(v) for k, v in values.items()})


def copied_placeholders(text: str, *templates: str) -> list[str]:
    """The placeholders of the prompt `templates` that a model's `text` copies instead of filling in."""
    marks = {mark for name in templates for mark in PLACEHOLDER.findall(_template(name).template)}
    return [mark for mark in PLACEHOLDER.findall(text) if mark in marks]


def echoed_instruction(text: str, *templates: str, min_words: int = 5) -> bool:
    """Whether `text` copies a stretch of at least `min_words` words of the prompt `templates`' own
    instructions (case, punctuation and spacing aside; a placeholder breaks a stretch): a small
    model's reply that repeats the rules it was given rather than following them."""
    words = _words(text)
    if len(words) < min_words:
        return False
    wanted = f" {' '.join(words)} "
    for name in templates:
        for part in _SLOT.split(_template(name).template):
            if wanted in f" {' '.join(_words(part))} ":
                return True
    return False


_SLOT = re.compile(rf"\$\{{?\w+\}}?|{PLACEHOLDER.pattern}")  # a template's $value or a <placeholder>


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.casefold())


def truncate(text: str, limit: int) -> str:
    """Keep the head and the tail of a long text and say how much was cut in between."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def data_block(label: str, text: str, *, limit: int | None = None) -> str:
    """Fence untrusted text between `<<<LABEL` and `LABEL>>>`, with fence markers inside defused."""
    body = truncate(text, limit) if limit else text
    body = body.replace(_OPEN, "< < <").replace(_CLOSE, "> > >")
    return f"{_OPEN}{label}\n{body.strip(chr(10)) or '(empty)'}\n{label}{_CLOSE}"


def quoted(text: str | None) -> str:
    """A JSON string literal: exact boundaries, and copyable as-is into a JSON reply."""
    return json.dumps(text or "", ensure_ascii=False)


def describe_edit(edit: Edit, number: int | None = None) -> str:
    """An edit as a few labelled lines, its fields quoted so a target can be copied exactly."""
    head = f"Edit {number}" if number is not None else "Edit"
    lines = [f"{head} (kind {edit.kind}, support {edit.support})", f"  op: {quoted(edit.op)}"]
    if edit.target is not None:
        lines.append(f"  target: {quoted(edit.target)}")
    if edit.content is not None:
        lines.append(f"  content: {quoted(edit.content)}")
    if edit.rationale:
        lines.append(f"  rationale: {quoted(edit.rationale)}")
    return "\n".join(lines)


def describe_rejected(rejected: RejectedEdit) -> str:
    """A rejected edit with the held-out score it produced (before → after), one the target did not
    follow as such, a refused one with the rule that refused it, or a refused one with its repair
    and what became of the repair."""
    where = rejected.where()
    if rejected.stage == "apply":
        return f"{describe_edit(rejected.edit)}\n  result: refused by the edit rules ({where}): {rejected.reason}"
    if rejected.stage == "user":
        return f"{describe_edit(rejected.edit)}\n  result: {rejected.reason}; do not propose it again"
    score = f"score before {_score(rejected.before)} → after {_score(rejected.after)}"
    if rejected.stage == "ignored":
        verdict = f"applied, but the target did not follow it: no held-out task scored differently ({score}, {where})"
    else:
        verdict = f"{score} ({where}), rejected by the gate"
    if rejected.stage in ("repair", "ignored") and rejected.repair is not None:
        repair = describe_edit(rejected.repair).split("\n", 1)[1].replace("\n  ", "\n    ")
        got = "was" if rejected.stage == "ignored" else "got"
        return (
            f"{describe_edit(rejected.edit)}\n  result: refused by the edit rules, then repaired as\n  {repair}\n"
            f"  and the repair {got} {verdict}"
        )
    return f"{describe_edit(rejected.edit)}\n  result: {verdict}"


def describe_memory(rejected: list[RejectedEdit]) -> str:
    """The rejected-edit memory for a prompt, each edit once: a repair the gate rejected (or the
    target ignored) is shown with the proposal it was repaired from, not again on its own. When the
    target ignored some, what to do instead follows them (`prompts/reflect_ignored.md`)."""
    repairs = {(r.repair.key(), r.epoch, r.step) for r in rejected if r.repair is not None}
    shown = [
        r
        for r in rejected
        if r.stage not in ("gate", "ignored") or r.repair is not None or (r.edit.key(), r.epoch, r.step) not in repairs
    ]
    text = "\n\n".join(map(describe_rejected, shown))
    if any(r.stage == "ignored" for r in shown):
        text += "\n\n" + render("reflect_ignored")
    return text


def _score(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}"


def editable_text(skill: Skill) -> str:
    """The body lines that edits may target (protected regions left out)."""
    return "\n".join(skill.editable_lines()).strip("\n")


def or_none(text: str, none: str = "(none)") -> str:
    """`text`, or a plain word when it is empty (a blank section confuses small models)."""
    return text.strip() or none


def bullet_lines(items: object, *, max_lines: int) -> list[str]:
    """Clean a model's list of lines: strings only, bullet marks stripped, blanks dropped, capped."""
    if not isinstance(items, list):
        return []
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        line = _BULLET.sub("", " ".join(item.split())).strip()
        if line and line not in out:
            out.append(line)
    return out[:max_lines]


def as_bullets(lines: list[str]) -> str:
    """Lines as a markdown bullet list."""
    return "\n".join(f"- {line}" for line in lines)
