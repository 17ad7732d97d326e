"""The report's files: report.json (the record with its format version) and all three files for
`Proposals.stage(files=...)`."""

from __future__ import annotations

import json
from typing import Any

from skillsleep.core.report import REPORT_VERSION, NightReport
from skillsleep.core.report_html import render_html
from skillsleep.core.report_markdown import render_markdown


def report_files(r: NightReport) -> dict[str, str]:
    """The three report files for `Proposals.stage(files=...)`."""
    return {"report.md": render_markdown(r), "report.json": render_json(r), "report.html": render_html(r)}


def render_json(r: NightReport) -> str:
    """The record as JSON with a top-level "version" (report.json)."""
    body: dict[str, Any] = {"version": REPORT_VERSION, **r.model_dump(mode="json")}
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_json(text: str) -> NightReport:
    """A report back from report.json; a report of another format version is an error."""
    body = json.loads(text)
    version = body.pop("version", None) if isinstance(body, dict) else None
    if version != REPORT_VERSION:
        raise ValueError(f"report format version {version!r} is not supported (this skillsleep reads {REPORT_VERSION})")
    return NightReport.model_validate(body)
