"""Property-based fuzzing (hypothesis) of every reader of input that skillsleep does not write.

One strategy and one property per reader:

    reader                           strategy                 property
    parse_claude, parse_codex,       Format.transcripts()     never raises; a half-written last line
    parse_openclaw_jsonl,                                     waits unread; every complete line is in
    parse_chat_log                                            a session's byte span, counted in
                                                              `skipped`, or a record that alone yields
                                                              nothing (metadata); sessions can be stored
    Harvester over those files       transcripts appended     the same over incremental reads;
                                     in chunks                bytes_read is what is new, the skip
                                                              counts those of one read; an unchanged
                                                              file reads nothing
    read_openclaw_sqlite,            store_rows()             never raises, never "sqlite_unreadable"
    Harvester over the store                                  for a store with its table; a re-read
                                                              finds nothing new
    load_tasks                       TASK_FILES               tasks, or a ConfigError
    load_config (+ overrides)        RUN_CONFIGS, OVERRIDES   a TrainConfig, or a ConfigError
    user_config (the settings file)  SETTINGS_FILES           a UserConfig, or a ConfigError
    Proposals.history                HISTORY_FILES            exactly the lines that hold an Action
    Proposals.list                   PROPOSAL_FOLDERS         each proposal.json listed or named in
                                                              `problems`

Strategies are structurally plausible: real records from tests/fixtures (and the shapes in the
readers' docstrings) with fields replaced by hostile values (wrong types, huge ints, deep nesting,
NUL, lone surrogates, invalid UTF-8, CRLF, very long strings, missing or duplicate ids), mixed with
raw bytes, so the fuzzer reaches the handlers and not only the JSON decoder. Inputs it once broke
a reader with are pinned with `@example`.

The budget is fixed and derandomized (`budget()`): CI runs the same examples every time.
"""

from __future__ import annotations

import copy
import json
import os
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skillsleep.core.harvest.harvester import Harvester, Source, source_key
from skillsleep.core.models.store import Store
from skillsleep.core.night.user_config import UserConfig
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.report.proposal_record import Action, Proposal
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.session import ParseResult, Session
from skillsleep.core.train.config import TrainConfig, load_config
from skillsleep.core.train.tasks import load_tasks
from skillsleep.harnesses.chat_logs import parse_chat_log
from skillsleep.harnesses.claude_code.transcripts import parse_claude
from skillsleep.harnesses.codex.transcripts import parse_codex
from skillsleep.harnesses.openclaw.store import read_openclaw_sqlite
from skillsleep.harnesses.openclaw.transcripts import parse_openclaw_jsonl
from skillsleep.slash_commands.harvester import DB_READERS, PARSERS
from skillsleep.slash_commands.wiring import ConfigFile, user_config

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = Path(__file__).parents[1] / "examples" / "answer-format"

settings.register_profile(
    "fuzz",
    derandomize=True,  # the same examples on every run: a CI failure reproduces locally
    deadline=None,  # 2 shared cores: timing is no property
    database=None,  # nothing written next to the repository
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


# SKILLSLEEP_FUZZ_SCALE=20 multiplies every budget and draws fresh random examples: a deeper hunt
# by hand; CI leaves it unset.
_SCALE = float(os.environ.get("SKILLSLEEP_FUZZ_SCALE", "1"))


def budget(examples: int) -> settings:
    """The fixed CI budget of one property: `examples` derandomized examples."""
    return settings(settings.get_profile("fuzz"), max_examples=round(examples * _SCALE), derandomize=_SCALE == 1)


@contextmanager
def scratch() -> Iterator[Path]:
    """A fresh temporary folder per example (pytest's tmp_path is one per test, not per example)."""
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


# --- hostile values -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """JSON text spliced verbatim into an encoded record (what json.dumps cannot write)."""

    data: bytes


RAW_FRAGMENTS = [
    b"[" * 5000 + b"]" * 5000,  # deeper than the JSON decoder's recursion limit
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b'"caf\xe9 \xff\xfe\xc0\x80"',  # invalid UTF-8 inside a string
    b'"\xed\xa0\x80"',  # a surrogate written as UTF-8 bytes
    b'"\\ud800"',
    b'"x\\udfff"',
    b'"\\udbff\\u0041"',  # lone surrogates, escaped
    b"9" * 5000,  # more digits than Python turns into an int
    b"1e999",
    b"-1e999",
    b"NaN",
    b"-Infinity",
    b'{"id": "a", "id": ["b"]}',  # a duplicate key
    b'"\\u0000\\r\\n\\u2028"',
]
_CHARS = st.characters(codec="utf-8") | st.characters(categories=["Cs"]) | st.sampled_from('\x00\r\n\t\u2028\ufeff\\"')
TEXT = st.text(_CHARS, max_size=30)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**300]),
    st.floats(),  # NaN and ±inf too: json.dumps writes them, json.loads reads them
    TEXT,
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\r\n",
            "null",
            "2026-11-29T10:00:00Z",
            "9999-12-31T23:59:59+14:00",
            "0001-01-01",
            "2026-13-45",
            "user",
            "assistant",
            "message",
            "session",
            "/",
            "$x",
        ]
    ),
    st.builds(
        lambda c, n: c * n, st.sampled_from(["x", "\n", "é", "[", "<a>", "Current time: "]), st.integers(5_000, 60_000)
    ),  # very long strings
    st.sampled_from(RAW_FRAGMENTS).map(Raw),
)
HOSTILE = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=8
)


