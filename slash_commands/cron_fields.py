"""The schedule fields of a crontab line, checked as crontab(5) reads them, so `schedule --cron`
refuses what cron would refuse or never run (`61 3 * * *`, `a b c d e`) and names the field.

    check_cron(text)   the five fields (or the @-macro), normalised to single spaces; ConfigError
                       naming the bad field otherwise

Each field is a list (`,`) of `*`, a number, a range `a-b`, optionally with a step (`*/15`,
`1-30/2`); month and day-of-week also take the English three-letter names (`jan`, `mon-fri`, any
case). Day-of-week 0 and 7 are both Sunday. The macros are @yearly, @annually, @monthly, @weekly,
@daily, @midnight and @hourly (@reboot is no night schedule).

croniter was weighed and not taken: it accepts what cron does not (a sixth seconds field, `L`,
`W`, `#`, `?`, `H`), so the crontab would refuse a line that it passed.
"""

from __future__ import annotations

import re

from skillsleep.core.shared.errors import ConfigError

__all__ = ["MACROS", "check_cron"]

MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, lowest, highest, names: the value of names[i] is lowest + i)
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _DAYS),
)
_ITEM = re.compile(r"(?P<range>\*|(?P<lo>[0-9A-Za-z]+)(?:-(?P<hi>[0-9A-Za-z]+))?)(?:/(?P<step>[0-9]+))?")
_EXPECTED = "expected five fields (minute hour day-of-month month day-of-week, e.g. --cron '0 3 * * 1-5') or one of "


def check_cron(text: str) -> str:
    """`text` as cron reads it (five fields or an @-macro), single-spaced; ConfigError otherwise."""
    words = text.split()
    if len(words) == 1 and words[0].startswith("@"):
        if words[0].lower() in MACROS:
            return words[0].lower()
        raise _bad(text, f"{words[0]!r} is not a cron macro")
    if len(words) != 5:
        raise _bad(text, f"it has {len(words)} field{'s' if len(words) != 1 else ''}")
    for word, field in zip(words, _FIELDS, strict=True):
        problem = _field_problem(word, *field[1:])
        if problem:
            raise _bad(text, f"the {field[0]} field {word!r} {problem}")
    return " ".join(words)


def _bad(text: str, why: str) -> ConfigError:
    return ConfigError(f"--cron {text!r}: {why}; {_EXPECTED}{', '.join(MACROS)}")


def _field_problem(word: str, low: int, high: int, names: tuple[str, ...]) -> str:
    """Why one field is not a list of cron items in low..high, or "" when it is."""
    span = f"{low}-{high}" + (f" or {names[0]}-{names[-1]}" if names else "")
    for item in word.split(","):
        m = _ITEM.fullmatch(item)
        if m is None:
            return f"is not a number, a range a-b, * or a step such as */15 ({span})"
        tokens = [m[g] for g in ("lo", "hi") if m[g] is not None]
        unknown = [t for t in tokens if _value(t, low, names) is None]
        if unknown:
            return f"holds {unknown[0]!r}, which is neither a number nor a name cron knows here ({span})"
        numbers = [v for t in tokens if (v := _value(t, low, names)) is not None]
        if any(not low <= v <= high for v in numbers):
            return f"holds a value out of range: it takes {span}"
        if len(numbers) == 2 and numbers[0] > numbers[1]:
            return f"holds the range {item.split('/')[0]!r}, which runs backwards; write the lower value first"
        if m["step"] is not None:
            if m["hi"] is None and m["range"] != "*":
                return f"puts a step after a single value ({item!r}); steps follow * or a range, e.g. */15"
            if not 1 <= int(m["step"]) <= high - low + 1:
                return f"holds the step {m['step']}, which must be from 1 to {high - low + 1}"
    return ""


def _value(token: str, low: int, names: tuple[str, ...]) -> int | None:
    if token.isdigit():
        return int(token)
    lowered = token.lower()
    return low + names.index(lowered) if lowered in names else None
