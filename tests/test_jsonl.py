"""Defensive JSONL reading and UTC timestamps, shared by every transcript parser."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from skillsleep.core.shared.jsonl import Reader, _decode, _decode_exactly
from skillsleep.core.shared.session import utc


def test_complete_lines_are_read_and_a_half_written_last_line_is_left_for_later() -> None:
    data = b'{"a": 1}\n{"b": 2}\n{"c": 3'
    reader = Reader(data, base_offset=100)
    lines = list(reader.records())
    assert [line.value for line in lines] == [{"a": 1}, {"b": 2}]
    assert lines[0].offset == 100 and lines[1].offset == 109
    assert reader.consumed == 118 and not reader.skipped
    rest = Reader(data[reader.consumed - 100 :] + b"}\n", base_offset=reader.consumed)
    assert [line.value for line in rest.records()] == [{"c": 3}]


def test_bad_lines_are_counted_by_reason_and_never_raise() -> None:
    data = b"not json\n[1, 2]\n\xff\xfe\x00garbage\n" + b'{"x": "' + b"y" * 50 + b'"}\n\n{"ok": true}\n'
    reader = Reader(data, max_line_bytes=40)
    assert [line.value for line in reader.records()] == [{"ok": True}]
    assert reader.skipped == {"malformed_json": 1, "not_an_object": 1, "binary_garbage": 1, "huge_line": 1}
    assert reader.consumed == len(data)


def test_invalid_utf8_inside_a_json_string_is_repaired_and_counted() -> None:
    reader = Reader(b'{"t": "caf\xe9"}\n')
    assert [line.value["t"] for line in reader.records()] == ["caf\ufffd"]
    assert reader.skipped == {"bad_encoding_repaired": 1}


def test_utc_makes_every_timestamp_an_aware_utc_instant() -> None:
    east = utc("2026-11-29T09:00:00+09:00")
    assert east == datetime(2026, 11, 29, 0, 0, tzinfo=UTC) and east.tzinfo == UTC
    assert utc("2026-11-29T00:00:00Z") == east
    assert utc("2026-11-29T00:00:00") == east  # naive means UTC
    assert utc(1_795_910_400) == utc(1_795_910_400_000)  # seconds or milliseconds
    assert utc("yesterday") is None and utc(None) is None and utc("") is None
    later = utc(datetime(2026, 11, 29, 1, 0, tzinfo=timezone(timedelta(hours=2))))
    assert later is not None and later < east


def test_hostile_nesting_is_counted_not_raised() -> None:
    deep = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    reader = Reader(deep + b'{"ok": 1}\n')
    assert [line.value for line in reader.records()] == [{"ok": 1}]
    assert reader.skipped == {"too_deep": 1}


def test_a_lone_surrogate_escape_is_replaced_and_counted() -> None:
    """Found by tests/test_fuzz_readers.py: JSON may escape a lone UTF-16 surrogate, which no UTF-8
    text holds, so storing the session raised UnicodeEncodeError; a valid pair stays one character."""
    data = b'{"t": "a\\ud800b", "\\udfff": ["x\\udbff"], "ok": "\\ud83d\\ude00"}\n{"t": "\\\\ud800"}\n'
    reader = Reader(data)
    assert [line.value for line in reader.records()] == [
        {"t": "a\ufffdb", "\ufffd": ["x\ufffd"], "ok": "\U0001f600"},
        {"t": "\\ud800"},
    ]
    assert reader.skipped == {"lone_surrogate_repaired": 1}


def test_utc_of_a_wrong_type_is_none() -> None:
    assert utc({"a": 1}) is None and utc([1]) is None and utc(True) is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(value=st.dictionaries(st.text(max_size=8), _JSON, max_size=5), ascii_only=st.booleans())
def test_the_fast_decoder_reads_every_object_as_json_loads_does(value: dict[str, object], ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")  # lone surrogates too
    fast: Counter[str] = Counter()
    exact: Counter[str] = Counter()
    assert repr(_decode(raw, fast)) == repr(_decode_exactly(raw, exact))  # repr: 0.0 ≠ -0.0, 1 ≠ 1.0, nan
    assert fast == exact


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(raw=st.binary(max_size=60) | st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_the_fast_decoder_skips_any_bad_line_for_the_reason_json_loads_gives(raw: bytes) -> None:
    fast: Counter[str] = Counter()
    exact: Counter[str] = Counter()
    assert repr(_decode(raw, fast)) == repr(_decode_exactly(raw, exact))
    assert fast == exact


def test_a_number_beyond_64_bits_stays_an_exact_integer() -> None:
    reader = Reader(b'{"n": 123456789012345678901234567890, "m": -9223372036854775809}\n')
    assert [line.value for line in reader.records()] == [{"n": 123456789012345678901234567890, "m": -(2**63) - 1}]


class _Wanted(msgspec.Struct):
    """A struct of the kind `records_as` is made for: every field takes any JSON value."""

    type: Any = None
    text: Any = None


class _Strict(msgspec.Struct):
    n: int


def test_typed_records_keep_every_line_the_generic_reader_keeps_and_count_the_same() -> None:
    big = json.dumps({"stdout": "x" * 5000, "nested": [{"a": [1, 2, {"b": None}]}] * 50})
    data = b"".join(
        [
            b'{"type": "user", "text": "hi", "unread": ' + big.encode() + b"}\n",
            b'{"type": "user", "text": "caf\xe9"}\n',  # invalid UTF-8 in a field read
            b'{"type": "user", "text": "\\ud800 lone"}\n',  # a lone surrogate in a field read
            b'{"type": ["drifted", 1], "text": {"not": "a string"}}\n',
            b'{"text": "no type", "type": "a", "type": "last wins"}\n',
            b"[1, 2]\n\nnot json\n" + b'{"type": "huge", "text": "' + b"y" * 9000 + b'"}\n',
            b'{"type": "half-written"',
        ]
    )
    generic, typed = Reader(data, base_offset=7, max_line_bytes=9000), Reader(data, base_offset=7, max_line_bytes=9000)
    expected = [(line.offset, line.end, msgspec.convert(line.value, _Wanted)) for line in generic.records()]
    got = [(line.offset, line.end, line.value) for line in typed.records_as(_Wanted)]
    assert got == expected and len(got) == 5
    assert got[1][2].text == "caf\ufffd" and got[2][2].text == "\ufffd lone" and got[4][2].type == "last wins"
    assert (
        typed.skipped
        == generic.skipped
        == {
            "bad_encoding_repaired": 1,
            "lone_surrogate_repaired": 1,
            "not_an_object": 1,
            "malformed_json": 1,
            "huge_line": 1,
        }
    )
    assert typed.consumed == generic.consumed == 7 + data.rindex(b"\n") + 1


def test_a_field_the_struct_skips_is_never_built_so_its_bad_bytes_cost_nothing() -> None:
    """Unread payload is skipped while parsing: invalid UTF-8 there is neither repaired nor
    counted, and the fields read come out exactly as the generic reader gives them."""
    data = b'{"type": "user", "text": "ok", "unread": "\xff\xfe"}\n'
    typed = Reader(data)
    assert [line.value for line in typed.records_as(_Wanted)] == [_Wanted(type="user", text="ok")]
    assert not typed.skipped
    assert [line.value["text"] for line in Reader(data).records()] == ["ok"]


def test_a_line_that_does_not_fit_a_strict_struct_is_counted_not_raised() -> None:
    reader = Reader(b'{"n": "seven"}\n{"n": 7}\n{"n": 8, "m": "\xe9"}\n')
    assert [line.value.n for line in reader.records_as(_Strict)] == [7, 8]
    assert reader.skipped == {"unexpected_shape": 1}
