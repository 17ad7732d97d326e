"""Which live file a night trains: `--skill PATH|PATH#Heading|NAME`, or skillsleep's own managed
skill when the flag is empty.

An agent's skill folders and the folder of its managed skill (`skillsleep-learned`) come from the
agent (harnesses/<agent>/home.py; the table is in docs/agents.md); direct chat has no skill folders
and keeps its managed skill under skillsleep's data folder. The managed skill may not exist before
the first adopt.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from skillsleep.core.document.newlines import restore
from skillsleep.core.document.sections import find_section, replace_section
from skillsleep.core.document.skill import Skill
from skillsleep.core.document.textfile import user_path
from skillsleep.core.shared.errors import ConfigError
from skillsleep.harnesses import registry
from skillsleep.harnesses.agent import Agent
from skillsleep.harnesses.agent_cli import FALLBACK_SKILL_NAME, frontmatter_value, skill_name
from skillsleep.harnesses.home import with_home

MANAGED_NAME = "skillsleep-learned"
PACK_SKILL_NAME = "skillsleep"  # this pack's own skill; not `sleep`, which would shadow the plugins' /sleep
SKILL_FILE = "SKILL.md"
_WHAT_TO_PASS = (
    "pass --skill PATH (a markdown skill file such as SKILL.md or AGENTS.md), PATH#Heading "
    "for one section of it, a skill NAME, or leave --skill empty to train skillsleep's own "
    f"managed skill ({MANAGED_NAME})"
)


def managed_seed(name: str = MANAGED_NAME) -> str:
    """The first version of the managed skill: a valid Agent Skills SKILL.md the edits grow."""
    return (
        "---\n"
        f"name: {name}\n"
        "description: Habits skillsleep learned from this user's own past sessions. Use it for the "
        "user's recurring tasks.\n"
        "---\n"
        "\n"
        "# Learned habits\n"
    )


def pack_skill_text() -> str:
    """This pack's own SKILL.md (the repository root's, shipped as package data in `pack/`): what
    skillsleep is and when to use which verb, for an agent's skill folder (as `PACK_SKILL_NAME`)."""
    return (resources.files("skillsleep.harnesses") / "pack" / SKILL_FILE).read_text(encoding="utf-8")


class SkillTarget(BaseModel):
    """The live file (or one section of it) that a night trains and a proposal replaces: the
    engine's `LiveSkill` (core/night/live_skill.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path  # absolute
    section: str | None = None  # a heading of `path`: only that section's body is trained
    name: str  # the skill's name; for a section, its heading's text
    managed: bool = False  # skillsleep's own skill (may not exist yet)
    harness: str
    display: str = ""  # the path as the user would write it (~/…, relative to the cwd)

    def exists(self) -> bool:
        return self.path.is_file()

    def _file_text(self) -> str:
        try:
            return _read_text(self.path)
        except FileNotFoundError:
            raise ConfigError(f"{self._shown()} does not exist any more; restore it, or pass another --skill") from None
        except UnicodeDecodeError:
            raise ConfigError(
                f"{self._shown()} is no longer a UTF-8 text file; restore it, or pass another --skill"
            ) from None

    def read(self) -> str:
        """The text that is trained: the whole file, or the section's body (the seed for a managed
        skill that does not exist yet). Line endings are kept as in the file. Region markers that
        do not pair up in that text are refused (`RegionError`, naming the lines)."""
        if self.managed and not self.exists():
            return managed_seed(self.name)
        text = self._file_text()
        if self.section is None:
            Skill.parse(text).check_regions(self._shown())
            return text
        sec = find_section(text, self.section, source=self._shown())
        Skill.parse(sec.body).check_regions(
            f"{self.label()} (lines {sec.start + 1}-{sec.end})", first_line=sec.start + 1
        )
        return sec.body

    def compose(self, trained: str, base: str | None = None) -> str:
        """The whole live-file text to stage for `trained`: the trained text with the live file's
        bytes on every line it did not change (line endings, byte order mark, final newline), or
        the live file with only the section's body replaced. `base` is the live file as it was
        read when training began (default: now)."""
        if base is None:
            base = self._file_text() if self.section is not None or self.exists() else ""
        if self.section is not None:  # a region's title goes below the section's heading: it stays inside
            level = find_section(base, self.section, source=self._shown()).level
            return replace_section(
                base, self.section, Skill.parse(trained).with_titles_below(level).text, source=self._shown()
            )
        return restore(base, trained)

    def live_text(self) -> str:
        """The live file's whole text, byte-exact (CRLF kept), or "" when it does not exist yet."""
        if not self.path.exists():
            return ""
        try:
            return self.path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"cannot read the skill {self.path} ({exc}); fix it or pick another with --skill"
            ) from None

    def key(self) -> str:
        """Whose memory a night reads and writes: the file, and the section when there is one."""
        return str(self.path) + (f"#{self.section}" if self.section else "")

    def _shown(self) -> str:
        return self.display or str(self.path)

    def label(self) -> str:
        """How reports name it: `AGENTS.md § Testing`, `~/.claude/skills/foo/SKILL.md`."""
        return self._shown() + (f" § {self.name}" if self.section is not None else "")


