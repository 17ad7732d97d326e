"""The lines `skillsleep schedule` keeps in a user's crontab, as pure text functions.

    BEGIN / END              the marker lines around the managed block
    read_block(text)         the block's lines, or None when there is none
    set_block(text, lines)   the text with the block replaced where it was (else appended)
    remove_block(text)       the text without the block
    When                     when the night runs: `--at HH:MM` (daily) or `--cron EXPR`
    cron_line(when, cmd)     one crontab line for a shell command (`%` escaped)

Every line outside the block is kept byte for byte (CRLF, trailing spaces, a last line without a
newline); the only byte ever added is the newline a last line needs before a block is appended.
A block that is left open (a start marker without its end) is an error, never guessed at.
"""

from __future__ import annotations

import re

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import Record
from skillsleep.slash_commands.cron_fields import check_cron

BEGIN = "# >>> skillsleep night: written by `skillsleep schedule`; `skillsleep unschedule` removes it >>>"
END = "# <<< skillsleep night <<<"
_BEGIN_PREFIX = "# >>> skillsleep night"
_END_PREFIX = "# <<< skillsleep night"

_AT = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])")
_DAILY = re.compile(r"([0-9]{1,2}) ([0-9]{1,2}) \* \* \*")


class When(Record):
    """When the night runs: cron's schedule fields, and the time of day when it is daily at one."""

    fields: str  # "0 3 * * *", "*/30 2-5 * * mon-fri", "@weekly"
    at: str = ""  # "03:00" when `fields` is daily at that time

    @classmethod
    def daily(cls, text: str) -> When:
        """`--at HH:MM`: every day at that time (the machine's local time, as cron reads it)."""
        m = _AT.fullmatch(text)
        if m is None:
            raise ConfigError(f"--at {text!r}: expected a time of day HH:MM from 00:00 to 23:59 (e.g. --at 03:00)")
        hour, minute = int(m[1]), int(m[2])
        return cls(fields=f"{minute} {hour} * * *", at=f"{hour:02d}:{minute:02d}")

    @classmethod
    def cron(cls, text: str) -> When:
        """`--cron EXPR`: five cron fields (minute hour day-of-month month day-of-week) or @daily & co.,
        checked field by field as crontab(5) reads them (cron_fields.py)."""
        return cls.parse(check_cron(text))

    @classmethod
    def parse(cls, line: str) -> When:
        """When an installed crontab line runs (its schedule fields; the command is ignored)."""
        words = line.split()
        fields = " ".join(words[:1] if line.lstrip().startswith("@") else words[:5])
        daily = _DAILY.fullmatch(fields)
        if daily and int(daily[1]) < 60 and int(daily[2]) < 24:
            return cls(fields=fields, at=f"{int(daily[2]):02d}:{int(daily[1]):02d}")
        return cls(fields=fields)

    def describe(self) -> str:
        return f"{self.at} daily" if self.at else f"cron `{self.fields}`"


def cron_line(when: When, command: str) -> str:
    """The crontab line running a `/bin/sh` command: cron turns an unescaped `%` into a newline."""
    if "\\%" in command:
        raise ConfigError(
            "a backslash right before a % cannot be written into a crontab line; "
            "put that setting in config.toml ([sleep]) instead of a flag"
        )
    return f"{when.fields} {command.replace('%', chr(92) + '%')}"


def _lines(text: str) -> list[str]:
    """The lines of `text`, each with its own ending ("\\n", "\\r\\n" or none for the last)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _spans(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) line indexes of every managed block, both markers included."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        stripped = line.rstrip()
        if stripped.startswith(_BEGIN_PREFIX):
            if start is not None:
                raise _open(start)
            start = i
        elif stripped.startswith(_END_PREFIX):
            if start is None:
                raise _broken(i, "ends the skillsleep block without its start line")
            spans.append((start, i))
            start = None
    if start is not None:
        raise _open(start)
    return spans


def _open(i: int) -> ConfigError:
    return _broken(i, "starts the skillsleep block without its end line")


def _broken(i: int, what: str) -> ConfigError:
    return ConfigError(
        f"the crontab's line {i + 1} {what} ({END!r}); fix it with `crontab -e` (delete the "
        "skillsleep lines, then run `skillsleep schedule` again); nothing was changed"
    )


def read_block(text: str) -> list[str] | None:
    """The lines inside the (first) managed block, without endings; None when there is no block."""
    lines = _lines(text)
    spans = _spans(lines)
    if not spans:
        return None
    start, end = spans[0]
    return [line.rstrip("\r\n") for line in lines[start + 1 : end]]


def set_block(text: str, body: list[str]) -> str:
    """`text` with the managed block holding `body`: where the first block was (any other block
    is dropped), else appended at the end."""
    lines = _lines(text)
    spans = _spans(lines)
    block = [f"{BEGIN}\n", *(f"{line}\n" for line in body), f"{END}\n"]
    if not spans:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return "".join(lines + block)
    first = spans[0][0]  # every line before it is outside any block
    kept = _without(lines, spans)
    return "".join(kept[:first] + block + kept[first:])


def remove_block(text: str) -> str:
    """`text` without any managed block; every other line as it was."""
    lines = _lines(text)
    return "".join(_without(lines, _spans(lines)))


def _inside(i: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= i <= end for start, end in spans)


def _without(lines: list[str], spans: list[tuple[int, int]]) -> list[str]:
    return [line for i, line in enumerate(lines) if not _inside(i, spans)]
