"""A whole-skill replace reduced to the lines it adds or changes, with no model call.

A small optimizer often answers with the whole skill rewritten: the seed's lines as they were and
one or two new ones. The edit rules refuse it (an edit changes one line), and the repair call that
should cut it down is itself a small model's reply, which may copy a placeholder or rewrite the
skill again. What the rewrite means is plain from a comparison, so `reduced` makes it:

    replace SKILL "# Brief\\n- Answer directly.\\n- Keep replies short.\\n- At most 3 sentences."
      →  add "At most 3 sentences."                     (a line the skill lacks)
    replace SKILL "# Brief\\n- Answer directly.\\n- Keep replies short: 3 sentences at most."
      →  replace "- Keep replies short." with "Keep replies short: 3 sentences at most."
                                  (a line close to one of the skill's: it extends it, or the
                                   difflib ratio of the two is at least 0.6; each skill line once)

Headings, the frontmatter and lines the skill already has (`skill_lines.key`) are left out; a line
of the skill the rewrite leaves out is not deleted (dropping the user's lines is never implied).
Content with a fenced block gives nothing: the repair call is asked as before. Each edit keeps the
refused edit's kind, rationale and support, and passes the same screens and rules as a rewrite.
"""

from __future__ import annotations

import difflib
import re

from skillsleep.core.document.sections import headings
from skillsleep.core.document.skill import Skill
from skillsleep.core.document.skill_lines import key
from skillsleep.core.shared.records import Edit

CLOSE = 0.6  # a new line this close to a skill line (`_closeness`) replaces it
_FENCE = re.compile(r"^\s*(```|~~~)")
_FRONTMATTER = re.compile(r"\A\s*---\n.*?\n---[ \t]*(?:\n|\Z)", re.S)


def reduced(skill: Skill, edit: Edit) -> list[Edit]:
    """`edit`, a whole-skill replace (`whole_skill`), as the adds and replaces of the lines it
    adds or changes (see the module's docstring); [] for any other edit or when it changes nothing."""
    if edit.op != "replace" or not whole_skill(skill, edit):
        return []
    content = _FRONTMATTER.sub("", edit.content or "", count=1)
    lines = content.split("\n")
    if any(_FENCE.match(line) for line in lines):
        return []
    titles = {i for i, _, _ in headings(content)}
    editable = skill.editable_lines()
    ruled = {i for i, _, _ in headings("\n".join(editable))}
    free = [line for i, line in enumerate(editable) if line.strip() and i not in ruled]  # each replaced once
    known = {key(line) for line in editable}
    out: list[Edit] = []
    for i, line in enumerate(lines):
        if not line.strip() or i in titles or key(line) in known:
            continue
        close = max(free, key=lambda o: _closeness(o, line), default=None)
        if close is not None and _closeness(close, line) >= CLOSE:
            free.remove(close)
            out.append(edit.model_copy(update={"op": "replace", "target": close, "content": line.strip()}))
        else:
            out.append(edit.model_copy(update={"op": "add", "target": "", "content": line.strip()}))
    return out


def whole_skill(skill: Skill, edit: Edit) -> bool:
    """Whether `edit` would replace the whole skill: target "SKILL", or content that starts with
    the skill's own title heading."""
    target = (edit.target or "").strip().strip("`'\"").casefold()
    first = next((line for line in (edit.content or "").split("\n") if line.strip()), "")
    title = next((t for _, level, t in headings(skill.body) if level == 1), None)
    own_title = title is not None and any(t.casefold() == title.casefold() for _, _, t in headings(first))
    return target in ("skill", "skill.md") or own_title


def _closeness(old: str, new: str) -> float:
    """How close `new` is to the skill's line `old`: 1 when it extends it (starts with what it
    says), else their keys' difflib ratio."""
    was, now = key(old), key(new)
    return 1.0 if was and now.startswith(was) else difflib.SequenceMatcher(None, was, now).ratio()