# --- where the agents keep skills --------------------------------------------------------------


def _agent(harness: str) -> Agent | None:
    """The agent of `harness`, or None for direct chat (which has no skill folders)."""
    return None if harness == registry.CHAT else registry.get(harness)


def managed_path(harness: str, *, home: Path, data_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where the managed skill lives for `harness` (a folder the agent loads skills from).
    `env` (optional) moves the agent's home as it moves the agent's (CLAUDE_CONFIG_DIR, …)."""
    rel = Path(MANAGED_NAME) / SKILL_FILE
    agent = _agent(harness)
    if agent is None:
        return data_dir / "skills" / rel
    return agent.managed_skills(with_home(env or {}, home)) / rel


def skill_dirs(harness: str, *, home: Path, cwd: Path, env: Mapping[str, str]) -> list[Path]:
    """The agent's user and project skill folders, in its own lookup order (they may not exist);
    a folder named relative to the environment is relative to `cwd`."""
    agent = _agent(harness)
    if agent is None:
        return []
    dirs = [d if d.is_absolute() else cwd / d for d in agent.skill_dirs(with_home(env, home), cwd)]
    return list(dict.fromkeys(dirs))


def _name_of(path: Path, text: str) -> str:
    """A skill file's name: its frontmatter `name`, else its folder's (SKILL.md) or its own."""
    skill = Skill.parse(text)
    name = skill_name(skill)
    if name != FALLBACK_SKILL_NAME or frontmatter_value(skill.frontmatter, "name") == FALLBACK_SKILL_NAME:
        return name
    return path.parent.name if path.name == SKILL_FILE else path.stem


def known_skills(harness: str, *, home: Path, cwd: Path, env: Mapping[str, str]) -> dict[str, Path]:
    """Every skill the agent would find: name → its SKILL.md (the first folder wins a name)."""
    out: dict[str, Path] = {}
    for folder in skill_dirs(harness, home=home, cwd=cwd, env=env):
        try:
            children = sorted(folder.iterdir())
        except OSError:  # absent or unreadable: the agent finds nothing there either
            continue
        for child in children:
            file = child / SKILL_FILE
            if child.name.startswith(".") or not file.is_file():
                continue
            try:
                name = _name_of(file, _read_text(file))
            except (OSError, UnicodeDecodeError):
                continue
            out.setdefault(name, file)
    return out


# --- --skill -----------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    """A file's text with its line endings untouched (read_text would turn CRLF into LF)."""
    return path.read_bytes().decode("utf-8")


def _expand(spec: str, *, home: Path, cwd: Path) -> Path:
    path = home / spec[2:] if spec == "~" or spec.startswith(("~/", "~" + os.sep)) else user_path(spec, "--skill")
    return path if path.is_absolute() else cwd / path


def _display(path: Path, *, home: Path, cwd: Path) -> str:
    for base, prefix in ((cwd, ""), (home, "~/")):
        if base == home and prefix == "":
            continue
        try:
            return prefix + path.relative_to(base).as_posix()
        except ValueError:
            pass
    return str(path)


def _is_path(spec: str) -> bool:
    return "/" in spec or os.sep in spec or spec.startswith(("~", ".")) or spec.lower().endswith(".md")


def _text_file(spec: str, *, home: Path, cwd: Path) -> tuple[Path, str, str]:
    """(resolved path, text, display) of the file `spec` names, or an error saying what to pass."""
    path = _expand(spec, home=home, cwd=cwd)
    if path.is_dir() and (path / SKILL_FILE).is_file():
        path = path / SKILL_FILE  # a skill folder stands for its SKILL.md
    shown = _display(path, home=home, cwd=cwd)
    if not path.exists():
        raise ConfigError(f"--skill {spec!r}: {shown} does not exist; {_WHAT_TO_PASS}.")
    if not path.is_file():
        what = f"a folder without a {SKILL_FILE} in it" if path.is_dir() else "not a regular file (a pipe or a device)"
        raise ConfigError(f"--skill {spec!r}: {shown} is {what}; {_WHAT_TO_PASS}.")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"--skill {spec!r}: {shown} cannot be read ({exc.strerror or exc}); check its "
            f"permissions, or {_WHAT_TO_PASS}."
        ) from None
    try:
        if b"\x00" in data:
            raise UnicodeDecodeError("utf-8", data, data.index(b"\x00"), data.index(b"\x00") + 1, "NUL byte")
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"--skill {spec!r}: {shown} is not a UTF-8 text file; {_WHAT_TO_PASS}.") from None
    return path.resolve(), text, shown


