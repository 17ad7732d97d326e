"""Claude Code's JSON, as its transcripts and `claude -p` output both write it (Anthropic's shapes)."""

from __future__ import annotations

from typing import Any

from skillsleep.core.shared.records import Usage
from skillsleep.harnesses import wire

__all__ = ["block_text", "blocks", "usage"]

_PROMPT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def usage(raw: Any) -> Usage:
    """Anthropic usage → Usage: input is the whole prompt (fresh + cache writes + cache reads),
    `cached_tokens` the cache reads."""
    return wire.usage(raw, prompt=_PROMPT, output="output_tokens", cached="cache_read_input_tokens")


def blocks(content: Any) -> list[Any] | None:
    """A message's content as a list of blocks (a string is one text block); None for any other shape."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else None


def block_text(content: Any) -> str:
    """The text of a tool result's content: a string, or its text blocks joined (an image is
    `[image]`; other blocks carry no text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif isinstance(block, dict) and block.get("type") == "image":
                texts.append("[image]")
            elif isinstance(block, str):
                texts.append(block)
        return "\n".join(texts)
    return "" if content is None else str(content)