# Spliced into a real string field (a prompt, an id, a path), so hostile text reaches the turns.
SNIPPETS = (
    st.sampled_from(
        [
            "\ud800",
            "\udfff",
            "\x00",
            "\r\n",
            "\r",
            "\u2028",
            "\ufeff",
            "\\",
            '"',
            "\n\n",
            "\U0001f600",
            "<system-reminder>",
            "/",
            "~nosuchuser/",
            "[cron:x] ",
            "Current time: ",
        ]
    )
    | TEXT
)


def encode(value: Any, *, ascii_only: bool = True) -> bytes:
    """A value as one JSON line body (no newline); Raw parts spliced in; lone surrogates kept
    (escaped when `ascii_only`, else as the invalid UTF-8 bytes a careless writer produces)."""
    raws: list[bytes] = []

    def mark(v: Any) -> Any:
        if isinstance(v, Raw):
            raws.append(v.data)
            return f"\x00raw{len(raws) - 1}\x00"
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        if isinstance(v, list):
            return [mark(x) for x in v]
        return v

    data = json.dumps(mark(value), ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    for i, raw in enumerate(raws):
        data = data.replace(json.dumps(f"\x00raw{i}\x00").encode(), raw, 1)
    return data


# --- plausible records ----------------------------------------------------------------------------


def _shorten(value: Any) -> Any:
    """A seed keeps its shape, not its payload: strings cut to 200 characters."""
    if isinstance(value, str):
        return value[:200]
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v) for v in value[:6]]
    return value


def _balanced(records: list[dict[str, Any]], per_kind: int = 8) -> list[dict[str, Any]]:
    """Distinct records, at most `per_kind` of each type (a fixture's 45 attachments would
    otherwise crowd out its prompts)."""
    kinds: Counter[str] = Counter()
    seen: dict[str, dict[str, Any]] = {}
    for record in map(_shorten, records):
        payload = record.get("payload")
        kind = repr((record.get("type"), payload.get("type") if isinstance(payload, dict) else None))
        key = json.dumps(record, sort_keys=True)
        if key not in seen and kinds[kind] < per_kind:
            kinds[kind] += 1
            seen[key] = record
    return list(seen.values())


def _fixture_records(*patterns: str) -> list[dict[str, Any]]:
    records = []
    for pattern in patterns:
        for path in sorted(FIXTURES.glob(pattern)):
            for raw in path.read_bytes().splitlines():
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue  # the damaged fixtures: the raw-bytes strategy covers those
                if isinstance(value, dict):
                    records.append(value)
    return records


def _store_records(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT event_json FROM transcript_events WHERE event_json IS NOT NULL").fetchall()
    finally:
        conn.close()
    return [json.loads(text) for (text,) in rows]


# Direct-chat logs have no fixture file: the shapes of harnesses/chat_logs.py's docstring.
_CHAT_SEEDS: list[dict[str, Any]] = [
    {
        "id": "conv-1",
        "model": "gpt-x",
        "created": 1_790_000_000,
        "metadata": {"project": "/home/me/proj"},
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 100}},
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": [{"type": "text", "text": "what is in README?"}]},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "R"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "# Title", "timestamp": "2026-11-29T10:00:00Z"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "It has a title."}]},
        ],
    },
    {
        "timestamp": "2026-11-29T10:00:00Z",
        "metadata": {"cwd": "/p"},
        "messages": [{"role": "user", "content": "hi"}, {"role": "developer", "content": "x"}],
    },
]

