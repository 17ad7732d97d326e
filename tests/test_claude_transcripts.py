"""Claude Code transcripts: each known pitfall of the format, on hand-written fixtures and on the
real and generated transcripts in ../shared (skipped when that is absent)."""

from __future__ import annotations

import gzip
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from skillsleep.core.shared.session import ParseResult, Session
from skillsleep.harnesses.claude_code.transcripts import claude_session_files, parse_claude

FIXTURES = Path(__file__).parent / "fixtures" / "claude"
ROOT = FIXTURES / "root"
SID = "11111111-2222-4333-8444-555555555555"


def parse_file(path: Path, **kwargs: object) -> ParseResult:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return parse_claude(data, source=str(path), **kwargs)  # type: ignore[arg-type]


def only(result: ParseResult) -> Session:
    assert len(result.sessions) == 1, [s.id for s in result.sessions]
    return result.sessions[0]


def kinds(session: Session) -> list[str]:
    return [t.kind for t in session.turns]


# --- hand-written fixtures -----------------------------------------------------------------------


def test_split_assistant_reply_is_merged_in_order_and_its_usage_counted_once() -> None:
    session = only(parse_file(FIXTURES / "split_reply.jsonl"))
    assert kinds(session) == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    assert session.turns[1].text == "Running the tests."
    # msg_A is written over three lines repeating usage: the last line's output count (42) wins.
    assert session.usage.output_tokens == 42 + 7
    assert session.usage.input_tokens == 2 * (10 + 100 + 1000)
    assert session.usage.cached_tokens == 2 * 1000
    assert session.models == ["claude-sonnet-4-5"]


def test_tool_result_is_paired_with_its_call_and_keeps_is_error() -> None:
    session = only(parse_file(FIXTURES / "split_reply.jsonl"))
    call, result = session.turns[2], session.turns[3]
    assert (call.tool, call.call_id, call.arguments) == ("Bash", "toolu_1", {"command": "pytest -q"})
    assert (result.call_id, result.tool, result.text, result.is_error) == ("toolu_1", "Bash", "1 failed", True)


def test_session_metadata_comes_from_the_envelope() -> None:
    data = (FIXTURES / "split_reply.jsonl").read_bytes()
    result = parse_claude(data, source="x.jsonl", base_offset=1000)
    session = only(result)
    assert (session.id, session.harness, session.project) == (SID, "claude-code", "/home/me/proj")
    assert session.agent_version == "2.1.300"
    first_line = data.index(b"\n") + 1  # the snapshot line holds no turn
    assert (session.byte_start, session.byte_end) == (1000 + first_line, 1000 + len(data))
    assert result.bytes_read == len(data)
    assert session.started is not None and session.ended is not None
    assert session.ended - session.started == timedelta(seconds=6)


def test_timestamps_are_aware_utc() -> None:
    session = only(parse_file(FIXTURES / "split_reply.jsonl"))
    stamps = [session.started, session.ended, *(t.ts for t in session.turns)]
    assert all(ts is not None and ts.utcoffset() == timedelta(0) for ts in stamps)
    assert session.started is not None and session.started.isoformat() == "2026-01-02T10:00:00+00:00"


def test_meta_lines_are_not_user_prompts() -> None:
    session = only(parse_file(FIXTURES / "meta_lines.jsonl"))
    assert session.prompts() == ["please add type hints"]


def test_slash_command_is_recorded_as_a_command_with_its_args() -> None:
    session = only(parse_file(FIXTURES / "meta_lines.jsonl"))
    commands = [(t.tool, t.arguments, t.text) for t in session.turns if t.kind == "command"]
    assert commands == [
        ("/clear", {"args": ""}, "/clear"),
        ("/review", {"args": "src/app.py --strict"}, "/review src/app.py --strict"),
        ("!", {"args": "git status"}, "! git status"),
    ]


def test_user_interruption_is_an_error_turn_not_a_prompt() -> None:
    session = only(parse_file(FIXTURES / "meta_lines.jsonl"))
    errors = [t.text for t in session.turns if t.kind == "error"]
    assert errors == ["[Request interrupted by user for tool use]"]


