"""Plain one-line messages for settings a schema refuses: keys it does not know (with the closest
known one), and pydantic's validation errors (where, what was expected, what was found)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

__all__ = ["describe_validation_error", "location", "section_name", "source_of", "unknown_keys"]


def unknown_keys(model: type[BaseModel], data: Any, prefix: tuple[str, ...], allow: Iterable[str] = ()) -> list[str]:
    """Messages for keys the schema does not know, with the closest known key."""
    if not isinstance(data, dict):
        return []
    problems: list[str] = []
    fields = model.model_fields
    for key, value in data.items():
        if key in allow:
            continue
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(fields)})"
            where = f"[{section_name(prefix)}] unknown key" if prefix else "unknown top-level key"
            problems.append(f"{where} {key!r}{hint}")
            continue
        sub, is_map = _submodel(fields[key].annotation)
        if sub is None or not isinstance(value, dict):
            continue
        if is_map:
            for name, item in value.items():
                problems += unknown_keys(sub, item, (*prefix, key, name))
        else:
            problems += unknown_keys(sub, value, (*prefix, key))
    return problems


def _submodel(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """(model class, is a dict of them) for a field annotation, or (None, False)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if get_origin(annotation) is dict:
        value = get_args(annotation)[1]
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value, True
    return None, False


def section_name(path: Sequence[str | int]) -> str:
    """A key path as TOML writes it: `train.epochs`, `prices."deepseek-chat"`."""
    parts = [str(p) if str(p).replace("_", "").isalnum() else json.dumps(str(p)) for p in path]
    return ".".join(parts)


_EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "dict": "a table",
    "model": "a table",
    "list": "a list",
}


def describe_validation_error(
    exc: ValidationError,
    *,
    origin: dict[tuple[str, ...], str] | None = None,
    default_source: str = "",
    section_style: bool = True,
) -> list[str]:
    """Plain one-line messages for a pydantic error: where, what was expected, what was found.

    With `section_style`, locations read `[train] epochs`; otherwise `judge.checks[0].type`, in
    JSON's words (an object, not a table).
    `origin` maps key paths to the file (or override) that set them, to prefix each line.
    """
    lines: list[str] = []
    for err in exc.errors(include_url=False):
        loc = tuple(str(p) for p in err["loc"])
        where = location(err["loc"], section_style, whole_table=err["type"] == "value_error")
        source = source_of(loc, origin or {}, default_source)
        prefix = f"{source}: " if source else ""
        lines.append(f"{prefix}{where}{_what(err, json_words=not section_style)}")
    return lines


def location(loc: tuple[Any, ...], section_style: bool, *, whole_table: bool = False) -> str:
    """Where an error is, as the start of its line: `[train] epochs: ` or `judge.checks[0].type: `."""
    if not loc:
        return ""
    if not section_style:
        text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        return f"{text}: "
    if whole_table:  # a validator on a whole section, e.g. [lr] min_edits above max_edits
        return f"[{section_name(loc)}] "
    *table, key = loc
    return f"[{section_name(table)}] {key}: " if table else f"{key}: "


def source_of(loc: tuple[str, ...], origin: dict[tuple[str, ...], str], default: str) -> str:
    """The file (or override) that set the key at `loc` or the table around it; else `default`."""
    for n in range(len(loc), 0, -1):
        if loc[:n] in origin:
            return origin[loc[:n]]
    return default


def _what(err: Any, *, json_words: bool = False) -> str:
    kind: str = err["type"]
    got = err.get("input")
    shown = repr(got) if isinstance(got, str) else json.dumps(got, default=str)
    shown = shown if len(shown) <= 120 else shown[:119] + "…"  # never echo a huge value whole
    if kind == "missing":
        return "missing (required)"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "literal_error":
        return f"expected {err['ctx']['expected']}, got {shown}"
    base = kind.split("_")[0]
    if base in _EXPECTED and kind.endswith(("_type", "_parsing", "_from_float", "_fraction")):
        expected = "an object" if json_words and base in ("dict", "model") else _EXPECTED[base]
        return f"expected {expected}, got {shown}"
    if kind in {"greater_than_equal", "greater_than", "less_than_equal", "less_than"}:
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        limit = next(iter(err["ctx"].values()))
        limit = f"{limit:g}" if isinstance(limit, float) else limit
        return f"must be {op} {limit}, got {shown}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return msg[0].lower() + msg[1:] if msg else kind