def _split_section(spec: str, *, home: Path, cwd: Path) -> tuple[str, str] | None:
    """(path, heading) for `PATH#Heading`; None when `spec` has no # or names a file as a whole."""
    if "#" not in spec or _expand(spec, home=home, cwd=cwd).is_file():
        return None
    cuts = [i for i, ch in enumerate(spec) if ch == "#" and i > 0]
    for i in cuts:  # the first # after which the part before names a file
        if _expand(spec[:i], home=home, cwd=cwd).is_file():
            return spec[:i], spec[i + 1 :]
    return (spec[: cuts[0]], spec[cuts[0] + 1 :]) if cuts else None


def _unknown_name(
    spec: str, harness: str, known: dict[str, Path], dirs: list[Path], home: Path, cwd: Path
) -> ConfigError:
    where = ", ".join(_display(d, home=home, cwd=cwd) for d in dirs)
    if not known:
        return ConfigError(
            f"--skill {spec!r}: {harness} has no skills yet (looked in {where}); pass --skill "
            f"PATH to a skill file, PATH#Heading for a section of e.g. AGENTS.md, or leave "
            f"--skill empty to train skillsleep's own managed skill ({MANAGED_NAME})."
        )
    close = difflib.get_close_matches(spec, list(known), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(
        f"--skill {spec!r}: {harness} has no skill by that name.{hint} Known: "
        f"{', '.join(sorted(known))} (looked in {where}). Or pass --skill PATH / PATH#Heading, "
        f"or leave --skill empty to train skillsleep's own managed skill ({MANAGED_NAME})."
    )


def resolve_skill(
    spec: str, *, harness: str, home: Path, cwd: Path, data_dir: Path, env: Mapping[str, str]
) -> SkillTarget:
    """The live file `--skill spec` names for `harness`.

    ""            the managed skill (it may not exist yet)
    PATH#Heading  one section of an existing file (the heading must be there now)
    PATH          a UTF-8 text file (has a /, starts with ~ or ., or ends with .md); a skill folder
                  stands for its SKILL.md
    NAME          a skill the agent knows (see `known_skills`)"""
    spec = spec.strip()
    home, cwd = Path(home), Path(cwd)
    if not spec:
        path = managed_path(harness, home=home, data_dir=data_dir, env=env)
        path = path if path.is_absolute() else cwd / path
        return SkillTarget(
            path=path, name=MANAGED_NAME, managed=True, harness=harness, display=_display(path, home=home, cwd=cwd)
        )
    if spec.startswith("#"):
        raise ConfigError(f"--skill {spec!r}: name the file before the #, e.g. `AGENTS.md{spec}`.")
    split = _split_section(spec, home=home, cwd=cwd)
    if split is not None:
        file_spec, heading = split
        path, text, shown = _text_file(file_spec, home=home, cwd=cwd)
        section = find_section(text, heading, source=shown)
        return SkillTarget(path=path, section=heading.strip(), name=section.title, harness=harness, display=shown)
    if _is_path(spec):
        path, text, shown = _text_file(spec, home=home, cwd=cwd)
        return SkillTarget(path=path, name=_name_of(path, text), harness=harness, display=shown)
    dirs = skill_dirs(harness, home=home, cwd=cwd, env=env)
    if not dirs:
        raise ConfigError(
            f"--skill {spec!r}: the {harness} harness talks to a model directly and has no skill "
            f"folders, so there is no skill by name to find; pass --skill PATH to a markdown "
            f"file (or PATH#Heading for one section), or leave --skill empty to train the "
            f"managed skill in {_display(managed_path(harness, home=home, data_dir=data_dir), home=home, cwd=cwd)}."
        )
    known = known_skills(harness, home=home, cwd=cwd, env=env)
    found = known.get(spec) or next((p for n, p in known.items() if n.casefold() == spec.casefold()), None)
    if found is None:
        raise _unknown_name(spec, harness, known, dirs, home, cwd)
    path, text, shown = _text_file(str(found), home=home, cwd=cwd)
    return SkillTarget(path=path, name=_name_of(path, text), harness=harness, display=shown)
