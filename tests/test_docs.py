"""The documentation holds together: README.md and docs/*.md link only to files and headings that
exist, and `.ci/run` runs the test command README.md shows."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _prose(page: Path) -> list[tuple[int, str]]:
    """The page's numbered lines outside fenced code blocks (a `#` there is a comment, not a heading)."""
    lines, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, re.sub(r"`[^`]*`", "", line) if not HEADING.match(line) else line))
    return lines


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub writes it: its text lowercased, punctuation dropped, spaces → '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a markdown page's headings (a repeated one gets -1, -2, … as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose(page):
        match = HEADING.match(line)
        if match is None:
            continue
        slug = _slug(match.group(1))
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` whose file is missing, or whose `#anchor` is no heading there."""
    problems = []
    for number, line in _prose(page):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: … are not files here
                continue
            path_part, _, anchor = target.partition("#")
            where = (page.parent / path_part).resolve() if path_part else page
            name = f"{page.relative_to(ROOT)}:{number}: {target}"
            if not where.exists():
                problems.append(f"{name}: {path_part} does not exist")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                problems.append(f"{name}: no heading of {where.relative_to(ROOT)} has the anchor #{anchor}")
    return problems


def test_every_relative_link_resolves_to_a_file_and_a_heading() -> None:
    problems = [problem for page in PAGES for problem in broken_links(page)]
    assert not problems, "\n".join(problems)


def test_the_pages_link_to_each_other() -> None:
    """Every docs/ page is reachable from README.md (directly or through another page)."""
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for _, line in _prose(page):
            for target in LINK.findall(line):
                path_part = target.partition("#")[0]
                linked = (page.parent / path_part).resolve()
                if path_part.endswith(".md") and linked in PAGES:
                    todo.append(linked)
    assert not [p.name for p in PAGES if p not in reached]


def test_anchors_follow_github() -> None:
    assert _slug("Your settings: config.toml") == "your-settings-configtoml"
    assert _slug("The `/sleep` verbs") == "the-sleep-verbs"
    assert _slug("`[sleep]`: the nightly cycle") == "sleep-the-nightly-cycle"
    assert _slug("skillsleep's own chat logs") == "skillsleeps-own-chat-logs"


def test_ci_runs_the_test_command_of_the_readme() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().splitlines()
    command = script[-1]
    assert command.startswith("pip install") and "pytest" in command
    assert command in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _options(verb: str) -> set[str]:
    from skillsleep.slash_commands.cli import main

    command = main.commands.get(verb)
    assert command is not None, f"the docs name `skillsleep {verb}`, which does not exist"
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)}


def test_every_flag_of_the_command_table_is_an_option_of_its_command() -> None:
    """A row's flags are its command's own, or those of a command it names with them
    (`adopt --edits`, `doctor --repair`), or, for `sleep`, those of the /sleep verbs it passes on."""
    from skillsleep.slash_commands.verbs import VERBS

    problems = []
    for number, line in enumerate((ROOT / "docs" / "commands.md").read_text(encoding="utf-8").splitlines(), 1):
        match = re.match(r"\| `skillsleep ([a-z]+)", line)
        if match is None:
            continue
        verb = match.group(1)
        known = _options(verb)
        for other in re.findall(r"`(?:skillsleep )?([a-z]+) --", line):
            known |= _options(other)
        if verb == "sleep":
            known |= {o for name in VERBS for o in _options(name)}
        problems += [
            f"docs/commands.md:{number}: {verb} has no {flag}" for flag in FLAG.findall(line) if flag not in known
        ]
    assert not problems, "\n".join(problems)


def test_every_flag_of_the_sleep_settings_is_an_option_of_run() -> None:
    """The `[sleep]` table of docs/settings.md and the switches of docs/sleep.md name `run`'s flags."""
    run = _options("run")
    table = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8").splitlines()
    rows = [line for line in table if re.match(r"\| `[a-z_]+` \| ", line)]
    flags = {flag for row in rows for flag in FLAG.findall(row.split("|")[4])}
    sleep = (ROOT / "docs" / "sleep.md").read_text(encoding="utf-8")
    switches = sleep[sleep.index("Switches (flag >") :].split("\n\n")[0]
    flags |= set(FLAG.findall(switches))
    assert len(flags) > 20 and not sorted(flags - run)
