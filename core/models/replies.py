"""Typed model replies: the shape a stage asks a model for, and what it accepts.

    Reply           base of every reply model; `Reply.json_schema()` is the schema a request sends
    Lenient[T]      a list item the stage takes one by one: a T, or an `Unfit` holding the raw item
    item_numbers()  the 1-based item numbers a reply names, checked against the items shown

A reply model asks strictly and accepts leniently. Its schema asks for every field (a model under
a grammar writes them all; `OPTIONAL` marks a field it may leave out), while a field's default
only keeps a reply usable when a model without a grammar leaves the field out. A reply that is
not JSON, or whose fields have the wrong type, is a `ParseError` (`LLM.ask_model`); an item of a
`Lenient` list that does not fit is kept as an `Unfit`, so one bad item never costs the others.
What a stage could not use is recorded as a `records.UnusableReply`, one way for every stage.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, SkipJsonSchema

from skillsleep.core.shared.records import Record

T = TypeVar("T")

_OPTIONAL_KEY = "skillsleep_optional"
OPTIONAL: dict[str, Any] = {_OPTIONAL_KEY: True}  # Field(json_schema_extra=OPTIONAL): a field not asked for


class Reply(BaseModel):
    """Base of a model reply: keys nobody asked for are ignored."""

    model_config = ConfigDict(extra="ignore")

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON schema a request for this reply sends (see `_compact`)."""
        return copy.deepcopy(_schema_of(cls))


class Unfit(Record):
    """An item of a reply that does not have the shape asked for: reported, never used."""

    value: Any
    error: str


def _fit(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    try:
        return handler(value)
    except ValidationError as exc:
        return Unfit(value=value, error=short_error(exc, item=True))


Lenient = Annotated[T | SkipJsonSchema[Unfit], Field(union_mode="left_to_right"), WrapValidator(_fit)]


def _none_as_empty(value: object) -> object:
    return "" if value is None else value


Text = Annotated[str, BeforeValidator(_none_as_empty)]  # a text field a model may write as null


def given(text: str) -> str | None:
    """A text a model wrote, or None when it is blank (a blank field means "not given")."""
    return text if text.strip() else None


def raw(item: object) -> object:
    """What the model wrote for an item: an Unfit's raw value, a fitted item as is."""
    return item.value if isinstance(item, Unfit) else item


def short_error(exc: ValidationError, *, item: bool = False) -> str:
    """The first problem of a validation error in a few words ("unknown kind 'style'"); `item`:
    of a `Lenient` item (its first location is the union's tag)."""
    err = exc.errors(include_url=False)[0]
    loc = [str(part) for part in err["loc"][1 if item else 0 :]]
    field = repr(".".join(loc))
    kind, seen = err["type"], repr(err["input"])[:80]
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"{field} is not an object" if loc else "not an object"
    if kind == "literal_error":
        return f"unknown {loc[-1] if loc else 'value'} {seen}"
    if kind == "missing":
        return f"no {field}" if item else f"the reply has no {field}"
    if kind == "list_type":
        return (f"{field} is not a list" if loc else "not a list") if item else f"the reply has no list under {field}"
    message = str(err["msg"])
    message = message[:1].lower() + message[1:]
    return f"{field}: {message}, got {seen}" if loc else f"{message}, got {seen}"


class _AsWritten(GenerateJsonSchema):
    """Keys in the order pydantic builds them and extras as written (pydantic sorts them)."""

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        return value


@functools.cache
def _schema_of(model: type[Reply]) -> dict[str, Any]:
    generated = model.model_json_schema(schema_generator=_AsWritten)
    defs = generated.pop("$defs", {})
    schema = _compact(generated, defs)
    title = model.model_config.get("title")
    return {"title": title, **schema} if title else schema


_FIRST = ("type", "properties", "items")  # then the rest in pydantic's order


def _compact(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's schema as the requests have always sent it: references inlined; no titles,
    descriptions (docstrings) or defaults; "type" first; a union of plain types as a list of
    types; every property required unless marked OPTIONAL."""
    if "$ref" in node:
        return _compact(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    node = {k: v for k, v in node.items() if k not in ("title", "description", "default", "required", _OPTIONAL_KEY)}
    if "anyOf" in node and all(set(option) == {"type"} for option in node["anyOf"]):
        node["type"] = [option["type"] for option in node.pop("anyOf")]
    out = {key: node.pop(key) for key in _FIRST if key in node}
    if "properties" in out:
        properties: dict[str, Any] = out["properties"]
        out["properties"] = {name: _compact(prop, defs) for name, prop in properties.items()}
        out["required"] = [name for name, prop in properties.items() if not prop.get(_OPTIONAL_KEY)]
    if "items" in out:
        out["items"] = _compact(out["items"], defs)
    return {**out, **node}


class ItemNumbers(Record):
    """The items a reply names by number (from 1), checked against how many were shown."""

    indexes: list[int] = Field(default_factory=list)  # 0-based, in the order given, each once
    ignored: list[Any] = Field(default_factory=list)  # what was not used, as written, in order
    not_numbers: list[Any] = Field(default_factory=list)
    out_of_range: list[int] = Field(default_factory=list)
    repeated: list[int] = Field(default_factory=list)


def item_numbers(values: Sequence[int | Unfit], count: int) -> ItemNumbers:
    """Split `values` (numbers of items 1..count) into the items they name and what is ignored:
    what is not a whole number, out of range, or named again. A stage that drops the ignored ones
    uses `indexes`; one that refuses the whole list when anything is ignored checks `ignored`."""
    out = ItemNumbers()
    for value in values:
        if isinstance(value, Unfit):
            out.not_numbers.append(value.value)
        elif not 1 <= value <= count:
            out.out_of_range.append(value)
        elif value - 1 in out.indexes:
            out.repeated.append(value)
        else:
            out.indexes.append(value - 1)
            continue
        out.ignored.append(raw(value))
    return out
