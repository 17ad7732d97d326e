"""Line endings of a user's file, kept as they are.

A skill is trained as LF text (`Skill.parse`), while the file it came from may use CRLF, mix
CRLF and LF, start with a byte order mark or lack a final newline. `restore(base, edited)` puts
those bytes back: a line the edit did not touch keeps its exact bytes, so only edited lines
change. Pure text, no IO.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

BOM = "\ufeff"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_ENDING = re.compile(r"\r\n|\r|\n")
_NAMES = {"\r\n": "CRLF", "\n": "LF", "\r": "CR"}


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their endings (CRLF, CR or LF); joining them gives `text` back."""
    return _LINE.findall(text)


def first_ending(text: str) -> str:
    """The first line ending in `text` ("\\n" when it has none)."""
    m = _ENDING.search(text)
    return m.group(0) if m else "\n"


def usual_ending(text: str) -> str:
    """The most common line ending in `text` (the first one on a tie; "\\n" when it has none)."""
    endings: list[str] = _ENDING.findall(text)
    counts = Counter(endings)
    if not counts:
        return "\n"
    top = max(counts.values())
    return next(e for e in endings if counts[e] == top)


def style(text: str) -> str:
    """The line endings of `text` in words: "LF", "CRLF", "CR", "mixed", or "none" (one line)."""
    found = {_NAMES[e] for e in _ENDING.findall(text)}
    return found.pop() if len(found) == 1 else ("mixed" if found else "none")


def restore(base: str, edited: str) -> str:
    """`edited` (LF text made from `base` by adding, removing or replacing lines, starting with
    `base`'s byte order mark when it has one, as `SkillTarget.read()` gives it) with the bytes
    of `base` wherever the edit left a line alone: each unchanged line keeps its own ending, a
    new line takes the file's usual ending, the byte order mark stays, and a file without a
    final newline keeps having none. An empty `base` (a new file) gives `edited` as it is."""
    if not base:
        return edited
    old = split_lines(base.removeprefix(BOM))
    old_bare = [line.rstrip("\r\n") for line in old]
    bom = BOM if base.startswith(BOM) else ""
    new = _ENDING.split(edited.removeprefix(bom))  # `edited` came from `base`: its mark, when it has one
    if new[-1] == "":
        new.pop()
    usual = usual_ending(base)
    out: list[tuple[str, str | None]] = []  # (line, its ending; None: a new line, ending to choose)
    for tag, i1, i2, j1, j2 in _opcodes(old_bare, new):
        if tag == "equal":
            out += [(bare, line[len(bare) :]) for bare, line in zip(old_bare[i1:i2], old[i1:i2], strict=True)]
        else:
            out += [(line, None) for line in new[j1:j2]]
    if not out:
        return bom
    endings = _endings(out, usual)
    if not base.endswith(("\n", "\r")):
        endings[-1] = ""  # still no final newline
    return bom + "".join(line + end for (line, _), end in zip(out, endings, strict=True))


def _opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes with the common first and last lines matched first: among equal lines
    (blank ones, say) difflib may otherwise pair a line with another copy of it, and that line's
    own ending would be lost."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    ops = [("equal", 0, head, 0, head)] if head else []
    middle = difflib.SequenceMatcher(None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False)
    ops += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle.get_opcodes()]
    if tail:
        ops.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return ops


def _endings(out: list[tuple[str, str | None]], usual: str) -> list[str]:
    """The ending of each line: its own for a kept line; for a new line (or the old last line,
    when lines follow it now) the file's usual one, unless that would run into a neighbour (a CR
    then a blank line's LF reads as one CRLF line)."""
    endings: list[str] = []
    for i, (line, own) in enumerate(out):
        if own:  # a kept line's own ending (the old last line may have none: it gets one below)
            endings.append(own)
            continue
        after = out[i + 1] if i + 1 < len(out) else None
        for end in dict.fromkeys([usual, "\r\n", "\n", "\r"]):
            joins_before = endings and endings[-1] == "\r" and line == "" and end.startswith("\n")
            joins_after = end == "\r" and after is not None and after[0] == "" and (after[1] or "\n").startswith("\n")
            if not (joins_before or joins_after):
                endings.append(end)
                break
    return endings


def endings_note(before: str, after: str, old_name: str, new_name: str) -> str:
    """ "line endings differ: OLD_NAME has CRLF, NEW_NAME LF" for two `style()`s, or "" when they
    agree (a terminal shows no CR, so a diff alone would seem to change nothing)."""
    if before == after or {before, after} & {"none", "absent"}:
        return ""
    return f"line endings differ: {old_name} has {before}, {new_name} {after}"