def test_api_errors_become_error_turns_and_synthetic_notes_are_dropped() -> None:
    result = parse_file(FIXTURES / "errors_and_drift.jsonl")
    session = only(result)
    assert kinds(session) == ["user", "error", "error", "assistant"]
    assert session.turns[1].text == "Overloaded; status 529"
    assert session.turns[2].text == "API Error: Rate limit reached"
    assert session.models == ["claude-opus-4-1"]  # never "<synthetic>"


def test_unknown_and_broken_records_are_counted_but_known_metadata_is_not() -> None:
    result = parse_file(FIXTURES / "errors_and_drift.jsonl")
    assert result.skipped == {
        "unknown_type:hologram": 1,
        "bad_record:assistant": 1,  # message is a string
        "bad_record:user": 1,  # no message at all
        "missing_type": 1,
    }


def test_subagent_file_is_its_own_sidechain_session_linked_to_its_parent() -> None:
    path = ROOT / "projects" / "-home-me-proj" / SID / "subagents" / "agent-abc123def.jsonl"
    for sidechain in (None, True):
        session = only(parse_file(path, sidechain=sidechain))
        assert (session.id, session.sidechain, session.parent_id) == ("agent-abc123def", True, SID)
        assert session.prompts() == ["grep TODO"]
        assert session.models == ["claude-haiku-4-5"]


def test_sidechain_records_in_a_flat_agent_file_are_marked_and_kept() -> None:
    session = only(parse_file(ROOT / "projects" / "-home-me-proj" / "agent-0f0f0f0f.jsonl", sidechain=False))
    assert (session.id, session.sidechain, session.parent_id) == ("agent-0f0f0f0f", True, SID)
    assert kinds(session) == ["user", "assistant"]


def test_claude_session_files_lists_sessions_and_subagents_sorted() -> None:
    files = [p.relative_to(ROOT / "projects").as_posix() for p in claude_session_files(ROOT).files]
    assert files == [  # Path order: a session's folder sorts before its own file
        f"-home-me-proj/{SID}/subagents/agent-abc123def.jsonl",
        f"-home-me-proj/{SID}.jsonl",
        "-home-me-proj/agent-0f0f0f0f.jsonl",
    ]
    assert claude_session_files(FIXTURES / "no-such-root").files == []


def test_malformed_binary_and_huge_lines_are_counted_and_the_rest_parsed() -> None:
    good = (FIXTURES / "split_reply.jsonl").read_bytes()
    lines = good.splitlines(keepends=True)
    huge = b"x" * (33 * 1024 * 1024) + b"\n"
    bad = [b'{"type": "user", "message": \n', b"\xff\xfe\x00\x81garbage\x00\n", b"[1, 2]\n", huge]
    data = b"".join(lines[:3] + bad + lines[3:])
    result = parse_claude(data, source="mixed.jsonl")
    assert result.skipped == {"malformed_json": 1, "binary_garbage": 1, "not_an_object": 1, "huge_line": 1}
    assert kinds(only(result)) == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    assert result.bytes_read == len(data)


def test_half_written_last_line_is_left_for_the_next_read() -> None:
    good = (FIXTURES / "split_reply.jsonl").read_bytes()
    cut = good.index(b'"uuid":"u2"')  # in the middle of the tool_result line
    first = parse_claude(good[:cut], source="live.jsonl")
    assert first.bytes_read == good.rfind(b"\n", 0, cut) + 1
    assert not first.skipped
    assert kinds(only(first)) == ["user", "assistant", "tool_call"]
    rest = parse_claude(good[first.bytes_read :], source="live.jsonl", base_offset=first.bytes_read)
    assert not rest.skipped
    assert kinds(only(rest)) == ["tool_result", "assistant"]
    assert first.bytes_read + rest.bytes_read == len(good)
    assert only(rest).byte_start == first.bytes_read
    assert only(rest).turns[0].tool is None  # the call was in the earlier read


def test_bad_input_never_raises() -> None:
    cases = [b"", b"\n\n", b"\x00" * 100 + b"\n", b'{"type": 7}\n', b'{"type": "user", "message": {"content": 3}}\n']
    for data in cases:
        result = parse_claude(data, source="junk.jsonl")
        assert result.sessions == []


# --- ../shared: upstream fixtures and real transcripts -----------------------------------------


