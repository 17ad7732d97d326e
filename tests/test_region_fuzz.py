"""Fuzzed, issue 24: outside what a night may edit, the user's file stays byte-identical after any
number of nights, adopts and rollbacks — for files with and without protected regions, with stray
or unbalanced region markers (or markers quoted in code blocks), whole or one section (`AGENTS.md#Testing`), LF or CRLF, with or
without a byte order mark, a frontmatter, a final newline.

Each night is `run_night` on the scripted backend and the chat harness (tests/region_kit.py):
night k adds the line `rule(k)` and the slow update writes `guidance(k)`, and its proposal is
adopted, then sometimes rolled back. What a night may edit: it may add its own lines (rules,
blank lines, one region of each name with its markers and title, guidance) — in the trained
section only — and rewrite the inside of a region the trained text already holds. Every other
line of the user's file must be there, in order, byte for byte; a rollback restores the bytes
the adopt replaced. A night may refuse a file whose markers do not pair up (then nothing changes).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from region_kit import Nights, file_target

from skillsleep.core.document.newlines import split_lines
from skillsleep.core.document.regions import scan
from skillsleep.core.document.sections import find_section
from skillsleep.core.document.skill import REGIONS, Skill, begin_marker, end_marker
from skillsleep.core.shared.errors import ConfigError

MARKERS = [m(name) for name in REGIONS for m in (begin_marker, end_marker)]
USER_LINES = ["- Mine.", "Run pytest.", "Be brief.", "* Cite the source", "1. Plan first", "  indented note", "", ""]
TITLES = ["Testing", "Output", "Style"]
REGION_TITLES = {"slow-update": "Guidance from earlier epochs", "appendix": "Reminders"}
_NIGHTS_OWN = re.compile(
    r"(?:[-*+]|\d+[.)])?\s*(?:Use TOKEN\d+: end every reply with a final line `ANSWER: <answer>`\.|Keep TOKEN\d+ in mind, night \d+\.)"
    r"|(?:#{1,6} |\*\*)(?:Guidance from earlier epochs|Reminders)(?:\*\*)?"
)


@dataclass(frozen=True)
class Case:
    lines: tuple[str, ...]  # the user's lines, without their endings
    nl: str = "\n"
    bom: bool = False
    final_newline: bool = True
    section: str | None = None  # the trained section; None: the whole file
    rollbacks: tuple[bool, ...] = (False, False, False)  # per night: roll its adopt back

    @property
    def ending(self) -> str:
        """The line ending new lines take: `nl`, or LF in a file of one line without an ending."""
        return self.nl if "\n" in self.text() else "\n"

    def text(self) -> str:
        body = self.nl.join(self.lines) + (self.nl if self.final_newline else "")
        return ("\ufeff" if self.bom else "") + body


def _user(*lines: str) -> tuple[str, ...]:
    return lines


STRAY_BEGIN = Case(_user("# Habits", "", begin_marker("slow-update"), "- Mine.", "", "## Output", "", "Be brief."))
AGENTS_SECTION = Case(
    _user("# Project", "", "## Testing", "", "Run pytest.", "", "## Output", "", "Be brief."), section="Testing"
)


# SKILLSLEEP_FUZZ_SCALE=20 multiplies the budgets and draws fresh examples (as in test_fuzz_readers.py)
_SCALE = float(os.environ.get("SKILLSLEEP_FUZZ_SCALE", "1"))


def budget(examples: int) -> settings:
    return settings(
        max_examples=round(examples * _SCALE),
        derandomize=_SCALE == 1,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


@st.composite
def cases(draw: st.DrawFn) -> Case:
    level = draw(st.integers(1, 3))
    titles = draw(st.lists(st.sampled_from(TITLES), min_size=1, max_size=3, unique=True))
    section = draw(st.sampled_from([None, *titles]))
    lines: list[str] = []
    if draw(st.booleans()):
        lines += _user("---", "name: demo", "description: a skill", "---")
    if level > 1:
        lines += _user("# Project", "")
    for title in titles:
        lines += _user(f"{'#' * level} {title}", *draw(st.lists(st.sampled_from(USER_LINES), max_size=3)))
        if draw(st.booleans()):  # markers quoted in a code block: the user's text, like any other
            lines += _user("```", *draw(st.lists(st.sampled_from(MARKERS), max_size=2)), "```")
        for name in draw(st.lists(st.sampled_from(REGIONS), max_size=2)):  # a region the user's file already has
            heading = "#" * min(level + 1, 6) + " " + REGION_TITLES[name]
            lines += ["", begin_marker(name), heading, "- Earlier.", end_marker(name), ""]
    for _ in range(draw(st.integers(0, 2))):  # stray markers
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(MARKERS)))
    return Case(
        lines=tuple(lines),
        nl=draw(st.sampled_from(["\n", "\r\n"])),
        bom=draw(st.booleans()),
        final_newline=draw(st.booleans()),
        section=section,
        rollbacks=tuple(draw(st.lists(st.booleans(), min_size=3, max_size=3))),
    )


def _inside_regions(case: Case) -> set[int]:
    """Indexes of the user's lines inside a region of the trained text (markers left out): what a
    night may rewrite. Found by `regions.scan` on the text the night trains, as the night reads it."""
    text = case.text()
    offset, trained = 0, text
    if case.section is not None:
        sec = find_section(text, case.section)
        offset, trained = sec.start, sec.body
    skill = Skill.parse(trained)
    offset += skill.frontmatter.count("\n")
    spans = scan(skill.body.split("\n")).spans.values()
    return {offset + i for start, end in spans for i in range(start + 1, end)}


def _unmatched(case: Case, now: list[str], inside: set[int]) -> list[int]:
    """Indexes of `now`'s lines that are not the user's (their lines matched in order, byte for
    byte; the lines a night may rewrite are not looked for). Fails when a user line is missing or
    changed."""
    j, matched = 0, set()
    last = len(case.lines) - 1
    for i, text in enumerate(case.lines):
        want = ("\ufeff" if case.bom and i == 0 else "") + text
        if i in inside or (i == last and not want and not case.final_newline):
            continue  # a line the night may rewrite; an empty last line without its newline is none
        ends = (case.ending,) if i < last or case.final_newline else ("", case.ending)
        k = next((k for k in range(j, len(now)) if now[k] in {want + e for e in ends}), None)
        assert k is not None, f"the user's line {i + 1} {text!r} is gone or changed:\n{''.join(now)}"
        matched.add(k)
        j = k + 1
    return [k for k in range(len(now)) if k not in matched]


def check(case: Case, now_text: str) -> None:
    now = split_lines(now_text)
    assert not case.bom or now_text.startswith("\ufeff")
    nl = case.ending
    assert all(line.endswith(nl) and "\r" not in line[: -len(nl)] for line in now[:-1]), now
    inside = _inside_regions(case)
    added = _unmatched(case, now, inside)
    rewritable = {case.lines[i] for i in inside}
    for k in added:
        bare = now[k].rstrip("\r\n")
        assert not bare.strip() or bare in MARKERS or bare in rewritable or _NIGHTS_OWN.fullmatch(bare), bare
    for marker in MARKERS:
        assert sum(1 for k in added if now[k].rstrip("\r\n") == marker) <= 1, f"{marker} added twice:\n{now_text}"
    if case.section is not None and added:
        sec = find_section(now_text, case.section)
        assert all(sec.start <= k < sec.end for k in added), f"lines added outside § {case.section}:\n{now_text}"


def run_case(case: Case, template: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "AGENTS.md"
        path.write_bytes(case.text().encode())
        nights, target = Nights(root, template), file_target(path, case.section)
        for k, roll_back in enumerate(case.rollbacks, start=1):
            before = path.read_bytes()
            try:
                result = nights.night(k, target)
            except ConfigError:
                assert any(text in MARKERS for text in case.lines), "a file without markers was refused"
                assert path.read_bytes() == before
                continue
            if not any(text in MARKERS for text in case.lines):
                assert result.outcome == "accepted", result.reason
            if result.proposal:
                nights.adopt(result.proposal)
                check(case, path.read_bytes().decode())
                if roll_back:
                    nights.rollback()
                    assert path.read_bytes() == before


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sessions")


@budget(4)
@example(STRAY_BEGIN)  # issue 24 defect 1: the slow update took the user's lines after a stray begin marker
@example(AGENTS_SECTION)  # defect 2: a section's region left it and nested over nights
@given(cases())
def test_nights_adopts_and_rollbacks_leave_the_users_lines_byte_identical(template: Path, case: Case) -> None:
    run_case(case, template)


@pytest.mark.slow
@budget(150)
@given(cases())
def test_many_nights_over_generated_files_leave_the_users_lines_byte_identical(template: Path, case: Case) -> None:
    run_case(case, template)
