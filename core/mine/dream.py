"""Dreams (sleep, after the split): paraphrased training variants of real training tasks.

One optimizer call (role "dream") per training task asks for `count` rewordings of the request
(shown as data). A variant is redacted like harvested text and dropped when it is empty, unsafe,
a copy of the reply format's placeholder, the same request again, or close to a held-out task (it
would leak that task into training). A reply that cannot be read gives no variants; what was
dropped and why is recorded as an `UnusableReply`.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, StrictStr

from skillsleep.core.mine.mining import MinedTask
from skillsleep.core.mine.similarity import RELATED_THRESHOLD, similarity
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.prompts import copied_placeholders, data_block, render, truncate
from skillsleep.core.models.replies import Lenient, Reply
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.privacy.safety import screen
from skillsleep.core.shared.errors import ParseError
from skillsleep.core.shared.records import DREAM_MARK, Edit, Message, Record, Task, UnusableReply

WORDING_CHARS = 300
DREAM_CHARS = 2000
DREAM_TOKENS = 1024


class DreamReply(Reply):
    """Rewordings of one request."""

    model_config = ConfigDict(title="dream")

    variants: list[Lenient[StrictStr]]


class Dreams(Record):
    """The dreamed training tasks of one real task, and what was dropped or could not be used."""

    tasks: list[Task] = Field(default_factory=list)
    problems: list[UnusableReply] = Field(default_factory=list)


def dream_messages(mined: MinedTask, count: int) -> list[Message]:
    others = mined.wordings[1:3]
    wordings = (
        (
            "Other wordings the user used:\n"
            + "\n".join(data_block(f"WORDING {n}", w, limit=WORDING_CHARS) for n, w in enumerate(others, 2))
        )
        if others
        else ""
    )
    user = render(
        "dream_user",
        request=data_block("REQUEST", mined.task.prompt, limit=DREAM_CHARS),
        wordings=wordings,
        count=count,
    )
    return [Message(role="system", content=render("dream_system")), Message(role="user", content=user)]


async def dream(
    llm: LLM, mined: MinedTask, count: int, held_out: list[str], redactor: Redactor | None = None
) -> Dreams:
    """Up to `count` paraphrased training variants of a real training task (origin "dream"), redacted
    like harvested text (`redactor`; None → the built-in rules)."""
    redactor = redactor or Redactor()
    where = f"dream for {mined.task.id}"
    try:
        reply = await llm.ask_model(
            "dream", dream_messages(mined, count), DreamReply, max_tokens=DREAM_TOKENS, cache_system=True
        )
    except ParseError as exc:
        return Dreams(problems=[_problem(where, f"the optimizer's reply could not be read ({exc}); no variants")])
    out = Dreams()
    seen = {" ".join(mined.task.prompt.split()).lower()}
    for text in reply.variants:
        if len(out.tasks) >= count:
            break
        if not isinstance(text, str) or not text.strip():
            continue
        text = redactor.text(truncate(text.strip(), DREAM_CHARS))
        norm = " ".join(text.split()).lower()
        refusal = screen(Edit(op="add", content=text))
        if refusal is not None:
            out.problems.append(
                _problem(where, f"a variant was refused by the safety screen ({refusal.rule}: “{refusal.matched}”)")
            )
            continue
        if norm in seen:
            continue
        if copied_placeholders(text, "dream_system"):
            out.problems.append(_problem(where, "a variant copied the reply format instead of writing a request"))
            continue
        if any(similarity(text, h) >= RELATED_THRESHOLD for h in held_out):
            out.problems.append(_problem(where, "a variant was dropped because it is close to a held-out task"))
            continue
        seen.add(norm)
        update = {
            "id": f"{mined.task.id}{DREAM_MARK}{len(out.tasks) + 1}",
            "parent": mined.task.id,
            "prompt": text,
            "split": "train",
            "origin": "dream",
        }
        out.tasks.append(mined.task.model_copy(update=update))
    return out


def _problem(where: str, error: str) -> UnusableReply:
    return UnusableReply(role="dream", where=where, error=error)
