"""Every error skillsleep raises on purpose, each one saying what to do about it.

SkillsleepError
├── ConfigError              a setting, file or name the user gave is wrong (exit code 2)
│   ├── UnknownNameError     an unknown provider / model / harness / judge name; lists the known
│   └── StateDamaged         a file of the state directory is damaged; says what it holds and
│                            that `skillsleep doctor --repair` repairs it
├── BackendError             a model endpoint failed for the whole run (after retries)
│   ├── BackendUnavailable   no key, server unreachable, SDK or weights not installed
│   ├── RetriesExhausted     429 / 5xx / timeouts kept coming after the last retry
│   ├── TransientError       one retryable failure (caught by the retry loop, never escapes it)
│   └── ExecutorLost         the cluster that runs the rollouts went away (the run stops; run
│                            it again to resume without repaying finished rollouts)
├── BudgetExceeded           the token or money cap would be crossed by the next call
├── FinalScoringFailed       training finished, scoring the test split did not (results kept)
├── Busy                     another cycle holds the state directory's lock, or another
│                            process writes its database longer than a statement waits
├── ParseError               a model reply was malformed or truncated (recorded, never applied)
└── EditError                an edit breaks the bounds (unknown line, protected region, too big)
"""

from __future__ import annotations

import difflib


class SkillsleepError(Exception):
    """Base class of every error skillsleep raises on purpose."""


class ConfigError(SkillsleepError):
    """A setting, file or name given by the user is wrong; the message names the fix."""


class UnknownNameError(ConfigError):
    """An unknown name; the message lists the known ones and the closest match."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {', '.join(sorted(known)) or 'none'}.")
        self.kind = kind
        self.name = name
        self.known = known


class StateDamaged(ConfigError):
    """A file of the state directory (state.db, a record) is damaged; `skillsleep doctor` repairs it."""


class BackendError(SkillsleepError):
    """A model endpoint failed in a way retrying will not fix."""


class BackendUnavailable(BackendError):
    """The backend cannot be used at all: missing key, unreachable server, missing package."""


class TransientError(BackendError):
    """One retryable failure (429, 5xx, timeout, dropped connection)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RetriesExhausted(BackendError):
    """Retryable failures continued past the configured number of attempts."""


class ExecutorLost(BackendError):
    """The connection to the cluster that runs the rollouts was lost; the run stops cleanly."""


class BudgetExceeded(SkillsleepError):
    """The next call would cross the token or money budget; the run stops cleanly."""


class FinalScoringFailed(SkillsleepError):
    """Training finished but scoring the test split failed; the best skill and the summary are
    written, and running the same command again scores the test split only."""


class ParseError(SkillsleepError):
    """A model reply could not be parsed strictly (malformed, truncated, wrong shape)."""


class EditError(SkillsleepError):
    """An edit cannot be applied within the bounds."""


class Busy(SkillsleepError):
    """Another skillsleep cycle holds the lock of this state directory, or another process keeps
    its database busy."""