def test_shared_subagent_layout_gives_a_linked_sidechain_session(transcripts: Path) -> None:
    layout = transcripts / "claude_code" / "subagent_layout"
    parent_id = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
    parent = only(parse_file(layout / f"{parent_id}.jsonl"))
    assert (parent.id, parent.sidechain) == (parent_id, False)
    assert parent.prompts() == ["Delegate a repo search to a subagent"]
    child = only(parse_file(layout / parent_id / "subagents" / "agent-a0ad4f44468bdf20d.jsonl"))
    assert (child.id, child.sidechain, child.parent_id) == ("agent-a0ad4f44468bdf20d", True, parent_id)
    assert [t.tool for t in child.turns if t.kind == "tool_call"] == ["bash"]


def test_shared_drift_files_parse_without_malformed_lines(transcripts: Path) -> None:
    for path in sorted((transcripts / "claude_code").glob("*.jsonl")):
        result = parse_file(path)
        assert result.sessions, path.name
        assert not {k for k in result.skipped if not k.startswith("unknown_type:")}, (path.name, result.skipped)
    drift = parse_file(transcripts / "claude_code" / "agent-sessions_claude_small_drift.jsonl")
    assert set(drift.skipped) == {"unknown_type:started", "unknown_type:result"}
    assert any(s.sidechain for s in drift.sessions) and any(not s.sidechain for s in drift.sessions)


# Upstream README (codemie-ai/codemie-code tests/integration/session/fixtures): tool calls and
# tool-result messages per session; prompts where its "Turns" means one per user prompt.
CODEMIE = {
    "session-9eda1058.jsonl": (3, 3),
    "session-196820da.jsonl": (65, 13),
    "session-3fe1b6bc.jsonl": (76, None),  # upstream's 10 turns follow its own rules; 7 prompts + 2 commands
    "session-624a4a58.jsonl.gz": (48, None),  # upstream 15 includes the compaction summary, a meta line here
}


@pytest.mark.parametrize("name", sorted(CODEMIE))
def test_codemie_sessions_match_upstream_tool_counts(transcripts: Path, name: str) -> None:
    calls, prompts = CODEMIE[name]
    result = parse_file(transcripts / "codemie" / "claude" / name)
    session = only(result)
    assert not result.skipped
    assert kinds(session).count("tool_call") == calls
    results = [t for t in session.turns if t.kind == "tool_result"]
    assert len(results) == calls and all(t.tool for t in results)  # every result paired with its call
    if prompts is not None:
        assert len(session.prompts()) == prompts