CLAUDE_SEEDS = _balanced(
    _fixture_records("recorded/claude/config/projects/*/*.jsonl", "claude/*.jsonl", "claude/root/**/*.jsonl")
)
CODEX_SEEDS = _balanced(_fixture_records("recorded/codex/codex-home/sessions/**/*.jsonl", "codex/*.jsonl"))
OPENCLAW_SEEDS = _balanced(
    _fixture_records("openclaw/*.jsonl")
    + _store_records(FIXTURES / "recorded/openclaw/state/agents/main/agent/openclaw-agent.sqlite")
)


def _vocabulary(seeds: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Scalar values seen under each key of the seeds: a mutation may swap in another valid one
    (a `type` from another record), which reaches deeper than a random value."""
    vocab: dict[str, set[Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, (str, int, bool)) and not (isinstance(v, str) and len(v) > 60):
                    vocab.setdefault(k, set()).add(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(seeds)
    return {k: sorted(v, key=repr)[:40] for k, v in vocab.items()}


@st.composite
def mutated(draw: st.DrawFn, seeds: list[dict[str, Any]], vocab: dict[str, list[Any]]) -> Any:
    """A seed record with a few fields replaced, dropped or added, anywhere in its tree."""
    record: Any = copy.deepcopy(draw(st.sampled_from(seeds)))
    if draw(st.booleans()):
        record = _taint(draw, record)
    for _ in range(draw(st.integers(0, 4))):
        record = _mutate(draw, record, vocab, depth=0)
    return record


def _taint(draw: st.DrawFn, node: Any) -> Any:
    """The tree with hostile snippets spliced into some of its strings (not into `type` / `role`:
    `_mutate` changes those, and a record of no known type reaches no handler)."""
    if isinstance(node, str):
        return node if draw(st.integers(0, 2)) < 2 else _splice(draw, node)  # shrinks towards no snippet
    if isinstance(node, dict):
        return {k: v if k in ("type", "role") else _taint(draw, v) for k, v in node.items()}
    if isinstance(node, list):
        return [_taint(draw, v) for v in node]
    return node


def _splice(draw: st.DrawFn, text: str) -> str:
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(SNIPPETS) + text[at:]


def _mutate(draw: st.DrawFn, node: Any, vocab: dict[str, list[Any]], *, depth: int) -> Any:
    if isinstance(node, str) and draw(st.booleans()):
        return _splice(draw, node)
    if not isinstance(node, (dict, list)) or not node or draw(st.integers(0, 19)) < (1 if depth == 0 else 6):
        return draw(HOSTILE)
    key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
    op = draw(st.sampled_from(["descend", "descend", "replace", "delete", "add"]))
    if op == "delete":
        del node[key]
    elif op == "add" and isinstance(node, dict):
        name = draw(st.sampled_from(sorted(vocab)) | TEXT)
        node[name] = draw(st.sampled_from(vocab[name]) if vocab.get(name) else HOSTILE)
    elif op == "replace":
        known = vocab.get(key) if isinstance(key, str) else None
        node[key] = draw(st.sampled_from(known) | HOSTILE if known else HOSTILE)
    else:
        node[key] = _mutate(draw, node[key], vocab, depth=depth + 1)
    return node


def lines(seeds: list[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    """One line's bytes (without its end): mostly mutated records, some intact, some raw bytes."""
    vocab = _vocabulary(seeds)
    record = mutated(seeds, vocab)
    return st.one_of(
        *[st.builds(encode, record, ascii_only=st.booleans())] * 3,
        *[st.sampled_from(seeds).map(encode)] * 2,
        st.binary(max_size=120),
        st.sampled_from([b"", b"   ", b"\r", b"\x00" * 8, b"{", b"[]", b"null", b'"text"', b"{}", b"\xef\xbb\xbf{}"]),
    )


@st.composite
def jsonl(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> bytes:
    """A JSONL buffer: lines ended by LF or CRLF, and maybe a half-written last line."""
    body = b"".join(
        draw(lines(seeds)) + draw(st.sampled_from([b"\n", b"\r\n"])) for _ in range(draw(st.integers(0, 12)))
    )
    tail = draw(st.just(b"") | lines(seeds).map(lambda b: b[: len(b) // 2 + 1]))
    return body + tail.replace(b"\n", b"")


# --- transcript formats ---------------------------------------------------------------------------

Parse = Callable[..., ParseResult]


@dataclass(frozen=True)
class Format:
    """A transcript format: its parser, where its files live (relative) and its seed records."""

    harness: str
    parse: Parse
    path: str
    seeds: list[dict[str, Any]]

    def transcripts(self) -> st.SearchStrategy[bytes]:
        """The strategy: a transcript's bytes built from this format's records."""
        return jsonl(self.seeds)


FORMATS = {
    f.harness: f
    for f in [
        Format(
            "claude-code",
            parse_claude,
            "projects/-home-me-proj/11111111-2222-4333-8444-555555555555.jsonl",
            CLAUDE_SEEDS,
        ),
        Format(
            "codex",
            parse_codex,
            "sessions/2026/11/29/rollout-2026-11-29T13-46-14-01a2278e-6a7b-7322-a650-77857e49afc6.jsonl",
            CODEX_SEEDS,
        ),
        Format("openclaw", parse_openclaw_jsonl, "agents/main/sessions/fixture-channel-1.jsonl", OPENCLAW_SEEDS),
        Format("chat", parse_chat_log, "chat-logs/today.jsonl", _CHAT_SEEDS),
    ]
}


def complete_lines(data: bytes, base: int) -> list[tuple[int, bytes]]:
    """(absolute offset, bytes) of every complete, non-blank line of `data`."""
    out, pos = [], 0
    while (nl := data.find(b"\n", pos)) >= 0:
        if data[pos:nl].strip():
            out.append((base + pos, data[pos:nl]))
        pos = nl + 1
    return out


def unaccounted(fmt: Format, data: bytes, base: int, sessions: list[Session], skipped: Counter[str]) -> int:
    """How many complete lines are neither in a session's byte span, nor counted in `skipped`,
    nor a record that alone yields nothing (a metadata record, by design not counted); > 0 means
    a line was dropped silently."""
    spans = [(s.byte_start, s.byte_end) for s in sessions]
    outside = [raw for start, raw in complete_lines(data, base) if not any(a <= start < b for a, b in spans)]
    loud = [raw for raw in outside if _yields_something(fmt, raw)]
    return max(0, len(loud) - sum(skipped.values()))


def _yields_something(fmt: Format, raw: bytes) -> bool:
    alone = fmt.parse(raw + b"\n", source="/fuzz/" + fmt.path)
    return bool(alone.sessions or alone.skipped)


@pytest.mark.parametrize("harness", FORMATS)
@budget(100)
@given(data=st.data())
def test_a_transcript_parser_reads_any_bytes_into_sessions_or_counted_skips(harness: str, data: st.DataObject) -> None:
    fmt = FORMATS[harness]
    buffer = data.draw(fmt.transcripts(), label="buffer")
    base = data.draw(st.sampled_from([0, 4096]), label="base_offset")
    result = fmt.parse(buffer, source="/fuzz/" + fmt.path, base_offset=base)
    complete = buffer.rfind(b"\n") + 1
    assert result.bytes_read == complete  # every complete line read; the half-written one waits
    for s in result.sessions:
        assert base <= s.byte_start <= s.byte_end <= base + complete
        assert Session.model_validate_json(s.model_dump_json()) == s  # it can be stored as it is
    assert unaccounted(fmt, buffer, base, result.sessions, result.skipped) == 0


# --- the harvest path -----------------------------------------------------------------------------


# A folder on the transcript's path: its name is bytes to the file system, maybe not UTF-8.
FOLDER_NAMES = st.sampled_from(["home", "caf\u00e9 \U0001f600", "a\\b\nc", "C# 100% done?"]) | st.binary(
    min_size=1, max_size=8
).filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")).map(os.fsdecode)


def _harvester(root: Path) -> Harvester:
    return Harvester(Store(root / "state.db"), PARSERS, Redactor(), db_readers=DB_READERS)


@pytest.mark.slow  # a state database and files per example
@pytest.mark.parametrize("harness", FORMATS)
@budget(30)
@given(data=st.data())
def test_harvest_reads_appended_bytes_once_and_accounts_for_every_line(harness: str, data: st.DataObject) -> None:
    fmt = FORMATS[harness]
    chunks = data.draw(st.lists(fmt.transcripts().filter(bool), min_size=1, max_size=3), label="appended chunks")
    folder = data.draw(FOLDER_NAMES, label="folder")
    with scratch() as root:
        path = root / folder / fmt.path
        path.parent.mkdir(parents=True)
        path.touch()
        harvester = _harvester(root)
        source = Source(harness=harness, path=path)
        offset, skipped = 0, Counter[str]()
        for chunk in chunks:
            with path.open("ab") as fh:
                fh.write(chunk)
            size = path.stat().st_size
            report = harvester.harvest([source])
            assert report.bytes_read == size - offset  # only what is new since the last complete line
            offset = path.read_bytes().rfind(b"\n") + 1
            assert (report.waiting_bytes, report.unreadable) == (size - offset, [])
            skipped += report.skipped
        again = harvester.harvest([source])
        assert (again.bytes_read, again.files_read, again.sessions, again.skipped) == (0, 0, {}, Counter())
        whole = path.read_bytes()
        assert skipped == fmt.parse(whole, source=source_key(path)).skipped  # incremental reads count like one
        stored = harvester.store.sessions(harness)
        assert all(s.source == source_key(path) and s.byte_end <= offset for s in stored)
        assert unaccounted(fmt, whole, 0, stored, skipped) == 0
        harvester.store.close()


# --- the OpenClaw SQLite store --------------------------------------------------------------------

# A store whose columns take any type (a damaged or drifted one; the real schema is stricter).
_LOOSE_SCHEMA = """
CREATE TABLE transcript_events (session_id, seq, event_json, event_zstd, PRIMARY KEY (session_id, seq));
CREATE TABLE session_nodes (session_key, session_id);
"""
_ZSTD = zstandard.ZstdCompressor()
_IDS = st.sampled_from(["s1", "s2", "", "agent:main:x", "\x00"]) | TEXT.map(
    lambda t: t.encode("utf-8", "replace").decode()
)
_SQL_VALUES = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.binary(max_size=40),
    TEXT.map(lambda t: t.encode("utf-8", "replace").decode()),
)


@st.composite
def event_cell(draw: st.DrawFn) -> tuple[Any, Any]:
    """(event_json, event_zstd) of one row: a plausible event as text, bytes or zstd, or junk."""
    event = draw(lines(OPENCLAW_SEEDS))
    kind = draw(
        st.sampled_from(["text", "text", "zstd", "zstd", "blob", "bad_text", "both", "bad_zstd", "none", "junk"])
    )
    if kind == "bad_text":  # TEXT that is not UTF-8 (SQLite stores what it is given)
        return Raw(event + b"\xff"), None
    if kind == "text":
        return event.decode("utf-8", "replace"), None
    if kind == "zstd":
        return None, _ZSTD.compress(event)
    if kind == "blob":
        return event, None
    if kind == "both":
        return event.decode("utf-8", "replace"), _ZSTD.compress(b"{}")
    if kind == "bad_zstd":
        return None, b"\x28\xb5\x2f\xfd" + draw(st.binary(max_size=30))
    if kind == "none":
        return None, None
    return draw(_SQL_VALUES), draw(_SQL_VALUES)


@st.composite
def store_rows(draw: st.DrawFn) -> list[tuple[Any, Any, Any, Any]]:
    """Rows of transcript_events: mostly a few sessions with increasing seqs, some of odd types."""
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        sid = draw(_IDS | _SQL_VALUES) if draw(st.integers(0, 9)) == 0 else draw(_IDS)
        seq = draw(_SQL_VALUES) if draw(st.integers(0, 9)) == 0 else draw(st.integers(-3, 50))
        rows.append((sid, seq, *draw(event_cell())))
    return rows


def _store(root: Path) -> Path:
    db = root / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.executescript(_LOOSE_SCHEMA)
    conn.close()
    return db


def _insert(db: Path, rows: list[tuple[Any, Any, Any, Any]], keys: list[tuple[Any, Any]]) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA synchronous=OFF")  # a test file: no fsync needed
    with conn:
        for sid, seq, text, blob in rows:
            as_text = isinstance(text, Raw)  # bytes cast to TEXT: invalid UTF-8 in a text column
            conn.execute(
                "INSERT OR REPLACE INTO transcript_events VALUES (?, ?, CASE WHEN ? THEN CAST(? AS TEXT) "
                "ELSE ? END, ?)",
                (sid, seq, as_text, *[text.data if as_text else text] * 2, blob),
            )
        conn.executemany("INSERT INTO session_nodes VALUES (?, ?)", keys)
    conn.close()


@pytest.mark.slow  # an OpenClaw store per example
@budget(50)
@given(
    batches=st.lists(store_rows(), min_size=1, max_size=3),
    keys=st.lists(st.tuples(_IDS | _SQL_VALUES, _IDS), max_size=3),
    folder=FOLDER_NAMES,
)
def test_the_openclaw_store_reads_any_rows_and_a_reread_finds_nothing_new(
    batches: list[list[tuple[Any, Any, Any, Any]]],
    keys: list[tuple[Any, Any]],
    folder: str,
) -> None:
    with scratch() as root:
        db = _store(root / folder)
        cursor: dict[str, int] = {}
        for i, rows in enumerate(batches):
            _insert(db, rows, keys if i == 0 else [])
            result, cursor = read_openclaw_sqlite(db, after_seq=cursor)
            assert not result.skipped["sqlite_unreadable"]  # bad rows are counted one by one
            assert all(isinstance(k, str) and isinstance(v, int) for k, v in cursor.items())
            for s in result.sessions:
                assert s.byte_start <= s.byte_end and s.source == source_key(db)
                assert Session.model_validate_json(s.model_dump_json()) == s
        again, same = read_openclaw_sqlite(db, after_seq=cursor)
        assert (again.sessions, same) == ([], cursor)


@pytest.mark.slow  # a state database and an OpenClaw store per example
@budget(30)
@given(batches=st.lists(store_rows(), min_size=1, max_size=3), folder=FOLDER_NAMES)
def test_harvest_of_an_openclaw_store_never_raises_and_an_unchanged_store_reads_nothing(
    batches: list[list[tuple[Any, Any, Any, Any]]],
    folder: str,
) -> None:
    with scratch() as root:
        db = _store(root / folder)
        harvester = _harvester(root)
        source = Source(harness="openclaw", path=db, kind="sqlite")
        for rows in batches:
            _insert(db, rows, [])
            report = harvester.harvest([source])
            assert report.unreadable == [] and not report.skipped["sqlite_locked"]
            assert not report.skipped["sqlite_unreadable"]
        again = harvester.harvest([source])
        assert (again.files_read, again.sessions) == (0, {})
        assert all(s.source == source_key(db) for s in harvester.store.sessions("openclaw"))
        harvester.store.close()


# --- task files, run configs, the settings file ---------------------------------------------------


def toml(doc: Any) -> str:
    """`doc` as TOML: top-level tables become [sections]. What TOML cannot hold (null, a lone
    surrogate, raw JSON) is written anyway, as a careless hand or tool would."""
    if not isinstance(doc, dict):
        return _toml_value(doc) + "\n"
    plain = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    tables = [
        f"[{_toml_key(k)}]\n" + "".join(f"{_toml_key(n)} = {_toml_value(x)}\n" for n, x in v.items())
        for k, v in doc.items()
        if isinstance(v, dict)
    ]
    return "\n".join([*plain, *tables]) + "\n"


def _toml_key(key: str) -> str:
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else json.dumps(key)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)  # nan, inf, 1e+300: TOML spells them the same way
    if isinstance(v, str):
        return json.dumps(v)  # JSON's string escapes are TOML's basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(map(_toml_value, v)) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, Raw):
        return v.data.decode("utf-8", "surrogateescape")
    return "null"


@st.composite
def text_file(draw: st.DrawFn, body: st.SearchStrategy[str]) -> bytes:
    """A file's bytes: `body` as UTF-8 (CRLF or not), maybe with hand-typed or binary lines added."""
    text = draw(body)
    if draw(st.integers(0, 3)) == 0:
        extra = st.sampled_from(["", "# note", "[", "x = ", "= 1", "[[data]]", "\ufeff", "\x00"]) | TEXT
        text = "\n".join([text, *draw(st.lists(extra, min_size=1, max_size=2))])
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = data.replace(b"\n", b"\r\n")
    return data + (draw(st.binary(max_size=6)) if draw(st.integers(0, 3)) == 0 else b"")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


TASK_SEEDS: list[dict[str, Any]] = [
    *_read_jsonl(EXAMPLE / "tasks.jsonl")[:6],
    {
        "id": "add-1",
        "prompt": "What is 17 + 25?",
        "split": "val",
        "context": "optional text",
        "judge": {
            "checks": [
                {
                    "type": "last_line_regex",
                    "value": "ANSWER: .+",
                    "case_sensitive": False,
                    "feedback": "End with a final line `ANSWER: <answer>`.",
                }
            ],
            "answer": "42",
            "answer_pattern": "ANSWER:\\s*(.+)\\s*$",
            "answer_match": "number",
        },
    },
    {
        "id": "short",
        "prompt": "Say hi",
        "checks": [{"type": "max_chars", "value": 40}],
        "rubric": "friendly",
        "rubric_pass": 0.7,
    },
]
RUN_SEED: dict[str, Any] = json.loads(json.dumps(load_config(EXAMPLE / "run.toml").model_dump(mode="json")))
RUN_TOML: dict[str, Any] = {**{k: v for k, v in RUN_SEED.items() if k != "prices"}, "extends": "base.toml"}
SETTINGS_SEED: dict[str, Any] = {  # the example of core/night/user_config.py's docstring, every [sleep] key set
    "harvest": {"chat_dirs": ["~/chat-logs", "exports"], "redact_patterns": ["acme-[0-9]{8}"]},
    "harness": {"codex": {"command": "/opt/codex/bin/codex"}},
    "sleep": UserConfig().sleep.model_dump() | {"harness": "codex", "backend": "deepseek", "since": "7d"},
}


def _documents(seed: dict[str, Any]) -> st.SearchStrategy[str]:
    return mutated([seed], _vocabulary([seed])).map(toml)


# The strategies: a task file, a run config (and the base.toml it extends), its command-line
# overrides, a settings file.
TASK_FILES = text_file(
    st.lists(lines(TASK_SEEDS).map(lambda b: b.decode("utf-8", "surrogateescape")), max_size=6).map("\n".join)
)
RUN_CONFIGS = text_file(_documents(RUN_TOML))
OVERRIDES = st.lists(
    st.tuples(
        st.sampled_from(sorted(f"{s}.{k}" for s, t in RUN_SEED.items() for k in t)) | TEXT,
        SCALARS.map(_toml_value) | TEXT,
    ).map("=".join),
    max_size=3,
)
SETTINGS_FILES = text_file(_documents(SETTINGS_SEED))
DEEP = b"[" * 5000 + b"]" * 5000  # nested deeper than Python's recursion limit


@budget(100)
@given(data=TASK_FILES)
@example(data=b"\x80\n")  # UnicodeDecodeError
@example(data=b'{"id": "a", "prompt": ' + DEEP + b"}\n")  # RecursionError
@example(data=b'{"id": "a", "prompt": "p", "answer": ' + b"9" * 5000 + b"}\n")  # ValueError (int digits)
@example(data=b'{"id": "\\ud800", "prompt": "p", "answer": "4"}\n')  # a Task that cannot be written as JSON
def test_a_task_file_gives_tasks_or_one_config_error(data: bytes) -> None:
    with scratch() as root:
        path = root / "tasks.jsonl"
        path.write_bytes(data)
        try:
            tasks = load_tasks(path)
        except ConfigError as exc:
            assert str(path.name) in str(exc)
        else:
            assert tasks and len({t.id for t in tasks}) == len(tasks)
            assert all(t.model_dump_json() for t in tasks)  # a run can record them


@budget(100)
@given(main=RUN_CONFIGS, base=RUN_CONFIGS, overrides=OVERRIDES)
@example(main=b"\x80", base=b"", overrides=[])  # UnicodeDecodeError
@example(main=b"x = " + DEEP, base=b"", overrides=[])  # RecursionError
@example(main=b'extends = "a\\u0000b"\n', base=b"", overrides=[])  # ValueError (embedded null byte)
@example(main=b'[data]\ntasks = "~nosuchuser/t"\nskill = "s"\n', base=b"", overrides=[])  # RuntimeError
@example(main=b'[data]\ntasks = "t"\nskill = "s"\n', base=b"", overrides=["run.name=" + "[" * 5000])  # RecursionError
def test_a_run_config_gives_a_train_config_or_one_config_error(main: bytes, base: bytes, overrides: list[str]) -> None:
    with scratch() as root:
        (root / "run.toml").write_bytes(main)
        (root / "base.toml").write_bytes(base)
        try:
            cfg = load_config(root / "run.toml", overrides)
        except ConfigError as exc:
            assert str(exc)
        else:
            assert isinstance(cfg, TrainConfig) and cfg.model_dump_json()


@budget(100)
@given(data=SETTINGS_FILES)
@example(data=b"x = " + DEEP)  # RecursionError
@example(data=b'[harvest]\nchat_dirs = ["a\\u0000b"]\n')  # ValueError (embedded null byte)
@example(data=b'[harvest]\nchat_dirs = ["~nosuchuser/logs"]\n')  # RuntimeError
def test_the_settings_file_gives_settings_or_one_config_error(data: bytes) -> None:
    with scratch() as root:
        path = root / "config.toml"
        path.write_bytes(data)
        try:
            cfg = user_config(ConfigFile(path=path, exists=True, chosen_by="SKILLSLEEP_CONFIG"))
        except ConfigError as exc:
            assert str(exc)
        else:
            assert isinstance(cfg, UserConfig) and cfg.model_dump_json()


# --- history.jsonl and proposal records -----------------------------------------------------------

ACTION_SEEDS: list[dict[str, Any]] = [
    {
        "time": "2026-11-29T03:00:00+00:00",
        "kind": "stage",
        "proposal_id": "20261129-030000-ab12",
        "skill_path": "/home/me/.claude/skills/x/SKILL.md",
        "detail": "accepted: val 0.5 → 0.8",
        "backup": None,
    },
    {
        "time": "2026-11-29T08:00:00Z",
        "kind": "adopt",
        "proposal_id": "20261129-030000-ab12",
        "skill_path": "/home/me/.claude/skills/x/SKILL.md",
        "detail": "",
        "backup": "/data/backups/00001-x",
    },
    {"time": "2026-11-30T08:00:00", "kind": "rollback", "skill_path": "/s/SKILL.md", "backup": "/b/00002-rollback"},
]
PROPOSAL_SEED: dict[str, Any] = {
    "id": "20261129-030000-ab12",
    "created": "2026-11-29T03:00:00.123456Z",
    "skill_path": "/home/me/SKILL.md",
    "base_hash": "absent",
    "candidate_hash": "0" * 64,
    "accepted": True,
    "reason": "val 0.50 → 0.80",
    "status": "staged",
    "baseline_score": 0.5,
    "candidate_score": 0.8,
    "test_before": None,
    "test_after": 1.0,
    "night": 3,
    "details": {"edits": 2},
}
PROPOSAL_SEEDS = [
    PROPOSAL_SEED,
    {
        **PROPOSAL_SEED,
        "id": "20261130-010203-ffff",
        "status": "adopted",
        "created": "2026-11-30T01:02:03",
    },  # written by hand: no zone
    {**PROPOSAL_SEED, "created": "2026-11-29T05:00:00+02:00", "accepted": False},
]
# The strategies: history.jsonl, and staging folders (name, proposal.json: bytes, a folder, or none).
HISTORY_FILES = jsonl(ACTION_SEEDS)
PROPOSAL_FOLDERS = st.lists(
    st.tuples(
        st.sampled_from(["20261129-030000-ab12", "20261130-010203-ffff", "x"])
        | TEXT.filter(lambda t: t.isprintable() and "/" not in t and t not in ("", ".", "..")),
        st.none() | st.just(b"<folder>") | lines(PROPOSAL_SEEDS),
    ),
    max_size=4,
    unique_by=lambda f: f[0],
)


@budget(100)
@given(data=HISTORY_FILES)
@example(data=b"\x80\n")  # UnicodeDecodeError
@example(data=json.dumps({**ACTION_SEEDS[0], "detail": "a\u2028b"}, ensure_ascii=False).encode() + b"\n")  # dropped
def test_history_gives_every_recorded_action_and_skips_the_rest(data: bytes) -> None:
    with scratch() as root:
        (root / "history.jsonl").write_bytes(data)
        actions = Proposals(root).history()
    recorded = []
    for line in data.split(b"\n"):
        try:
            recorded.append(Action.model_validate_json(line))
        except ValueError:
            continue  # a torn or foreign line: skipped
    assert actions == recorded


@budget(100)
@given(folders=PROPOSAL_FOLDERS)
@example(
    folders=[
        ("a", encode({**PROPOSAL_SEED, "created": "2026-11-29T03:00:00Z"})),
        ("b", encode({**PROPOSAL_SEED, "created": "2026-11-29T03:00:00"})),
    ]
)  # TypeError (naive vs aware)
def test_every_proposal_record_is_listed_or_named_as_unreadable(folders: list[tuple[str, bytes | None]]) -> None:
    with scratch() as root:
        staging = root / "staging"
        staging.mkdir()
        for name, content in folders:
            folder = staging / name
            folder.mkdir()
            if content == b"<folder>":
                (folder / "proposal.json").mkdir()
            elif content is not None:
                (folder / "proposal.json").write_bytes(content)
        proposals = Proposals(root)
        listed = proposals.list()
        records = [f for f in staging.iterdir() if (f / "proposal.json").exists()]
        assert all(isinstance(p, Proposal) for p in listed)
        assert len(listed) + len(proposals.problems) == len(records)
