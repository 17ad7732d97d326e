"""The OpenClaw replay harness: envelope parsing on recorded stdout, the run's set-up with a fake
CLI (argv, environment, files, concurrency, failures), and real `openclaw agent exec` runs
against the scripted model server (slow: ~15 s and ~0.9 GB each, so the real runs are few and
each checks several things)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sqlite3
import uuid
from pathlib import Path

import pytest
from replay_checks import processes_with, snapshot
from servers import free_port

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Task
from skillsleep.harnesses.agent_cli import FALLBACK_SKILL_NAME
from skillsleep.harnesses.openclaw.home import config_path as user_config_path
from skillsleep.harnesses.openclaw.output import node_problem, parse_openclaw_output, tool_calls_from_sessions
from skillsleep.harnesses.openclaw.replay import OpenClawHarness, agent_deadline, run_config, task_prompt
from skillsleep.harnesses.openclaw.settings import OpenClawSettings
from skillsleep.harnesses.openclaw.transcripts import parse_openclaw_jsonl

RECORDED = Path(__file__).parent / "fixtures" / "recorded" / "openclaw" / "stdout"
SKILL = Skill(
    "---\nname: answer\ndescription: How to answer any question.\n---\n"
    "Always answer with one word. SKILL_SAYS: papaya\n"
)
NODE_SQLITE = (
    "openclaw: Node 20.20.2: node:sqlite is unavailable; use 24.16+/26.1+ or a build with the fix.\n"
    "If you use nvm, run:\n  nvm install 26\n"
)


def recorded(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


def run(coro):
    return asyncio.run(coro)


# --- parsing recorded stdout ----------------------------------------------------------------------


def test_recorded_plain_answer() -> None:
    r = parse_openclaw_output(recorded("plain.json"))
    assert r.error is None
    assert r.response == "hello"
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cached_tokens) == (120, 6, 0)
    assert r.cost_usd == 0.0
    assert r.tool_calls == []


def test_recorded_tool_and_skill_runs_name_their_tools() -> None:
    tool = parse_openclaw_output(recorded("tool.json"))
    assert tool.error is None
    assert tool.response == "hello | tool said: from-tool"
    assert [c.name for c in tool.tool_calls] == ["exec"]
    skill = parse_openclaw_output(recorded("skill.json"))
    assert skill.error is None
    assert skill.response.startswith("papaya")
    assert [c.name for c in skill.tool_calls] == ["read"]
    assert skill.usage.total == 252


def test_recorded_dead_server_is_an_error_saying_what_to_do() -> None:
    r = parse_openclaw_output(recorded("dead-server.json"), server="http://127.0.0.1:9/v1")
    assert r.error is not None
    assert "could not reach the model server at http://127.0.0.1:9/v1" in r.error
    assert "connection refused" in r.error
    assert r.response == ""


def test_recorded_exit_codes_match_the_parsed_outcome() -> None:
    manifest = json.loads(recorded("manifest.json"))
    assert {"plain.json", "tool.json", "skill.json", "dead-server.json"} <= set(manifest)
    for name, facts in manifest.items():
        parsed = parse_openclaw_output(recorded(name))
        assert (parsed.error is None) == (facts["exit_code"] == 0), name


def test_cost_and_cached_tokens_come_from_the_envelope() -> None:
    envelope = {
        "ok": True,
        "status": "ok",
        "final": "done",
        "usage": {
            "input": 100,
            "output": 20,
            "cacheRead": 300,
            "cacheWrite": 50,
            "total": 470,
            "cost": {"total": 0.0125},
        },
    }
    r = parse_openclaw_output(json.dumps(envelope))
    assert r.cost_usd == pytest.approx(0.0125)
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cached_tokens) == (450, 20, 300)
    # no usage.cost: the documented top-level costUsd is the fallback
    del envelope["usage"]["cost"]
    assert parse_openclaw_output(json.dumps({**envelope, "costUsd": 0.5})).cost_usd == 0.5


def test_final_falls_back_to_payload_texts() -> None:
    envelope = {
        "ok": True,
        "status": "ok",
        "payloads": [{"text": "one"}, {"text": "two"}, {"text": "x", "isError": True}],
    }
    assert parse_openclaw_output(json.dumps(envelope)).response == "one\ntwo"


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "garbage, not JSON at all",
        "[1, 2, 3]",
        '{"ok": true, "status": "ok", "final": "hel',
        "\x00\xff{{{{",
        '{"ok": "yes", "status": 7, "final": 3, "payloads": "x", "usage": [], "toolSummary": {"tools": 5}}',
    ],
)
def test_malformed_output_is_an_error_run_never_an_exception(stdout: str) -> None:
    r = parse_openclaw_output(stdout)
    assert r.error
    assert r.response == ""


def test_truncated_recording_is_an_error_run() -> None:
    text = recorded("tool.json")
    r = parse_openclaw_output(text[: len(text) // 2])
    assert r.error is not None and "no JSON envelope" in r.error


def test_envelope_after_noise_lines_is_found() -> None:
    r = parse_openclaw_output("[plugins] loaded 3 plugins\n" + recorded("plain.json"))
    assert r.error is None and r.response == "hello"


def test_failure_kinds_are_worded_as_what_to_do() -> None:
    def error(message: str, status: str = "error", kind: str = "exception") -> str:
        envelope = {
            "ok": False,
            "status": status,
            "final": "",
            "payloads": [],
            "error": {"message": message, "kind": kind},
        }
        out = parse_openclaw_output(json.dumps(envelope)).error
        assert out is not None
        return out

    assert "timed out" in error("Request timed out before a response was generated.", "timeout", "timeout")
    assert "raise timeout_s" in error("Request timed out before a response was generated.", "timeout", "timeout")
    auth = error('401 Unauthorized: No API key found for provider "openai"')
    assert "could not authenticate" in auth and "api_key_env" in auth
    assert "rate-limited" in error("429 Too Many Requests")
    assert "could not authenticate" in error("HTTP 403 from provider")
    assert "could not authenticate" not in error("the prompt had 84012 tokens")
    overflow = error("400 request (8372 tokens) exceeds the available context size (4096 tokens), try increasing it")
    assert "does not fit the model's context" in overflow and "lean" in overflow
    assert "24.16" in error("node:sqlite is unavailable")
    other = error("something odd happened")
    assert "something odd happened" in other and "openclaw agent exec hello --json" in other


def test_node_problem_names_the_fix_and_the_node_it_ran_on() -> None:
    message = node_problem(NODE_SQLITE)
    assert message is not None
    assert "24.16" in message and "PATH" in message and "20.20.2" in message
    assert node_problem("OpenClaw 2026.9.6 (eb377ac)") is None


# --- the transcript, the skill, the config ----------------------------------------------------------


def test_tool_calls_with_arguments_and_results_from_a_recorded_transcript(transcripts: Path) -> None:
    path = (
        transcripts
        / "generated/openclaw/sessions-from-sqlite/exec-state-dir/main-481ec3f4-6e45-4b80-9ddb-51a3d6c48903.jsonl"
    )
    sessions = parse_openclaw_jsonl(path.read_bytes(), source=str(path)).sessions
    calls = tool_calls_from_sessions(sessions)
    assert len(calls) == 1
    assert calls[0].name == "exec"
    assert calls[0].arguments.get("command")
    assert calls[0].result  # the tool's output came back and is paired by call id


def test_user_config_path_follows_openclaw_resolution(tmp_path: Path) -> None:
    assert user_config_path({"HOME": "/h"}) == Path("/h/.openclaw/openclaw.json")
    assert user_config_path({"HOME": "/h", "OPENCLAW_HOME": "/o"}) == Path("/o/.openclaw/openclaw.json")
    assert user_config_path({"HOME": "/h", "OPENCLAW_PROFILE": "work"}) == Path("/h/.openclaw-work/openclaw.json")
    assert user_config_path({"HOME": "/h", "OPENCLAW_STATE_DIR": "/s"}) == Path("/s/openclaw.json")
    assert user_config_path({"HOME": "/h", "OPENCLAW_STATE_DIR": "/s", "OPENCLAW_CONFIG_PATH": "/c.json"}) == Path(
        "/c.json"
    )


def test_run_config_includes_the_user_config_and_never_holds_the_key(tmp_path: Path) -> None:
    settings = OpenClawSettings(base_url="http://127.0.0.1:8080/v1/", target_model="qwen", api_key_env="MY_KEY")
    config = run_config(tmp_path / "openclaw.json", settings)
    assert config["$include"] == str(tmp_path / "openclaw.json")
    provider = config["models"]["providers"]["skillsleep"]
    assert provider["baseUrl"] == "http://127.0.0.1:8080/v1"
    assert provider["apiKey"] == "${MY_KEY}"
    assert provider["models"][0]["id"] == "qwen"
    assert "$include" not in run_config(None, OpenClawSettings())
    assert "models" not in run_config(None, OpenClawSettings(target_model="openai/gpt-x"))


def test_agent_deadline_leaves_room_for_start_up() -> None:
    assert agent_deadline(600) == 580
    assert agent_deadline(5) == 1


# --- the run's set-up, with a fake CLI ----------------------------------------------------------------


FAKE = """#!/bin/bash
if [ "$1" = "--version" ]; then echo "OpenClaw 2026.9.6 (fake)"; exit 0; fi
log="$FAKE_LOG/$$"
mkdir -p "$log"
printf '%s\\n' "$@" > "$log/argv"
env > "$log/env"
pwd > "$log/pwd"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --message-file) cp "${args[$((i + 1))]}" "$log/prompt" ;;
    --config) cp "${args[$((i + 1))]}" "$log/config" ;;
    --cwd) cp -r "${args[$((i + 1))]}" "$log/cwd" ;;
    --state-dir) cp -r "${args[$((i + 1))]}" "$log/state" ;;
  esac
