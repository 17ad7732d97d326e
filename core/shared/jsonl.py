"""Reading JSONL bytes defensively: complete lines only, bad lines counted, never raised.

`records()` yields one `Line` per complete line (ending in a newline). A last line without its
newline is the agent still writing: it is not consumed, so the next incremental read starts at
its first byte (`consumed` tells where to resume). Values hold valid Unicode only: invalid UTF-8
and lone surrogates (JSON may escape one, "\\ud800") become U+FFFD, and the line is counted.

`records_as(Kind)` does the same straight into a msgspec `Struct`: the fields the struct does not
declare are skipped while parsing, never built into Python objects (the big payloads a parser
never reads). A line the typed decoder refuses goes the generic way (repaired and counted, or
skipped and counted, as above) and is then converted to the struct, so a drifted record is read,
not lost.

`read_records()` reads a JSONL file skillsleep wrote itself (history, ledger, rollouts): every
line that is a valid record, and the number of every line that is not, with why.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec
from pydantic import BaseModel, ValidationError


def why_unreadable(exc: OSError | ValidationError) -> str:
    """Why a record file or line cannot be read, in a few words (the first problem found)."""
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    err = exc.errors(include_url=False)[0]
    if err["type"] == "json_invalid":
        return "not valid JSON: " + str(err["msg"]).removeprefix("Invalid JSON: ")
    where = ".".join(str(x) for x in err["loc"])
    return f"not a valid record ({where}: {err['msg']})" if where else f"not a valid record ({err['msg']})"


MAX_LINE_BYTES = 32 * 1024 * 1024  # a longer line is skipped as "huge_line"
M = TypeVar("M", bound=BaseModel)
S = TypeVar("S", bound=msgspec.Struct)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # may decode to a lone surrogate
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs: any left is lone
# msgspec decodes UTF-8 bytes about 3× as fast as `json.loads` (bench/harvest.py) and to the same
# values; what it refuses (invalid UTF-8, lone surrogates, NaN, malformed lines) json.loads reads.
_FAST = msgspec.json.Decoder()
_DECODERS: dict[type[msgspec.Struct], msgspec.json.Decoder[Any]] = {}


@dataclass(slots=True)
class Span:
    """Where one complete line lies in its file: from `offset` to `end` (past its newline)."""

    offset: int
    end: int


@dataclass(slots=True)
class Line(Span):
    """One complete JSON object line: its byte offsets (absolute) and parsed value."""

    value: dict[str, Any]


@dataclass(slots=True)
class Typed(Span, Generic[S]):
    """One complete JSON object line decoded into the struct `S` (see `Reader.records_as`)."""

    value: S


@dataclass
class Reader:
    """Iterates the JSON-object lines of a byte buffer that starts at `base_offset` in its file."""

    data: bytes
    base_offset: int = 0
    max_line_bytes: int = MAX_LINE_BYTES
    skipped: Counter[str] = field(default_factory=Counter)
    consumed: int = 0  # absolute offset just past the last complete line

    def __post_init__(self) -> None:
        self.consumed = self.base_offset

    def records(self) -> Iterator[Line]:
        view = memoryview(self.data)  # lines are decoded where they lie, not copied out first
        for start, end in self._spans():
            value = _decode(view[start : end - 1], self.skipped)
            if value is not None:
                yield Line(offset=self.base_offset + start, end=self.base_offset + end, value=value)

    def records_as(self, kind: type[S]) -> Iterator[Typed[S]]:
        """The JSON-object lines decoded into `kind`, whose fields must all accept any JSON value
        (`Any`) for a drifted record to be kept; a line that still does not fit is counted as
        `unexpected_shape`."""
        view, decoder = memoryview(self.data), _typed_decoder(kind)
        for start, end in self._spans():
            raw = view[start : end - 1]
            try:
                value = decoder.decode(raw)
            except (msgspec.DecodeError, RecursionError):  # not UTF-8, a lone surrogate, not an object…
                generic = _decode(raw, self.skipped)
                if generic is None:
                    continue
                try:
                    value = msgspec.convert(generic, kind)
                except msgspec.ValidationError:
                    self.skipped["unexpected_shape"] += 1
                    continue
            yield Typed(offset=self.base_offset + start, end=self.base_offset + end, value=value)

    def _spans(self) -> Iterator[tuple[int, int]]:
        """(start, end past the newline) of every complete line worth decoding, relative to `data`;
        blank lines are passed over and huge ones counted."""
        pos, data = 0, self.data
        while pos < len(data):
            nl = data.find(b"\n", pos)
            if nl < 0:
                break  # half-written last line: leave it for the next read
            start, pos = pos, nl + 1
            self.consumed = self.base_offset + pos
            if data[start : start + 1].isspace() and not data[start:nl].strip():
                continue
            if nl - start > self.max_line_bytes:
                self.skipped["huge_line"] += 1
                continue
            yield start, pos


def _typed_decoder(kind: type[S]) -> msgspec.json.Decoder[S]:
    decoder = _DECODERS.get(kind)
    if decoder is None:
        decoder = _DECODERS[kind] = msgspec.json.Decoder(kind)
    return decoder  # the dict maps each kind to its own decoder


def _decode(raw: memoryview, skipped: Counter[str]) -> dict[str, Any] | None:
    try:
        value = _FAST.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return _decode_exactly(bytes(raw), skipped)  # json.loads decides what it is, and counts it
    if not isinstance(value, dict):
        skipped["not_an_object"] += 1
        return None
    return value  # valid UTF-8 with no lone surrogate: msgspec refuses both


def _decode_exactly(raw: bytes, skipped: Counter[str]) -> dict[str, Any] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = raw.decode("utf-8", errors="replace")
            value = json.loads(text)
        except (ValueError, RecursionError):
            skipped["binary_garbage"] += 1
            return None
        skipped["bad_encoding_repaired"] += 1
        return _without_lone_surrogates(raw, value, skipped) if isinstance(value, dict) else None
    try:
        value = json.loads(text)
    except ValueError:
        skipped["malformed_json"] += 1
        return None
    except RecursionError:
        skipped["too_deep"] += 1
        return None
    if not isinstance(value, dict):
        skipped["not_an_object"] += 1
        return None
    return _without_lone_surrogates(raw, value, skipped)


def _without_lone_surrogates(raw: bytes, value: dict[str, Any], skipped: Counter[str]) -> dict[str, Any] | None:
    """`value` with each lone surrogate replaced by U+FFFD (counted once per line): UTF-8 text,
    such as the state database, cannot hold one."""
    if not _SURROGATE_ESCAPE.search(raw):
        return value  # the common case: no escape that could produce one
    found: list[str] = []

    def fix(node: Any) -> Any:
        if isinstance(node, str):
            if _LONE_SURROGATE.search(node) is None:
                return node
            found.append(node)
            return _LONE_SURROGATE.sub("\ufffd", node)
        if isinstance(node, dict):
            return {fix(k): fix(v) for k, v in node.items()}
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    try:
        repaired: dict[str, Any] = fix(value)
    except RecursionError:  # nested almost as deep as the decoder allows
        skipped["too_deep"] += 1
        return None
    if found:
        skipped["lone_surrogate_repaired"] += 1
    return repaired


def read_records(path: Path, model: type[M]) -> tuple[list[M], list[tuple[int, str]]]:
    """The records of a JSONL file of ours, in order, and (line number, why) for each line that
    is not one: not UTF-8, not JSON (garbage, or a write cut short by a kill), not a `model`, or
    a last line without its newline. A missing file has no records; one that cannot be read at all
    (a folder, no permission) has none either, and line 0 says why (`line_label(0)`: "as a whole")."""
    try:
        raw_lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [(0, exc.strerror or str(exc))]
    torn = raw_lines.pop()  # what follows the last newline: nothing, unless a write was cut short
    out: list[M] = []
    bad: list[tuple[int, str]] = []
    for n, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            out.append(model.model_validate_json(raw.decode("utf-8")))
        except UnicodeDecodeError:
            bad.append((n, "not UTF-8"))
        except ValidationError as exc:
            bad.append((n, why_unreadable(exc)))
    if torn.strip():
        bad.append((len(raw_lines) + 1, "torn: no newline at its end, a write was cut short"))
    return out, bad


def line_label(n: int) -> str:
    """How `read_records()` problem number `n` is named: "line 7", or "as a whole" for 0."""
    return f"line {n}" if n else "as a whole"
