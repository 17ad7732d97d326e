"""Diffs of a user's file, and the numbered changes of a proposal that `adopt --edits` chooses from.

A change is one contiguous run of changed lines of the candidate against its base (the live
file as the proposal was staged against it): one opcode of difflib's SequenceMatcher that is not
"equal", with no context merged in, so two edits a line apart are two changes. They are numbered
from 1 in file order, the same way in `diff`, in the night's report and in `adopt --edits`,
because all of them come from `changes(base, candidate)`. Lines keep their endings (a CR stays
in its line, a last line may have no newline), so `apply()` of any subset is byte-exact.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection

from pydantic import Field

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record

CONTEXT = 2  # unchanged lines shown around a change (never another change's lines)

_PATCH_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")  # a patch's lines end at LF only: a CR stays in the line


def patch_lines(text: str) -> list[str]:
    """The lines of `text` as a patch sees them, each with its LF (the last one may have none)."""
    return _PATCH_LINE.findall(text)


def _patch_line(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    """A unified diff that `patch` and `git apply` accept: a line's CR is part of the line, so a
    change of line endings shows as a changed line, and a last line without a newline is marked."""
    return "".join(map(_patch_line, difflib.unified_diff(patch_lines(old), patch_lines(new), old_name, new_name)))


class Change(Record):
    """One numbered change: the base lines it removes and the lines it adds, where, and the
    unchanged lines around it (for reading only)."""

    number: int = Field(ge=1)
    start: int = Field(ge=0)  # index of its first base line (where it inserts, when it removes none)
    new_start: int = Field(ge=0)  # the same in the candidate
    removed: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    before: list[str] = Field(default_factory=list)  # unchanged lines just above it
    after: list[str] = Field(default_factory=list)  # unchanged lines just below it


def _opcodes(base: str, candidate: str) -> tuple[list[str], list[str], list[tuple[str, int, int, int, int]]]:
    a, b = patch_lines(base), patch_lines(candidate)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return a, b, [op for op in ops if op[0] != "equal"]


def changes(base: str, candidate: str) -> list[Change]:
    """The candidate's changes against `base`, numbered from 1 in file order."""
    a, b, ops = _opcodes(base, candidate)
    out = []
    for n, (_, i1, i2, j1, j2) in enumerate(ops, 1):
        above = ops[n - 2][2] if n > 1 else 0  # where the previous change ends
        below = ops[n][1] if n < len(ops) else len(a)  # where the next one starts
        out.append(
            Change(
                number=n,
                start=i1,
                new_start=j1,
                removed=a[i1:i2],
                added=b[j1:j2],
                before=a[max(above, i1 - CONTEXT) : i1],
                after=a[i2 : min(below, i2 + CONTEXT)],
            )
        )
    return out


def apply(base: str, candidate: str, numbers: Collection[int]) -> str:
    """`base` with only the changes `numbers` of `candidate` made (all of them give `candidate`)."""
    a, b, ops = _opcodes(base, candidate)
    out: list[str] = []
    at = 0
    for n, (_, i1, i2, j1, j2) in enumerate(ops, 1):
        out += a[at:i1] + (b[j1:j2] if n in numbers else a[i1:i2])
        at = i2
    return "".join(out + a[at:])


def _range(start: int, count: int) -> str:
    """A hunk header's range, as `diff -u` writes it (1-based; an empty range names the line before)."""
    if count == 1:
        return str(start + 1)
    return f"{start if count == 0 else start + 1},{count}"


def render(numbered: list[Change], old_name: str, new_name: str) -> str:
    """The changes as a unified diff, one hunk each, its header ending in `change N`."""
    if not numbered:
        return ""
    out = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    for c in numbered:
        old = _range(c.start - len(c.before), len(c.before) + len(c.removed) + len(c.after))
        new = _range(c.new_start - len(c.before), len(c.before) + len(c.added) + len(c.after))
        out.append(f"@@ -{old} +{new} @@ change {c.number}\n")
        out += [
            _patch_line(p + line)
            for p, lines in ((" ", c.before), ("-", c.removed), ("+", c.added), (" ", c.after))
            for line in lines
        ]
    return "".join(out)


def parse_numbers(spec: str, count: int) -> list[int]:
    """The change numbers of an `--edits` value such as "1,3" (sorted); anything else — not a
    number, 0, out of range, a duplicate — is a ConfigError that names the valid ones."""
    if count == 0:
        raise ConfigError("this proposal has no changes to choose from: it equals the file it was staged against")
    valid = "1" if count == 1 else f"1 to {count}"
    where = f"this proposal has {count} change(s), numbered {valid} as `diff` shows them"
    parts = [p.strip() for p in spec.split(",")]
    if not all(p.isdecimal() for p in parts):
        raise ConfigError(f"--edits {spec!r} is not a list of change numbers like 1,3; {where}")
    numbers = [int(p) for p in parts]
    wrong = [n for n in numbers if not 1 <= n <= count]
    if wrong:
        raise ConfigError(f"--edits {spec!r}: there is no change {wrong[0]}; {where}")
    if len(set(numbers)) < len(numbers):
        raise ConfigError(f"--edits {spec!r} names a change twice; {where}")
    return sorted(numbers)