done
cat "$FAKE_STDOUT"
echo "fake stderr line" >&2
exit "${FAKE_EXIT:-0}"
"""


def fake_cli(tmp_path: Path, script: str = FAKE, name: str = "openclaw") -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)
    return path


def user_home(root: Path, provider_url: str) -> Path:
    """A user's home with an OpenClaw config, a provider key file and old transcripts."""
    home = root / "home"
    state = home / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    config = {
        "update": {"checkOnStart": False},
        "models": {
            "providers": {
                "local": {
                    "baseUrl": provider_url,
                    "apiKey": "dummy",
                    "api": "openai-completions",
                    "models": [{"id": "stub-model", "name": "stub-model", "contextWindow": 32000, "maxTokens": 4096}],
                }
            }
        },
        "agents": {"defaults": {"model": {"primary": "local/stub-model"}}},
    }
    (state / "openclaw.json").write_text(json.dumps(config, indent=2))
    (state / ".env").write_text("SOME_PROVIDER_KEY=from-dotenv\n")
    (state / "agents" / "main" / "sessions" / "old-session.jsonl").write_text(
        '{"type":"session","version":3,"id":"old-session","timestamp":"2026-11-01T10:00:00Z","cwd":"/p"}\n'
    )
    (state / "agents" / "main" / "agent").mkdir(parents=True)
    db = sqlite3.connect(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    db.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, event_zstd BLOB)")
    db.execute('INSERT INTO transcript_events VALUES (\'s1\', 1, \'{"type":"session","id":"s1"}\', NULL)')
    db.commit()
    db.close()
    (home / ".agents" / "skills").mkdir(parents=True)
    return home


