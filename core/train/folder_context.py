"""A skill folder's other files as the optimizer reads them: redacted, fenced, read-only.

`read_context` reads them (core/document/folder.py: text files only, within the budget of
`[train] context_chars`; never a folder holding the run's own tasks or run folder) and redacts every path and text with the redaction the transcripts get;
`folder_section` is the prompt section that shows them (empty when there are none, so a skill
without other files is shown exactly as before). Nothing here writes: only `SKILL.md` is edited.
"""

from __future__ import annotations

from pathlib import Path

from skillsleep.core.document.folder import FILE_CHARS, SkillFolder, read_folder
from skillsleep.core.models.prompts import data_block
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.train.config import TrainConfig

_HEADING = "## The skill folder's other files (read-only)"
_RULES = (
    "These files sit next to SKILL.md in the skill's folder, where the agent can open them. They are "
    "shown for context only: edits never change them, and a target is never one of their lines. A new "
    "skill line may point the agent at one of them by its path relative to the folder (for example: "
    "Check the request against `references/<file>.md` before replying) instead of copying its "
    "content in; never copy their text into the skill."
)


def read_context(cfg: TrainConfig, redactor: Redactor) -> SkillFolder | None:
    """The redacted context files beside the run's skill (`data.skill`, `[train] context_chars`), or
    None when there are none. A folder that holds the run's own tasks file or run folder (a
    `skillsleep train` project with SKILL.md beside tasks.jsonl, a data folder inside the skill's)
    is a project, not a skill folder: nothing of it is shown, so held-out tasks never are; nor is
    anything for a relative skill path (a config built in code; one read from a file is absolute)."""
    skill = Path(cfg.data.skill)
    root = skill.parent.resolve()
    own = [Path(cfg.data.tasks).resolve(), Path(cfg.run.out_dir).resolve()]
    if not skill.is_absolute() or any(p == root or root in p.parents for p in own):
        return None
    folder = read_folder(skill, budget=cfg.train.context_chars)
    if folder is None:
        return None
    files = [f.model_copy(update={"path": redactor.text(f.path), "text": redactor.text(f.text)}) for f in folder.files]
    return folder.model_copy(update={"files": files, "notes": [redactor.text(n) for n in folder.notes]})


def folder_section(folder: SkillFolder | None) -> str:
    """The prompt section showing `folder`, ending in a blank line; "" when there is nothing."""
    if folder is None:
        return ""
    parts = [_HEADING, _RULES]
    for f in folder.files:
        cut = f", cut to its first {len(f.text)} characters" if f.cut else ""
        parts.append(f"File `{_plain(f.path)}` ({f.size} bytes{cut}):\n{data_block('FILE', f.text)}")
    if folder.notes:
        budget = f"These files are shown within {folder.budget} characters in all, at most {FILE_CHARS} each. "
        parts.append(budget + "Not shown in full:\n" + "\n".join(f"- {_plain(n)}" for n in folder.notes))
    return "\n\n".join(parts) + "\n\n"


def _plain(text: str) -> str:
    """A path or note on one line, its fence markers and backticks defused."""
    return " ".join(text.split()).replace("<<<", "< < <").replace(">>>", "> > >").replace("`", "'")
