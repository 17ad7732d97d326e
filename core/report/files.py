"""The report's files: report.json (the record with its format version) and all three files for
`Proposals.stage(files=...)`."""

from __future__ import annotations

import json
from typing import Any

from skillsleep.core.report.html import render_html
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.report.result import REPORT_VERSION, NightResult

ADDED_KEYS = ("paired", "validation", "kept_strategies")  # report.json's keys added since version 1 first shipped
REPORT_FILES = ("report.md", "report.json", "report.html")  # what report_files() writes, in its order


def report_files(r: NightResult) -> dict[str, str]:
    """The three report files for `Proposals.stage(files=...)`."""
    return dict(zip(REPORT_FILES, (render_markdown(r), render_json(r), render_html(r)), strict=True))


def render_json(r: NightResult) -> str:
    """The record as JSON with a top-level "version" (report.json)."""
    body: dict[str, Any] = {"version": REPORT_VERSION, **r.model_dump(mode="json")}
    for key in ADDED_KEYS:  # absent when unset or empty, so a report written before them is written back as it was
        if not body.get(key):
            body.pop(key, None)
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_json(text: str) -> NightResult:
    """A report back from report.json; a report of another format version is an error."""
    body = json.loads(text)
    version = body.pop("version", None) if isinstance(body, dict) else None
    if version != REPORT_VERSION:
        raise ValueError(f"report format version {version!r} is not supported (this skillsleep reads {REPORT_VERSION})")
    return NightResult.model_validate(body)