def project(root: Path) -> Path:
    folder = root / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "README.md").write_text("# the user's project\n")
    (folder / "src" / "main.py").write_text("print('hi')\n")
    return folder


def fake_logs(log_dir: Path) -> list[Path]:
    return sorted(p for p in log_dir.iterdir() if p.is_dir())


def test_fake_run_sets_up_state_config_skill_and_prompt(tmp_path: Path) -> None:
    home = user_home(tmp_path, "http://127.0.0.1:9/v1")
    work = project(tmp_path)
    log = tmp_path / "log"
    log.mkdir()
    cli = fake_cli(tmp_path)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "FAKE_LOG": str(log),
        "FAKE_STDOUT": str(RECORDED / "plain.json"),
        "MY_KEY": "secret-value-123",
        "OPENCLAW_AGENT_DIR": str(home / ".openclaw" / "agents" / "main" / "agent"),
    }
    settings = OpenClawSettings(
        command=str(cli),
        base_url="http://127.0.0.1:8080/v1",
        target_model="qwen",
        api_key_env="MY_KEY",
        lean=True,
        thinking="low",
        extra_args=["--code-mode", "direct"],
    )
    before = snapshot(home), snapshot(work)
    task = Task(id="t1", prompt="fix the bug", context="It is in src/main.py.", workdir=str(work))
    r = run(OpenClawHarness(settings, env=env).run(task, SKILL, timeout_s=120))

    assert r.error is None and r.response == "hello" and r.exit_status == 0 and r.latency_s > 0
    assert (snapshot(home), snapshot(work)) == before
    [one] = fake_logs(log)
    argv = (one / "argv").read_text().splitlines()
    flags = dict(itertools.pairwise(argv))
    assert argv[:2] == ["agent", "exec"] and "--json" in argv
    assert flags["--timeout"] == "100"
    assert flags["--model"] == "skillsleep/qwen"
    assert flags["--thinking"] == "low" and "--local-model-lean" in argv
    assert argv[-2:] == ["--code-mode", "direct"]
    run_env = dict(line.split("=", 1) for line in (one / "env").read_text().splitlines() if "=" in line)
    # state: a temporary folder, the same for the flag and the variable, never the user's
    assert flags["--state-dir"] == run_env["OPENCLAW_STATE_DIR"]
    assert not flags["--state-dir"].startswith(str(home))
    assert "OPENCLAW_AGENT_DIR" not in run_env
    assert run_env["XDG_CACHE_HOME"].startswith(str(Path(flags["--state-dir"]).parent))
    assert run_env["OPENCLAW_NO_AUTO_UPDATE"] == "1" and run_env["DO_NOT_TRACK"] == "1"
    assert run_env["OPENCLAW_INCLUDE_ROOTS"].split(os.pathsep)[0] == str((home / ".openclaw").resolve())
    # the working copy: a temporary copy of the project with the skill installed
    assert flags["--cwd"] != str(work) and (one / "pwd").read_text().strip() == flags["--cwd"]
    assert (one / "cwd" / "src" / "main.py").read_text() == "print('hi')\n"
    assert (one / "cwd" / "skills" / "answer" / "SKILL.md").read_text() == SKILL.text
    assert (one / "prompt").read_text() == "$answer It is in src/main.py.\n\nfix the bug"
    # the config: the user's included, the replay provider, the key only by reference
    config_text = (one / "config").read_text()
    config = json.loads(config_text)
    assert config["$include"] == str((home / ".openclaw" / "openclaw.json").resolve())
    assert config["models"]["providers"]["skillsleep"]["apiKey"] == "${MY_KEY}"
    assert "secret-value-123" not in config_text
    assert (one / "state" / ".env").read_text() == "SOME_PROVIDER_KEY=from-dotenv\n"
    retry = json.loads((one / "state" / "agents" / "main" / "agent" / "settings.json").read_text())
    assert retry == {"retry": {"provider": {"maxRetries": 2}}}
    # everything temporary is gone afterwards
    assert not Path(flags["--cwd"]).exists() and not Path(flags["--state-dir"]).exists()


