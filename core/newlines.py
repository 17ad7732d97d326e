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
    counts = Counter(_ENDING.findall(text))
    if not counts:
        return "\n"
    top = max(counts.values())
    return next(e for e in _ENDING.findall(text) if counts[e] == top)


def style(text: str) -> str:
    """The line endings of `text` in words: "LF", "CRLF", "CR", "mixed", or "none" (one line)."""
    found = {_NAMES[e] for e in _ENDING.findall(text)}
    return found.pop() if len(found) == 1 else ("mixed" if found else "none")


def restore(base: str, edited: str) -> str:
    """`edited` (LF text made from `base` by adding, removing or replacing lines) with the bytes
    of `base` wherever the edit left a line alone: each unchanged line keeps its own ending, a
    new line takes the file's usual ending, the byte order mark stays, and a file without a
    final newline keeps having none. An empty `base` (a new file) gives `edited` as it is."""
    if not base:
        return edited
    old = split_lines(base.removeprefix(BOM))
    old_bare = [line.rstrip("\r\n") for line in old]
    new = _ENDING.split(edited.removeprefix(BOM))
    if new[-1] == "":
        new.pop()
    usual = usual_ending(base)
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_bare, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [(bare, line[len(bare):]) for bare, line in zip(old_bare[i1:i2], old[i1:i2])]
        else:
            out += [(line, usual) for line in new[j1:j2]]
    if not out:
        return BOM if base.startswith(BOM) else ""
    text = "".join(bare + (ending or usual) for bare, ending in out[:-1])
    last, ending = out[-1]
    final = (ending or usual) if base.endswith(("\n", "\r")) else ""
    return (BOM if base.startswith(BOM) else "") + text + last + final



def endings_note(before: str, after: str, old_name: str, new_name: str) -> str:
    """"line endings differ: OLD_NAME has CRLF, NEW_NAME LF" for two `style()`s, or "" when they
    agree (a terminal shows no CR, so a diff alone would seem to change nothing)."""
    if before == after or {before, after} & {"none", "absent"}:
        return ""
    return f"line endings differ: {old_name} has {before}, {new_name} {after}"
