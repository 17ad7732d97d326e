"""Codex rollout parsing: own pitfall fixtures (tests/fixtures/codex) and the shared samples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillsleep.core.harvest.discovery import Found
from skillsleep.core.shared.records import Usage
from skillsleep.core.shared.session import Session
from skillsleep.harnesses.codex.transcripts import codex_session_files, parse_codex

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
OLD = FIXTURES / "rollout-2025-12-01T10-00-00-11111111-1111-4111-8111-111111111111.jsonl"
NEW = FIXTURES / "rollout-2026-11-29T09-00-00-22222222-2222-4222-8222-222222222222.jsonl"
ITEMS_ONLY = FIXTURES / "rollout-2025-06-01T08-00-00-33333333-3333-4333-8333-333333333333.jsonl"
SUBAGENT = FIXTURES / "rollout-2026-08-03T10-00-00-44444444-4444-4444-8444-444444444444.jsonl"
DAMAGED = FIXTURES / "damaged.jsonl"


def _session(path: Path) -> Session:
    result = parse_codex(path.read_bytes(), source=str(path))
    assert len(result.sessions) == 1
    return result.sessions[0]


# --- own fixtures: one pitfall each -----------------------------------------------------------


def test_old_user_message_prompt_is_read_once_with_session_metadata() -> None:
    s = _session(OLD)
    assert s.prompts() == ["fix the failing test"]
    assert (s.id, s.harness, s.project, s.agent_version) == (
        "11111111-1111-4111-8111-111111111111",
        "codex",
        "/work/app",
        "0.66.0",
    )
    assert s.models == ["gpt-5.1-codex"]
    assert s.started is not None and s.started.isoformat() == "2025-12-01T10:00:00+00:00"
    assert s.ended is not None and s.ended.isoformat() == "2025-12-01T10:00:09+00:00"
    assert (s.byte_start, s.byte_end) == (0, OLD.stat().st_size)


def test_new_item_completed_prompt_is_read_and_injected_agents_md_is_not_a_prompt() -> None:
    s = _session(NEW)
    assert s.prompts() == ["run the build"]
    assert not any("AGENTS.md" in p or "environment_context" in p for p in s.prompts())


def test_response_item_prompts_are_used_only_without_event_msgs_and_are_stripped() -> None:
    s = _session(ITEMS_ONLY)
    # the <user_instructions> and <environment_context>-only messages are not prompts
    assert s.prompts() == ["add a README"]


def test_assistant_text_written_in_several_forms_appears_once() -> None:
    assert [t.text for t in _session(OLD).turns if t.kind == "assistant"] == ["The test fails on a typo."]
    # item_completed AgentMessage + response_item message + task_complete.last_agent_message
    new = [t for t in _session(NEW).turns if t.kind == "assistant"]
    assert [t.text for t in new] == ["The build failed."]
    assert new[0].model == "gpt-5.6"


def test_assistant_text_repeated_on_purpose_is_kept() -> None:
    assert [t.text for t in _session(ITEMS_ONLY).turns if t.kind == "assistant"] == ["Done.", "Done."]


def test_function_call_arguments_are_parsed_and_unparsable_ones_kept_raw() -> None:
    call = next(t for t in _session(OLD).turns if t.kind == "tool_call")
    assert (call.tool, call.call_id) == ("shell_command", "call_a")
    assert call.arguments == {"command": "pytest -q", "workdir": "/work/app"}
    calls = [t for t in _session(ITEMS_ONLY).turns if t.kind == "tool_call"]
    assert calls[0].tool == "apply_patch" and "Add File: README.md" in calls[0].arguments["input"]
    assert calls[1].arguments == {"raw": "{not json"}


def test_tool_results_pair_by_call_id_and_nonzero_exit_is_an_error() -> None:
    old = next(t for t in _session(OLD).turns if t.kind == "tool_result")
    assert (old.call_id, old.tool, old.is_error) == ("call_a", "shell_command", True)  # "Exit code: 1"
    new = next(t for t in _session(NEW).turns if t.kind == "tool_result")
    assert (new.call_id, new.tool, new.is_error) == ("call_b", "exec_command", True)  # CommandExecution 2
    patch, shell = [t for t in _session(ITEMS_ONLY).turns if t.kind == "tool_result"]
    assert (patch.tool, patch.is_error) == ("apply_patch", False)  # JSON metadata exit_code 0
    assert patch.text.startswith("Success.")
    assert (shell.tool, shell.is_error) == ("shell", True)  # JSON metadata exit_code 127


def test_error_events_and_aborted_turns_become_error_turns() -> None:
    errors = [t for t in _session(NEW).turns if t.kind == "error"]
    assert [t.text for t in errors] == ["stream disconnected before completion", "turn aborted: interrupted"]
    assert all(t.is_error for t in errors)


def test_metadata_records_are_neither_errors_nor_skipped() -> None:
    result = parse_codex(NEW.read_bytes(), source=str(NEW))
    # world_state, compacted, turn_context, token_usage_record are metadata; only the
    # made-up future event is counted
    assert dict(result.skipped) == {"unknown_event:some_future_event": 1}


def test_token_count_with_null_info_is_ignored_and_repeated_totals_count_once() -> None:
    # info: null, then one call written twice, then a second call: the final cumulative total
    assert _session(OLD).usage == Usage(input_tokens=2200, cached_tokens=1700, output_tokens=80)


def test_subagent_rollout_is_a_sidechain_with_its_parent() -> None:
    s = _session(SUBAGENT)
    assert s.sidechain is True
    assert s.parent_id == "55555555-5555-4555-8555-555555555555"
    assert _session(OLD).sidechain is False and _session(OLD).parent_id is None


def test_damaged_lines_are_counted_and_never_raise() -> None:
    result = parse_codex(DAMAGED.read_bytes(), source=str(DAMAGED))
    assert result.skipped["malformed_json"] == 1
    assert result.skipped["binary_garbage"] == 1
    assert result.skipped["not_an_object"] == 1
    assert result.skipped["missing_type"] == 1
    assert result.skipped["bad_payload"] == 1
    assert result.skipped["unknown_type:mystery_record"] == 1
    assert result.sessions[0].prompts() == ["first prompt"]


def test_half_written_last_line_is_left_and_the_next_read_continues_from_it() -> None:
    data = DAMAGED.read_bytes()
    first = parse_codex(data, source=str(DAMAGED))
    assert first.bytes_read == data.rindex(b"\n") + 1
    finished = data + b'pt"}}\n'
    rest = parse_codex(finished[first.bytes_read :], source=str(DAMAGED), base_offset=first.bytes_read)
    assert first.bytes_read + rest.bytes_read == len(finished)
    (s,) = rest.sessions
    assert s.prompts() == ["second prompt"]
    assert s.id == "damaged"  # no session_meta in the chunk and no uuid in the name: the stem
    assert (s.byte_start, s.byte_end) == (first.bytes_read, len(finished))


def test_continuation_chunk_takes_its_id_from_the_file_name() -> None:
    data = OLD.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    rest = parse_codex(data[cut:], source=str(OLD), base_offset=cut)
    assert rest.sessions[0].id == "11111111-1111-4111-8111-111111111111"


@pytest.mark.parametrize("data", [b"", b"\n\n", b"\xff\xfe\x00garbage", b'{"type": "session_meta"'])
def test_empty_or_unreadable_input_gives_no_session(data: bytes) -> None:
    result = parse_codex(data, source="x.jsonl")
    assert result.sessions == []


def test_fields_of_the_wrong_type_are_skipped_not_raised() -> None:
    lines = [
        {"type": ["event_msg"], "payload": None},
        {"type": {"x": 1}},
        {"type": "event_msg", "payload": {"type": ["user_message"]}},
        {"type": "response_item", "payload": {"type": "function_call", "name": 5, "arguments": [1], "call_id": {}}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"text": 5}, None]}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": "9"}}}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": ["UserMessage"]}},
        {"timestamp": 10**30, "type": "session_meta", "payload": {"id": 7, "source": ["subagent"]}},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = parse_codex(data, source="rollout-x.jsonl")
    assert result.skipped["missing_type"] == 2
    assert result.skipped["missing_event_type"] == 1
    (s,) = result.sessions
    assert s.id == "rollout-x" and s.usage == Usage()


def test_session_files_count_an_archived_and_live_copy_once(tmp_path: Path) -> None:
    day = tmp_path / "sessions" / "2026" / "11" / "29"
    archived = tmp_path / "archived_sessions"
    day.mkdir(parents=True)
    archived.mkdir()
    name = "rollout-2026-11-29T09-00-00-22222222-2222-4222-8222-222222222222.jsonl"
    (day / name).write_bytes(NEW.read_bytes())
    (archived / name).write_bytes(NEW.read_bytes() + b"\n")  # larger, but archived
    only_archived = "rollout-2025-06-01T08-00-00-33333333-3333-4333-8333-333333333333.jsonl"
    (archived / only_archived).write_bytes(ITEMS_ONLY.read_bytes())
    (day / "notes.txt").write_text("not a rollout")
    assert codex_session_files(tmp_path).files == sorted([day / name, archived / only_archived])
    assert codex_session_files(tmp_path / "missing") == Found()


def test_session_files_fall_back_to_the_session_meta_id(tmp_path: Path) -> None:
    day = tmp_path / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    (day / "rollout-a.jsonl").write_bytes(DAMAGED.read_bytes())
    (day / "rollout-b.jsonl").write_bytes(DAMAGED.read_bytes() + b"\n\n")
    assert codex_session_files(tmp_path).files == [day / "rollout-b.jsonl"]


# --- shared samples ---------------------------------------------------------------------------


def _codex_files(root: Path) -> list[Path]:
    return sorted(
        [
            *(root / "codex").glob("*.jsonl"),
            *(root / "codemie" / "codex").glob("*.jsonl"),
            *(root / "generated" / "codex" / "sessions").rglob("*.jsonl"),
        ]
    )


def test_every_shared_codex_sample_parses_without_raising(transcripts: Path) -> None:
    files = _codex_files(transcripts)
    assert len(files) >= 20
    for path in files:
        data = path.read_bytes()
        result = parse_codex(data, source=str(path))
        assert result.bytes_read <= len(data), path
        for s in result.sessions:
            assert s.harness == "codex"
            assert s.started is None or s.started.tzinfo is not None


def test_shared_subagent_rollout_is_marked_and_its_parent_is_not(transcripts: Path) -> None:
    child = _session(transcripts / "codex" / "agtrace_rollout_subagent.jsonl")
    parent = _session(transcripts / "codex" / "agtrace_rollout_parent.jsonl")
    assert child.sidechain and child.prompts() == ["Review the code changes"]
    assert not parent.sidechain and parent.prompts() == ["ls"]


def test_shared_v066_usage_is_the_final_cumulative_total(transcripts: Path) -> None:
    s = _session(transcripts / "codex" / "agtrace_codex_rollout_v0.66.0.jsonl")
    assert s.usage == Usage(input_tokens=26740, cached_tokens=22912, output_tokens=408)
    assert len(s.prompts()) == 2
    assert sum(t.is_error for t in s.turns if t.kind == "tool_result") == 2  # two "Exit code: 1"


def test_shared_legacy_050_rollout_reads_its_usage_and_skips_nothing(transcripts: Path) -> None:
    result = parse_codex((transcripts / "codex" / "agent-sessions_codex_050_legacy.jsonl").read_bytes(), source="x")
    (s,) = result.sessions
    assert (s.id, s.agent_version) == ("test-legacy-session", "0.50.0")
    assert s.usage == Usage(input_tokens=1420, output_tokens=910)
    assert not result.skipped


def test_codemie_real_rollout_matches_upstream_expectations(transcripts: Path) -> None:
    """codemie-code's own tests: the first prompt is "show tools"; one prompt per distinct
    user_message; tool calls are function_call + custom_tool_call + web_search_call."""
    path = transcripts / "codemie" / "codex" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
    s = _session(path)
    assert s.id == "019e1625-789d-76c0-80ab-3724b5ddb799"
    assert s.prompts() == ["show tools", "let's update the defailt context compart to 90 in env var"]
    assert sum(t.kind == "tool_call" for t in s.turns) == 99 + 3 + 3
    assert sum(t.kind == "tool_result" for t in s.turns) == 99 + 3
    assert sum(t.kind == "assistant" for t in s.turns) == 13
    assert s.usage.input_tokens == 6055836 and s.usage.cached_tokens == 4929536  # final total


def test_codemie_usage_fixtures_match_upstream_expectations(transcripts: Path) -> None:
    codex = transcripts / "codemie" / "codex"
    one = _session(codex / "turn-1.jsonl")
    assert (one.usage.input_tokens, one.usage.cached_tokens) == (1024, 512)  # input includes cache
    assert one.models == ["o4-mini"]
    assert _session(codex / "turn-2.jsonl").usage.total > 1036
    spawn = [t.tool for t in _session(codex / "turn-spawn-skill.jsonl").turns if t.kind == "tool_call"]
    assert spawn.count("exec_command") == 1 and spawn.count("spawn_agent") == 1


def test_codemie_desktop_rollout_keeps_only_the_users_request(transcripts: Path) -> None:
    path = transcripts / "codemie" / "codex" / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
    prompts = _session(path).prompts()
    assert len(prompts) == 3
    assert prompts[0].startswith("analyze trascript and summarzie action items")


def test_generated_sessions_prompts_from_the_index_are_found(transcripts: Path) -> None:
    index = (transcripts / "generated" / "INDEX.md").read_text()
    section = index.split("## codex/", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (rollout-\S+\.jsonl) \| ([^|]+) \| ([^|]+) \| ([^|]*) \|", section, re.M)
    assert len(rows) == 11
    day = transcripts / "generated" / "codex" / "sessions" / "2026" / "11" / "29"
    for name, prompts, model, tools in rows:
        s = _session(day / name)
        assert s.prompts() == [p.strip() for p in prompts.split("⏎")], name
        assert s.models == [model.strip()], name
        assert s.agent_version == "0.171.0"
        assert [t.tool for t in s.turns if t.kind == "tool_call"] == ([tools.strip()] if tools.strip() else [])
        assert not any(t.is_error for t in s.turns), name


def test_unread_payload_and_drifted_records_lose_no_turn() -> None:
    """Lines are decoded into a struct of the fields read: a command's `aggregated_output`,
    `base_instructions` and encrypted reasoning are skipped (bad bytes in them cost nothing), a
    lone surrogate or invalid UTF-8 in a field read is repaired, a payload that is no object is counted, and a
    pre-envelope first line is still the session's meta."""
    sid = "66666666-6666-4666-8666-666666666666"
    ts = "2026-11-29T09:00:00Z"
    lines = [
        {"id": sid, "timestamp": ts, "git": {"branch": "main"}, "instructions": "be brief"},
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "other", "base_instructions": "BAD" * 5}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": "fix LONE it"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "reasoning", "encrypted_content": "BAD"}},
        {"type": "function_call", "name": "shell", "arguments": '{"cmd": ["ls"]}', "call_id": "c1"},
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
        },
        {
            "timestamp": ts,
            "type": "event_msg",
            "payload": {"type": "exec_command_end", "call_id": "c1", "exit_code": 2, "aggregated_output": "BAD"},
        },
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": "done OOPS"}},
        {"timestamp": ts, "type": "event_msg", "payload": ["not", "an", "object"]},
        {"timestamp": ts, "type": "turn_context", "payload": 12345678901234567890123},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines).replace("LONE", "\\ud800")
    data = text.encode().replace(b"BAD", b"\xff\xfe").replace(b"OOPS", b"\xe9")
    result = parse_codex(data, source=f"/c/rollout-2026-11-29T09-00-00-{sid}.jsonl")
    (s,) = result.sessions
    assert [(t.kind, t.text, t.tool, t.call_id, t.is_error) for t in s.turns] == [
        ("user", "fix \ufffd it", None, None, False),
        ("tool_call", '{"cmd": ["ls"]}', "shell", "c1", False),
        ("tool_result", "a.txt", "shell", "c1", True),
        ("assistant", "done \ufffd", None, None, False),
    ]
    assert s.id == sid and s.started is not None
    assert result.skipped == {"lone_surrogate_repaired": 1, "bad_encoding_repaired": 1, "bad_payload": 2}
    assert result.bytes_read == len(data)