def test_codemie_session_with_subagents_matches_upstream_metrics(transcripts: Path) -> None:
    folder = transcripts / "codemie" / "claude"
    main = only(parse_file(folder / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"))
    assert main.prompts() == ["create hello.py, md and js", "update py with one liner comment", "delete js"]
    tools = sorted(t.tool or "" for t in main.turns if t.kind == "tool_call")
    assert tools == ["Bash", "Edit", "Read", "Write", "Write", "Write"]
    # Upstream: output 806 and cache read 214,627 for the main session (split replies counted once;
    # its input/cache-creation figures add every repeated line, which is the double count we avoid).
    assert (main.usage.output_tokens, main.usage.cached_tokens) == (806, 214_627)
    agents = [only(parse_file(folder / f"agent-{a}.jsonl")) for a in ("36541525", "50243ee8")]
    assert all(a.sidechain and a.parent_id == main.id for a in agents)
    # Upstream per agent: 3 in + 16,976 cache creation / 3 out; 16,878 in / 237 out.
    assert [(a.usage.input_tokens, a.usage.output_tokens) for a in agents] == [(16_979, 3), (16_878, 237)]
    models = {m for s in (main, *agents) for m in s.models}
    assert len(models) == 2  # Sonnet 4.5 + Haiku 4.5


def _index_rows(transcripts: Path) -> dict[str, tuple[str, str]]:
    text = (transcripts / "generated" / "INDEX.md").read_text()
    section = text.split("## claude/", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([0-9a-f-]{36}\.jsonl) \| (.*?) \| (.*?) \| (.*?) \|", section, re.M)
    return {name: (prompt, tools) for name, prompt, _model, tools in rows}


def test_every_generated_claude_file_parses_cleanly_and_matches_the_index(transcripts: Path) -> None:
    folder = transcripts / "generated" / "claude" / "projects" / "-home-dev-work-claude"
    rows = _index_rows(transcripts)
    assert len(rows) == len(list(folder.glob("*.jsonl"))) > 20
    for name, (listed, tools) in rows.items():
        path = folder / name
        result = parse_file(path)
        session = only(result)
        assert not result.skipped and result.bytes_read == path.stat().st_size, name
        assert session.id == path.stem and session.agent_version == "2.1.332"
        if listed.startswith("<command-message>"):
            command = re.search(r"<command-message>(.*?)</command-message>", listed)
            assert command is not None
            assert [t.tool for t in session.turns if t.kind == "command"] == [f"/{command.group(1)}"], name
        else:
            assert session.prompts() == listed.split(" ⏎ ") or session.prompts()[0].startswith(listed), name
        assert [t.tool for t in session.turns if t.kind == "tool_call"] == ([tools] if tools else []), name
        _assert_usage_matches_cost_state(path, session)


def _assert_usage_matches_cost_state(path: Path, session: Session) -> None:
    """Claude Code's own running total (the last `cost-state`) equals our once-per-message sum."""
    states = [json.loads(line) for line in path.read_text().splitlines() if '"cost-state"' in line]
    totals = [m for s in states[-1:] for m in s["modelUsage"].values()]
    prompt = sum(m["inputTokens"] + m["cacheReadInputTokens"] + m["cacheCreationInputTokens"] for m in totals)
    output = sum(m["outputTokens"] for m in totals)
    assert (session.usage.input_tokens, session.usage.output_tokens) == (prompt, output)


def test_generated_hello_and_stub_tool_sessions(transcripts: Path) -> None:
    folder = transcripts / "generated" / "claude" / "projects" / "-home-dev-work-claude"
    hello = only(parse_file(folder / "f4c534b2-6bce-40c0-a329-7f48c52b72bf.jsonl"))
    assert hello.prompts() == ["Reply with the word hello"]
    assert hello.models == ["stub-model"] and hello.project == "/home/dev/work/claude"
    tool = only(parse_file(folder / "7bf0005b-4220-413b-99a7-0a0d9f0ad458.jsonl"))
    assert tool.prompts() == ["STUB_TOOL: run echo via Bash"]
    call, result = (t for t in tool.turns if t.kind in ("tool_call", "tool_result"))
    assert (call.tool, call.arguments and call.arguments["command"]) == ("Bash", "echo stub-tool-ok")
    assert (result.call_id, result.tool, result.is_error) == (call.call_id, "Bash", False)
    assert result.text == "stub-tool-ok"


def test_unread_payload_and_drifted_records_lose_no_turn() -> None:
    """Lines are decoded into a struct of the fields read: a big `toolUseResult` (bad bytes in it
    included) is skipped, a lone surrogate in a prompt is repaired, and a drifted top-level
    tool_result keeps the difference between `output: null` and no `output` at all."""
    env = {"sessionId": SID, "timestamp": "2026-11-29T09:00:00Z"}
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    result_block = {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}
    records = [
        {"type": "user", **env, "message": {"role": "user", "content": "fix LONE it"}},
        {"type": "assistant", **env, "message": {"id": "m1", "model": "claude-x", "content": [call]}},
        {
            "type": "user",
            **env,
            "toolUseResult": {"stdout": "z" * 10_000, "b": "BAD"},
            "message": {"content": [result_block]},
        },
        {"type": "tool_result", **env, "tool_use_id": "t2", "output": None, "content": "ignored"},
        {"type": "tool_result", **env, "tool_use_id": "t3", "content": "kept"},
    ]
    text = "".join(json.dumps(r) + "\n" for r in records)
    data = text.replace("LONE", "\\ud800").encode().replace(b"BAD", b"\xff\xfe")
    result = parse_claude(data, source="/p/s.jsonl")
    session = only(result)
    assert [(t.kind, t.text, t.tool, t.call_id) for t in session.turns] == [
        ("user", "fix \ufffd it", None, None),
        ("tool_call", "", "Bash", "t1"),
        ("tool_result", "a.txt", "Bash", "t1"),
        ("tool_result", "", None, "t2"),
        ("tool_result", "kept", None, "t3"),
    ]
    assert result.skipped == {"lone_surrogate_repaired": 1} and result.bytes_read == len(data)