def test_fake_baseline_run_installs_no_skill_and_keeps_the_users_model(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "empty-home"),
        "FAKE_LOG": str(log),
        "FAKE_STDOUT": str(RECORDED / "plain.json"),
    }
    settings = OpenClawSettings(command=str(fake_cli(tmp_path)), provider_retries=None)
    r = run(OpenClawHarness(settings, env=env).run(Task(id="t", prompt="-v say hello"), Skill(""), timeout_s=60))
    assert r.error is None
    [one] = fake_logs(log)
    argv = (one / "argv").read_text().splitlines()
    assert "--model" not in argv and "--local-model-lean" not in argv and "--thinking" not in argv
    assert (one / "prompt").read_text() == "-v say hello"
    assert not (one / "cwd" / "skills").exists()
    assert json.loads((one / "config").read_text()) == {"update": {"checkOnStart": False}}
    assert not (one / "state" / "agents").exists()
    assert "OPENCLAW_INCLUDE_ROOTS" not in (one / "env").read_text()


def test_runs_in_parallel_are_capped_by_concurrency(tmp_path: Path) -> None:
    events = tmp_path / "events"
    events.touch()
    script = """#!/bin/bash
if [ "$1" = "--version" ]; then echo "OpenClaw 2026.9.6 (fake)"; exit 0; fi
echo start >> "$FAKE_EVENTS"
# wait (bounded) until a second run has started, so runs overlap whenever the cap allows it
for i in $(seq 1 100); do [ "$(grep -c start "$FAKE_EVENTS")" -ge 2 ] && break; sleep 0.05; done
echo end >> "$FAKE_EVENTS"
cat "$FAKE_STDOUT"
"""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "FAKE_EVENTS": str(events),
        "FAKE_STDOUT": str(RECORDED / "plain.json"),
    }
    harness = OpenClawHarness(OpenClawSettings(command=str(fake_cli(tmp_path, script)), concurrency=2), env=env)

    async def many() -> list:
        return await asyncio.gather(
            *(harness.run(Task(id=f"t{i}", prompt="hi"), SKILL, timeout_s=60) for i in range(5))
        )

    runs = run(many())
    assert all(r.error is None and r.response == "hello" for r in runs)
    level, peak = 0, 0
    lines = events.read_text().split()
    for line in lines:
        level += 1 if line == "start" else -1
        peak = max(peak, level)
    assert lines.count("start") == 5 and level == 0
    assert peak == 2


