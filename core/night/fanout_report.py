"""The combined report of a fan-out (core/night/fanout_run.py) in `<data>/fanouts/<NNNN>/`: fanout.json
(`FanoutResult`), and report.md, report.html and report.json with the table of every skill (its
sessions, share, spend, outcome and proposal), the skills not trained and why, then one section a
trained skill: that night's own report (its score chart included), as its night's folder holds it."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from skillsleep.core.models.rundir import write_private
from skillsleep.core.night.fanout_record import FanoutResult, SkillRow
from skillsleep.core.report.files import render_json
from skillsleep.core.report.html import render_html
from skillsleep.core.report.markdown import render_markdown
from skillsleep.core.report.result import NightResult
from skillsleep.core.shared.display import md_line

__all__ = ["FANOUT_FILES", "fanout_files", "fanout_lines", "fanout_title", "spend_text", "write_fanout"]

FANOUT_FILES = ("fanout.json", "report.md", "report.json", "report.html")
_HEAD = ("skill", "sessions", "share", "spent", "outcome", "proposal")
_e = html.escape


def write_fanout(folder: Path, f: FanoutResult, results: Sequence[NightResult]) -> None:
    for name, text in fanout_files(f, results).items():
        write_private(folder / name, text)


def fanout_files(f: FanoutResult, results: Sequence[NightResult]) -> dict[str, str]:
    md, page = render_md(f, results), render_page(f, results)
    body = {"version": 1, **f.model_dump(mode="json"), "reports": [json.loads(render_json(r)) for r in results]}
    report = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return dict(zip(FANOUT_FILES, (f.model_dump_json(indent=2) + "\n", md, report, page), strict=True))


def spend_text(tokens: int | None, usd: float | None) -> str:
    """A share or a spend: "12,000 tokens, $0.0120"; "no cap" when neither is set."""
    parts = ([f"{tokens:,} tokens"] if tokens is not None else []) + ([f"${usd:.4f}"] if usd is not None else [])
    return ", ".join(parts) or "no cap"


def _cells(r: SkillRow) -> tuple[str, ...]:
    outcome = r.outcome or r.status.replace("-", " ")
    share = spend_text(r.share_tokens, r.share_usd) if r.status in ("trained", "not-run") or r.night else "—"
    spent = spend_text(r.spent_tokens, r.spent_usd) if r.night is not None else "—"
    night = f" (night {r.night})" if r.night is not None else ""
    return (r.skill_name + night, str(r.sessions), share, spent, outcome, r.proposal or "—")


def fanout_lines(f: FanoutResult, show: Callable[[str], str] = md_line) -> list[str]:
    """The fan-out's table and its lists (not enough evidence, not selected, not run), as markdown."""
    rule = (
        f"cap {spend_text(f.cap_tokens, f.cap_usd)} shared by sessions, most sessions first, floor "
        "cap / (2 × skills trained); what one skill leaves passes on"
        if f.cap_tokens is not None or f.cap_usd is not None
        else "no cap: nothing shared"
    )
    out = [f"Budget: {rule}. Grouping: {f.grouping}; sessions that used no writable skill train the managed skill.", ""]
    out += ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
    out += ["| " + " | ".join(show(c) for c in _cells(r)) + " |" for r in f.rows]
    for status, title in (
        ("not-enough-evidence", "Not enough evidence"),
        ("not-selected", "Not selected"),
        ("not-run", "Not run"),
    ):
        listed = [f"- {show(r.skill_name)}: {show(r.reason)}" for r in f.rows if r.status == status]
        out += ["", f"## {title}", "", *listed] if listed else []
    return [*out, ""]


def render_md(f: FanoutResult, results: Sequence[NightResult]) -> str:
    out = [f"# skillsleep — {fanout_title(f)}", "", *fanout_lines(f)]
    for r in results:
        out += ["", *_deeper(render_markdown(r).rstrip("\n").split("\n"))]
    return "\n".join(out) + "\n"


def fanout_title(f: FanoutResult) -> str:
    nights = f.nights()
    which = ("nights " if len(nights) > 1 else "night ") + ", ".join(map(str, nights))
    trained = sum(r.night is not None for r in f.rows)
    if not trained:
        return "one night, no skill trained"
    return f"one night, {trained} skill{'s' if trained != 1 else ''} trained ({which})"


def _deeper(lines: list[str]) -> list[str]:
    """A night's report as a section: each heading one level down (fenced code left as it is)."""
    out, closing = [], ""
    for line in lines:
        if closing:
            closing = "" if line.strip() == closing else closing
        elif run := re.match(r"`{3,}", line):
            closing = run.group(0)
        elif line.startswith("#"):
            line = "#" + line
        out.append(line)
    return out


def render_page(f: FanoutResult, results: Sequence[NightResult]) -> str:
    """One self-contained page: the table, then each night's report body as a section."""
    pages = [render_html(r) for r in results]
    styled = next((p for r, p in zip(results, pages, strict=True) if r.paired), pages[0] if pages else "")
    head = styled.split("<header>", 1)[0] if styled else render_html_head()  # the style of every section
    head = re.sub(r"<title>.*?</title>", f"<title>skillsleep — {_e(fanout_title(f))}</title>", head, count=1)
    table = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in _cells(r)) + "</tr>" for r in f.rows)
    lists = "".join(
        f"<li>{_e(r.skill_name)}: {_e(r.reason)}</li>" for r in f.rows if r.status != "trained" and r.reason
    )
    parts = [
        head.rstrip("\n"),
        f"<header><h1>skillsleep — {_e(fanout_title(f))}</h1>",
        f"<p>{_e(fanout_lines(f, str)[0])}</p>",
        "<table><tr>" + "".join(f"<th>{h}</th>" for h in _HEAD) + f"</tr>{table}</table>",
        f"<ul>{lists}</ul></header>" if lists else "</header>",
    ]
    for r, page in zip(results, pages, strict=True):
        body = page.split("<body>", 1)[1].rsplit("</body>", 1)[0]
        parts.append(f'<section class="skill" id="night-{r.night}">{body}</section>')
    return "\n".join([*parts, "</body></html>"]) + "\n"


def render_html_head() -> str:
    """The page's head when no skill was trained (no night's page to take it from)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<title></title></head><body>\n"
    )
