"""`since`: the instant a harvest or a night starts reading from (`--since`, `[sleep] since`).

The grammar: an ISO date/time (naive = UTC) or a span back from now, N followed by m, h, d or w
(30m, 24h, 7d, 2w). `parse_since` is its one parser; the clock arrives as `now`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.session import utc

_SPAN = re.compile(r"\s*(\d+)\s*([mhdw])\s*")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, *, now: datetime) -> datetime:
    """An instant from ISO text (naive = UTC) or a span back from `now`: 30m, 24h, 7d, 2w."""
    m = _SPAN.fullmatch(text)
    if m:
        return now - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    when = utc(text)
    if when is None:
        raise ConfigError(
            f"--since {text!r}: give an ISO date/time (2026-11-28, 2026-11-28T22:00+01:00) or a span (24h, 7d)"
        )
    return when
