"""SKILLSLEEP_LOCAL_THREADS: how many llama.cpp threads the embedded model (`--backend local`)
computes with; read here for `wiring.backend_settings` (environment only, docs/settings.md)."""

from __future__ import annotations

import os

from skillsleep.core.shared.errors import ConfigError

LOCAL_THREADS_ENV = "SKILLSLEEP_LOCAL_THREADS"


def local_options(provider: str) -> dict[str, int]:
    """`{"threads": N}` for the local backend when SKILLSLEEP_LOCAL_THREADS is set; else nothing
    (the backend's default: one thread per core, at most 8)."""
    raw = os.environ.get(LOCAL_THREADS_ENV, "").strip() if provider == "local" else ""
    if raw and not (raw.isdigit() and 1 <= int(raw) <= 64):
        raise ConfigError(
            f"{LOCAL_THREADS_ENV}={raw!r}: give a whole number from 1 to 64, or unset it to use one thread per core"
        )
    return {"threads": int(raw)} if raw else {}
