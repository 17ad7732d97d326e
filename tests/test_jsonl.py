"""Defensive JSONL reading and UTC timestamps, shared by every transcript parser."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from skillsleep.core.jsonl import Reader, _decode, _decode_exactly
from skillsleep.core.session import utc


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