def test_missing_cli_names_the_install(tmp_path: Path) -> None:
    harness = OpenClawHarness(
        OpenClawSettings(command=str(tmp_path / "nowhere" / "openclaw")),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    status = harness.status()
    assert not status.installed and not status.usable
    r = run(harness.run(Task(id="t", prompt="hi"), SKILL, timeout_s=30))
    assert r.error is not None and "npm install -g openclaw@2026.9.6" in r.error
    assert "not found" in r.error


def test_too_old_cli_says_upgrade(tmp_path: Path) -> None:
    cli = fake_cli(tmp_path, '#!/bin/bash\necho "OpenClaw 2026.8.1 (old)"\n')
    harness = OpenClawHarness(OpenClawSettings(command=str(cli)), env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert harness.status().version == "2026.8.1" and not harness.status().usable
    r = run(harness.run(Task(id="t", prompt="hi"), SKILL, timeout_s=30))
    assert r.error is not None and "older than 2026.9.0" in r.error and "upgrade" in r.error


def test_node_too_old_is_reported_by_status_and_run(tmp_path: Path) -> None:
    script = f"#!/bin/bash\ncat >&2 <<'EOF'\n{NODE_SQLITE}EOF\nexit 1\n"
    harness = OpenClawHarness(
        OpenClawSettings(command=str(fake_cli(tmp_path, script))), env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    )
    status = harness.status()
    assert status.installed and not status.usable
    assert "Node.js 24.16" in status.reason and "20.20.2" in status.reason
    r = run(harness.run(Task(id="t", prompt="hi"), SKILL, timeout_s=30))
    assert r.error is not None and "Node.js 24.16" in r.error


def test_crash_with_garbage_output_is_an_error_run(tmp_path: Path) -> None:
    (tmp_path / "garbage").write_text("Segmentation fault? {not json\n")
    log = tmp_path / "log"
    log.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "FAKE_LOG": str(log),
        "FAKE_STDOUT": str(tmp_path / "garbage"),
        "FAKE_EXIT": "134",
    }
    r = run(
        OpenClawHarness(OpenClawSettings(command=str(fake_cli(tmp_path))), env=env).run(
            Task(id="t", prompt="hi"), SKILL, timeout_s=30
        )
    )
    assert r.exit_status == 134
    assert r.error is not None and "status 134" in r.error and "fake stderr line" in r.error


def test_settings_problems_are_errors_naming_the_setting(tmp_path: Path) -> None:
    cli = fake_cli(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    no_key = OpenClawHarness(
        OpenClawSettings(command=str(cli), base_url="http://x/v1", target_model="m", api_key_env="UNSET_KEY_VAR"),
        env=env,
    )
    r = run(no_key.run(Task(id="t", prompt="hi"), SKILL, timeout_s=30))
    assert r.error is not None and "UNSET_KEY_VAR" in r.error
    no_model = OpenClawHarness(OpenClawSettings(command=str(cli), base_url="http://x/v1"), env=env)
    r = run(no_model.run(Task(id="t", prompt="hi"), SKILL, timeout_s=30))
    assert r.error is not None and "target_model" in r.error


# --- the real OpenClaw ----------------------------------------------------------------------------------


def real_env(agent_tools, home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": agent_tools.path_env(), "HOME": str(home), "LANG": "C.UTF-8", **extra}


@pytest.mark.slow
def test_real_skill_reaches_the_model_and_user_state_is_untouched(agent_tools, agent_server, tmp_path: Path) -> None:
    home = user_home(tmp_path, f"{agent_server.url}/v1")
    work = project(tmp_path)
    before = snapshot(home), snapshot(work)
    harness = OpenClawHarness(OpenClawSettings(), env=real_env(agent_tools, home))
    assert harness.status().usable, harness.status().reason
    r = run(harness.run(Task(id="t", prompt="what now", workdir=str(work)), SKILL, timeout_s=180))

    assert r.error is None, r.error
    assert r.exit_status == 0
    assert r.response.startswith("papaya")  # the answer changed to the skill's word
    text = agent_server.requests_text()
    assert "SKILL_SAYS: papaya" in text and "<name>answer</name>" in text
    [read] = r.tool_calls
    assert read.name == "read" and read.arguments["path"].endswith("skills/answer/SKILL.md")
    assert not read.arguments["path"].startswith(str(work))  # it ran in a copy
    assert read.result is not None and "SKILL_SAYS: papaya" in read.result
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0 and r.latency_s > 0
    # the user's OpenClaw state, old transcripts, .env and the project are byte-for-byte unchanged
    assert (snapshot(home), snapshot(work)) == before


@pytest.mark.slow
def test_real_tool_round_trip_through_a_base_url_override(agent_tools, agent_server, tmp_path: Path) -> None:
    home = user_home(tmp_path, f"http://127.0.0.1:{free_port()}/v1")  # the user's own provider is dead
    settings = OpenClawSettings(
        base_url=f"{agent_server.url}/v1", target_model="override-model", api_key_env="STUB_KEY"
    )
    harness = OpenClawHarness(settings, env=real_env(agent_tools, home, STUB_KEY="stub-secret"))
    r = run(harness.run(Task(id="t", prompt="STUB_TOOL: echo from-tool"), Skill(""), timeout_s=180))

    assert r.error is None, r.error
    assert r.response == "hello | tool said: from-tool"
    [call] = r.tool_calls
    assert call.name == "exec" and call.arguments.get("command") == "echo from-tool"
    assert call.result is not None and "from-tool" in call.result
    assert {s.body.get("model") for s in agent_server.seen if s.path.endswith("/chat/completions")} == {
        "override-model"
    }


@pytest.mark.slow
def test_real_plain_runs_in_parallel(agent_tools, agent_server, tmp_path: Path) -> None:
    home = user_home(tmp_path, f"{agent_server.url}/v1")
    harness = OpenClawHarness(OpenClawSettings(concurrency=2), env=real_env(agent_tools, home))

    async def both() -> list:
        return await asyncio.gather(
            *(harness.run(Task(id=f"t{i}", prompt="say hello"), Skill(""), timeout_s=180) for i in range(2))
        )

    runs = run(both())
    for r in runs:
        assert r.error is None, r.error
        assert r.response == "hello" and r.tool_calls == [] and r.exit_status == 0
    text = agent_server.requests_text()
    assert "say hello" in text
    assert f"${FALLBACK_SKILL_NAME}" not in text and "SKILL_SAYS" not in text  # the baseline installs no skill


@pytest.mark.slow
def test_real_timeout_is_an_error_and_the_process_group_is_gone(agent_tools, agent_server, tmp_path: Path) -> None:
    home = user_home(tmp_path, f"{agent_server.url}/v1")
    marker = f"SKILLSLEEP_TEST_RUN={uuid.uuid4().hex}"
    key, value = marker.split("=")
    harness = OpenClawHarness(OpenClawSettings(), env=real_env(agent_tools, home, **{key: value}))
    r = run(harness.run(Task(id="t", prompt="STUB_HANG please"), Skill(""), timeout_s=25))

    assert r.error is not None and "timed out" in r.error and "timeout_s" in r.error
    assert r.exit_status != 0
    assert processes_with(marker) == []


@pytest.mark.slow
def test_real_dead_server_is_an_error_run(agent_tools, tmp_path: Path) -> None:
    port = free_port()
    settings = OpenClawSettings(base_url=f"http://127.0.0.1:{port}/v1", target_model="stub-model", provider_retries=0)
    harness = OpenClawHarness(settings, env=real_env(agent_tools, tmp_path / "home"))
    r = run(harness.run(Task(id="t", prompt="say hello"), Skill(""), timeout_s=120))
    assert r.error is not None, r
    assert "could not reach the model server" in r.error and str(port) in r.error
    assert r.exit_status not in (0, None)


@pytest.mark.slow
def test_real_small_local_model_smoke(agent_tools, llama_server: str, tmp_path: Path) -> None:
    settings = OpenClawSettings(
        base_url=f"{llama_server}/v1", target_model="local-test", lean=True, provider_retries=0, concurrency=1
    )
    harness = OpenClawHarness(settings, env=real_env(agent_tools, tmp_path / "home"))
    # OpenClaw's lean prompt is ~8.4k tokens (the fixture serves a 16k context): ~5 min on 2 cores
    r = run(harness.run(Task(id="t", prompt="Reply with the word hello."), Skill(""), timeout_s=540))
    if r.error and "timed out" in r.error:
        pytest.skip(f"OpenClaw with the 0.5B model on CPU did not finish within 9 minutes: {r.error}")
    assert r.error is None, r.error
    assert r.response.strip()


@pytest.mark.parametrize(
    ("prompt", "context", "sent"),
    [
        ("fix the bug", "", "$answer fix the bug"),
        ("$answer fix the bug", "", "$answer fix the bug"),  # recorded with the mention: asked as recorded
        ("$answer fix the bug", "It is in main.py.", "It is in main.py.\n\n$answer fix the bug"),
        ("fix the bug", "It is in main.py.", "$answer It is in main.py.\n\nfix the bug"),
        ("$answer-two fix the bug", "", "$answer $answer-two fix the bug"),  # another skill's mention
    ],
)
def test_a_task_recorded_with_the_skills_mention_is_asked_without_a_second_one(
    prompt: str, context: str, sent: str
) -> None:
    task = Task(id="t", prompt=prompt, context=context)
    assert task_prompt(task, "answer") == sent
    assert task_prompt(task, None) == (f"{context}\n\n{prompt}" if context else prompt)  # no skill: no mention
