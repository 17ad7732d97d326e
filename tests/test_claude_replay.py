"""The claude-code replay harness.

Fast: parsing recorded `claude -p` stdout (tests/fixtures/recorded/claude/stdout, written by
scripts/record_fixtures.py), the throwaway config dir, and the command line / environment /
failure handling through fake `claude` scripts. Slow: the real pinned `claude` against the
scripted model server (tests/agent_server.py), and one smoke run against the real local model.
"""

from __future__ import annotations

import asyncio
import json
import stat
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agent_server import AgentServer
from replay_checks import snapshot, survivors
from servers import free_port

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Task
from skillsleep.core.train.harness import Harness
from skillsleep.harnesses import agent_cli
from skillsleep.harnesses.claude_code.output import parse_claude_output
from skillsleep.harnesses.claude_code.replay import (
    PLACEHOLDER_KEY,
    ClaudeCodeHarness,
    prepare_config_dir,
)
from skillsleep.harnesses.claude_code.settings import ClaudeCodeSettings

if TYPE_CHECKING:
    from conftest import AgentTools

RECORDED = Path(__file__).parent / "fixtures" / "recorded" / "claude" / "stdout"
EMPTY = Skill("")


def recorded(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _fresh_probe_cache() -> None:
    agent_cli._STATUS_CACHE.clear()


# --- parsing recorded stdout -----------------------------------------------------------------------


def test_recorded_samples_match_the_manifest() -> None:
    manifest = json.loads(recorded("manifest.json"))
    for name in (
        "plain.json",
        "plain.stream.jsonl",
        "tool.stream.jsonl",
        "skill.stream.jsonl",
        "dead-server.stream.jsonl",
        "max-turns.stream.jsonl",
    ):
        assert name in manifest and (RECORDED / name).is_file(), name
    assert manifest["plain.stream.jsonl"]["exit_code"] == 0
    assert manifest["dead-server.stream.jsonl"]["exit_code"] != 0


@pytest.mark.parametrize("name", ["plain.json", "plain.stream.jsonl"])
def test_parse_plain_answer(name: str) -> None:
    run = parse_claude_output(recorded(name))
    assert run.error is None
    assert run.response == "hello"
    assert run.tool_calls == []
    assert run.usage.input_tokens == 120 and run.usage.output_tokens == 6
    assert run.cost_usd == pytest.approx(0.0006)


def test_parse_tool_call_with_its_result() -> None:
    run = parse_claude_output(recorded("tool.stream.jsonl"))
    assert run.error is None
    assert [(c.name, c.arguments, c.result) for c in run.tool_calls] == [
        ("Bash", {"command": "echo from-tool"}, "from-tool")
    ]
    assert run.response == "hello | tool said: from-tool"
    assert run.usage.input_tokens == 240 and run.usage.output_tokens == 12  # the result's total, not per message
    assert run.cost_usd == pytest.approx(0.0012)


def test_parse_skill_answer() -> None:
    assert parse_claude_output(recorded("skill.stream.jsonl")).response == "kiwi"


def test_parse_dead_server_is_an_error_that_says_to_start_it() -> None:
    run = parse_claude_output(recorded("dead-server.stream.jsonl"), server="http://127.0.0.1:9")
    assert run.error is not None
    assert "could not reach the model server at http://127.0.0.1:9" in run.error
    assert "ECONNREFUSED" in run.error and "start the server" in run.error
    assert run.response == ""  # Claude Code's error notice is not an answer
    assert run.cost_usd == 0.0


def test_parse_max_turns_keeps_the_tool_calls_and_says_to_raise_the_limit() -> None:
    run = parse_claude_output(recorded("max-turns.stream.jsonl"))
    assert run.error is not None and "max_turns" in run.error and "turn limit" in run.error
    assert [(c.name, c.result) for c in run.tool_calls] == [("Bash", "from-tool")]


def test_parse_skips_garbage_and_a_missing_result_is_an_error() -> None:
    lines = recorded("tool.stream.jsonl").splitlines()
    result_line = next(i for i, line in enumerate(lines) if '"type":"result"' in line)
    mangled = [
        "not json at all",
        "[1, 2]",
        "null",
        '"a string"',
        '{"type": "future_record", "x": 1}',
        *lines[:result_line],
        lines[result_line][:80],
    ]  # the result line cut off mid-way
    run = parse_claude_output("\n".join(mangled))
    assert run.error is not None and "without a final `result` record" in run.error
    assert [(c.name, c.result) for c in run.tool_calls] == [("Bash", "from-tool")]
    assert run.response == "hello | tool said: from-tool"  # the last thing the model said
    assert run.usage.input_tokens == 240  # summed over the two assistant messages

    intact = parse_claude_output("garbage\n" + "\n".join(lines) + "\n{broken")
    assert intact.error is None and intact.response == "hello | tool said: from-tool"


@pytest.mark.parametrize("stdout", ["", "   \n", "Segmentation fault\n", '{"type": "result"'])
def test_parse_no_json_is_an_error(stdout: str) -> None:
    run = parse_claude_output(stdout)
    assert run.error is not None and "Claude Code" in run.error
    assert run.response == ""


def _result(**fields: Any) -> str:
    rec = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "num_turns": 1,
        "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        **fields,
    }
    return json.dumps(rec) + "\n"


@pytest.mark.parametrize(
    "fields",
    [
        {
            "api_error_status": 401,
            "api_error_type": "authentication_error",
            "result": "Invalid API key · Fix external API key",
        },
        {"api_error_status": None, "result": "Not logged in · Please run /login"},
    ],
)
def test_parse_auth_failure_says_to_log_in_or_set_the_key(fields: dict[str, Any]) -> None:
    run = parse_claude_output(_result(**fields))
    assert run.error is not None
    assert "could not authenticate" in run.error and "/login" in run.error and "ANTHROPIC_API_KEY" in run.error
    assert fields["result"] in run.error


def test_parse_other_error_results() -> None:
    failed = parse_claude_output(
        _result(api_error_status=500, result="API Error: 500 scripted failure"), server="http://127.0.0.1:1234"
    )
    assert failed.error is not None and "failed to answer" in failed.error and "127.0.0.1:1234" in failed.error
    limited = parse_claude_output(_result(api_error_status=429, result="API Error: 429 too many"))
    assert limited.error is not None and "concurrency" in limited.error
    rejected = parse_claude_output(_result(api_error_status=404, result="API Error: 404 model not found"))
    assert rejected.error is not None and "target_model" in rejected.error
    crashed = parse_claude_output(_result(subtype="error_during_execution", errors=["boom"]))
    assert crashed.error is not None and "boom" in crashed.error and "claude -p hello" in crashed.error


def test_parse_odd_blocks_and_failed_tools() -> None:
    stdout = "\n".join(
        json.dumps(r)
        for r in [
            {
                "type": "assistant",
                "message": {
                    "id": "m1",
                    "content": [
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}},
                        {"type": "tool_use", "id": "t2", "name": "Weird", "input": "raw"},
                        "not a block",
                    ],
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 90,
                        "cache_creation_input_tokens": 5,
                        "output_tokens": 3,
                    },
                },
            },
            {
                "type": "user",
                "message": {
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "no such file"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "t2",
                            "content": [{"type": "text", "text": "part one"}, {"type": "image", "source": {}}],
                        },
                        {"type": "tool_result", "tool_use_id": "unknown", "content": "orphan"},
                    ]
                },
            },
            {
                "type": "assistant",
                "message": {
                    "id": "m1",
                    "content": [  # the same reply line written twice
                        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}}
                    ],
                },
            },
            {"type": "assistant", "message": {"id": "m2", "content": "plain string content"}},
            {"type": "result", "subtype": "success", "is_error": False, "result": "done", "total_cost_usd": "n/a"},
        ]
    )
    run = parse_claude_output(stdout)
    assert run.error is None and run.response == "done"
    assert [(c.name, c.arguments, c.result) for c in run.tool_calls] == [
        ("Read", {"file_path": "/x"}, "[error] no such file"),
        ("Weird", {"input": "raw"}, "part one\n[image]"),
    ]
    assert (run.usage.input_tokens, run.usage.cached_tokens, run.usage.output_tokens) == (105, 90, 3)
    assert run.cost_usd == 0.0  # no usable reported cost


def test_parse_without_result_answers_with_the_agents_last_words_not_a_subagents() -> None:
    stdout = "\n".join(
        json.dumps(r)
        for r in [
            {
                "type": "assistant",
                "parent_tool_use_id": None,
                "message": {"content": [{"type": "text", "text": "main"}]},
            },
            {
                "type": "assistant",
                "parent_tool_use_id": "toolu_9",
                "message": {"content": [{"type": "text", "text": "sub"}]},
            },
        ]
    )
    run = parse_claude_output(stdout)
    assert run.error is not None and run.response == "main"


# --- the throwaway config dir ---------------------------------------------------------------------


def _user_claude(home: Path, base_url: str = "https://elsewhere.example") -> Path:
    user = home / ".claude"
    user.mkdir(parents=True)
    (user / ".credentials.json").write_text('{"claudeAiOauth": {"accessToken": "secret"}}')
    (user / "settings.json").write_text(
        json.dumps(
            {
                "model": "opus",
                "apiKeyHelper": "print-key",
                "env": {"ANTHROPIC_BASE_URL": base_url, "MY_VAR": "1"},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"touch {home}/stop-hook-fired"}]}]},
            }
        )
    )
    (home / ".claude.json").write_text(
        json.dumps({"oauthAccount": {"emailAddress": "u@example.com"}, "projects": {"/big": {}}, "numStartups": 7})
    )
    return user


def test_config_dir_links_login_and_copies_settings_without_hooks(tmp_path: Path) -> None:
    user = _user_claude(tmp_path)
    dest = prepare_config_dir(user, tmp_path / ".claude.json", tmp_path / "run" / "config", own_provider=False)
    link = dest / ".credentials.json"
    assert link.is_symlink() and link.resolve() == (user / ".credentials.json").resolve()
    settings = json.loads((dest / "settings.json").read_text())
    assert "hooks" not in settings
    assert settings["model"] == "opus" and settings["apiKeyHelper"] == "print-key"
    assert settings["env"] == {"ANTHROPIC_BASE_URL": "https://elsewhere.example", "MY_VAR": "1"}
    assert json.loads((dest / ".claude.json").read_text()) == {"oauthAccount": {"emailAddress": "u@example.com"}}


def test_config_dir_for_another_server_carries_no_credentials(tmp_path: Path) -> None:
    user = _user_claude(tmp_path)
    dest = prepare_config_dir(user, tmp_path / ".claude.json", tmp_path / "run" / "config", own_provider=True)
    assert not (dest / ".credentials.json").exists() and not (dest / ".claude.json").exists()
    settings = json.loads((dest / "settings.json").read_text())
    assert "apiKeyHelper" not in settings and "hooks" not in settings
    assert settings["env"] == {"MY_VAR": "1"} and settings["model"] == "opus"


def test_config_dir_without_user_config_is_empty(tmp_path: Path) -> None:
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "settings.json").write_text("{not json")
    dest = prepare_config_dir(tmp_path / "user", tmp_path / "nope.json", tmp_path / "cfg", own_provider=False)
    assert list(dest.iterdir()) == []


# --- the harness with fake `claude` scripts ----------------------------------------------------------

FAKE_CLAUDE = """#!{python}
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("2.1.332 (Claude Code)")
    sys.exit(0)
config = os.environ["CLAUDE_CONFIG_DIR"]
skill = args[args.index("--append-system-prompt-file") + 1] if "--append-system-prompt-file" in args else None
link = os.path.join(config, ".credentials.json")
info = {{"argv": args, "cwd": os.getcwd(), "env": dict(os.environ),
        "files": {{n: open(n).read() for n in sorted(os.listdir(".")) if os.path.isfile(n)}},
        "skill": open(skill).read() if skill else None,
        "config": sorted(os.listdir(config)),
        "skills": {{d: open(os.path.join(config, "skills", d, "SKILL.md")).read()
                   for d in (os.listdir(os.path.join(config, "skills"))
                             if os.path.isdir(os.path.join(config, "skills")) else [])}},
        "credentials_link": os.readlink(link) if os.path.islink(link) else None}}
with open(os.environ["FAKE_CLAUDE_LOG"], "w") as log:
    json.dump(info, log)
open("scribble.txt", "w").write("the replay wrote this")
print(json.dumps({{"type": "system", "subtype": "init"}}))
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "fake answer",
                  "usage": {{"input_tokens": 7, "output_tokens": 2}}, "total_cost_usd": 0.25}}))
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _fake_claude(tmp_path: Path) -> Path:
    return _script(tmp_path / "claude", FAKE_CLAUDE.format(python=sys.executable))


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "notes.txt").write_text("original notes\n")
    (project / "src" / "app.py").write_text("print('hi')\n")
    return project


def test_command_line_environment_and_state_of_one_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _user_claude(home)
    project = _project(tmp_path)
    log = tmp_path / "fake.json"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "FAKE_CLAUDE_LOG": str(log), "DISABLE_TELEMETRY": "0"}
    settings = ClaudeCodeSettings(
        command=str(_fake_claude(tmp_path)),
        target_model="m-1",
        max_turns=3,
        extra_args=["--effort", "low"],
        env={"EXTRA": "yes"},
    )
    harness = ClaudeCodeHarness(settings, env=env)
    skill = Skill("---\nname: demo\ndescription: d\n---\n# Demo\nAlways say kiwi.\n")
    task = Task(id="t1", prompt="-starts with a dash", context="some context", workdir=str(project))

    run = asyncio.run(harness.run(task, skill))

    assert run.error is None and run.response == "fake answer" and run.exit_status == 0
    assert run.cost_usd == 0.25 and run.usage.input_tokens == 7 and run.latency_s > 0
    info = json.loads(log.read_text())
    argv = info["argv"]
    assert argv[0] == "-p" and argv[-2:] == ["--", "some context\n\n-starts with a dash"]
    for flag in (
        ["--output-format", "stream-json"],
        ["--verbose"],
        ["--no-session-persistence"],
        ["--permission-mode", "dontAsk"],
        ["--max-turns", "3"],
        ["--model", "m-1"],
        ["--allowedTools", "Bash", "Read", "Edit", "Write", "Glob", "Grep"],
        ["--effort", "low"],
    ):
        assert any(argv[i : i + len(flag)] == flag for i in range(len(argv))), flag
    assert "--bare" not in argv and "--tools" not in argv
    assert info["skill"] == "# Demo\nAlways say kiwi.\n"  # the body: frontmatter is metadata
    # a fresh copy of the project, not the project itself
    assert info["cwd"] != str(project) and info["files"] == {"notes.txt": "original notes\n"}
    assert (project / "notes.txt").read_text() == "original notes\n" and not (project / "scribble.txt").exists()
    # the agent's state goes to a throwaway config dir seeded with the user's login
    config = info["env"]["CLAUDE_CONFIG_DIR"]
    assert not config.startswith(str(home)) and not Path(config).exists()
    assert info["credentials_link"] == str((home / ".claude" / ".credentials.json").resolve())
    assert set(info["config"]) == {".credentials.json", "settings.json", ".claude.json"}
    e = info["env"]
    assert e["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and e["DISABLE_AUTOUPDATER"] == "1"
    assert e["DISABLE_TELEMETRY"] == "1" and e["CLAUDE_CODE_MAX_RETRIES"] == "2" and e["EXTRA"] == "yes"
    assert "ANTHROPIC_BASE_URL" not in e and "ANTHROPIC_API_KEY" not in e  # the agent's own provider


@pytest.mark.parametrize(
    ("prompt", "context", "installed"),
    [
        ("/demo review the patch", "", True),  # recorded as the user invoked it: resolves to the candidate
        ("/demo", "", True),
        ("review the patch", "", False),
        ("/demo-two review the patch", "", False),  # another skill's command
        ("/demo review the patch", "some context", False),  # not at the start: no command
    ],
)
def test_a_task_that_invokes_the_skill_by_name_finds_the_candidate_as_a_user_skill(
    prompt: str, context: str, installed: bool, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    _user_claude(home)
    log = tmp_path / "fake.json"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "FAKE_CLAUDE_LOG": str(log)}
    harness = ClaudeCodeHarness(ClaudeCodeSettings(command=str(_fake_claude(tmp_path))), env=env)
    text = "---\nname: demo\ndescription: d\n---\n# Demo\nAlways say kiwi.\n"
    run = asyncio.run(harness.run(Task(id="t1", prompt=prompt, context=context), Skill(text)))
    assert run.error is None
    info = json.loads(log.read_text())
    assert info["argv"][-1] == (f"{context}\n\n{prompt}" if context else prompt)  # the prompt as recorded
    if installed:  # the whole document, once: no copy of its body in the system prompt
        assert info["skills"] == {"demo": text} and info["skill"] is None
    else:
        assert info["skills"] == {} and info["skill"] == "# Demo\nAlways say kiwi.\n"
    assert not (home / ".claude" / "skills").exists()  # the user's config dir untouched


def test_base_url_points_the_agent_at_another_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _user_claude(home)
    log = tmp_path / "fake.json"
    fake = _fake_claude(tmp_path)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "FAKE_CLAUDE_LOG": str(log),
        "LOCAL_KEY": "k-123",
        "ANTHROPIC_AUTH_TOKEN": "user-token",
        "CLAUDE_CODE_USE_BEDROCK": "1",
    }
    settings = ClaudeCodeSettings(
        command=str(fake),
        base_url="http://127.0.0.1:8080/v1/",
        api_key_env="LOCAL_KEY",
        bare=True,
        tools=[],
        max_retries=0,
    )
    run = asyncio.run(ClaudeCodeHarness(settings, env=env).run(Task(id="t", prompt="hi"), EMPTY))
    assert run.error is None
    info = json.loads(log.read_text())
    e, argv = info["env"], info["argv"]
    assert e["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8080" and e["ANTHROPIC_API_KEY"] == "k-123"
    assert "ANTHROPIC_AUTH_TOKEN" not in e and "CLAUDE_CODE_USE_BEDROCK" not in e
    assert e["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert info["credentials_link"] is None and ".claude.json" not in info["config"]
    assert "--bare" in argv and argv[argv.index("--tools") + 1] == ""
    assert "--model" not in argv and "--append-system-prompt-file" not in argv  # no model override, empty skill
    assert info["files"] == {}  # no task workdir → an empty one

    settings = ClaudeCodeSettings(command=str(fake), base_url="http://127.0.0.1:8080")
    asyncio.run(ClaudeCodeHarness(settings, env=env).run(Task(id="t", prompt="hi"), EMPTY))
    assert json.loads(log.read_text())["env"]["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY


def test_unset_key_variable_is_an_error_naming_it(tmp_path: Path) -> None:
    settings = ClaudeCodeSettings(
        command=str(_fake_claude(tmp_path)), base_url="http://127.0.0.1:1", api_key_env="MY_SERVER_KEY"
    )
    run = asyncio.run(
        ClaudeCodeHarness(settings, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}).run(
            Task(id="t", prompt="hi"), EMPTY
        )
    )
    assert run.error is not None and "MY_SERVER_KEY" in run.error and "export" in run.error


def test_missing_cli_is_an_error_naming_the_install(tmp_path: Path) -> None:
    harness = ClaudeCodeHarness(
        ClaudeCodeSettings(command=str(tmp_path / "nowhere" / "claude")),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert isinstance(harness, Harness) and harness.name == "claude-code"
    status = harness.status()
    assert not status.installed and not status.usable
    run = asyncio.run(harness.run(Task(id="t", prompt="hi"), EMPTY))
    assert run.error is not None and "npm install -g @anthropic-ai/claude-code@2.1.332" in run.error
    # found on PATH by its default name, or not at all
    run = asyncio.run(
        ClaudeCodeHarness(ClaudeCodeSettings(), env={"PATH": str(tmp_path), "HOME": str(tmp_path)}).run(
            Task(id="t", prompt="hi"), EMPTY
        )
    )
    assert run.error is not None and "`claude` was not found" in run.error


def test_too_old_cli_is_an_error_saying_to_upgrade(tmp_path: Path) -> None:
    old = _script(tmp_path / "claude", "#!/bin/sh\necho '2.0.77 (Claude Code)'\n")
    harness = ClaudeCodeHarness(ClaudeCodeSettings(command=str(old)), env={"PATH": "/usr/bin:/bin"})
    run = asyncio.run(harness.run(Task(id="t", prompt="hi"), EMPTY))
    assert run.error is not None and "2.0.77 is older than 2.1.0" in run.error and "upgrade" in run.error


def test_crash_is_an_error_with_the_exit_status_and_stderr(tmp_path: Path) -> None:
    crash = _script(
        tmp_path / "claude",
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo '2.1.332 (Claude Code)'; exit 0; }\n"
        "echo 'fatal: the native binary is missing' >&2\nexit 3\n",
    )
    harness = ClaudeCodeHarness(
        ClaudeCodeSettings(command=str(crash)), env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    )
    run = asyncio.run(harness.run(Task(id="t", prompt="hi"), EMPTY))
    assert run.exit_status == 3
    assert run.error is not None and "status 3" in run.error and "native binary is missing" in run.error
    assert "claude -p hello" in run.error


# --- the real `claude` against the scripted server (slow) ----------------------------------------------


def _env(tmp_path: Path, agent_tools: AgentTools, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": agent_tools.path_env(), "HOME": str(home), **extra}


def _stub(server: AgentServer | str, **kw: Any) -> ClaudeCodeSettings:
    url = server if isinstance(server, str) else server.url
    return ClaudeCodeSettings(base_url=url, target_model="stub-model", max_retries=0, **kw)


@pytest.mark.slow
def test_real_claude_status(agent_tools: AgentTools, tmp_path: Path) -> None:
    status = ClaudeCodeHarness(ClaudeCodeSettings(), env=_env(tmp_path, agent_tools)).status()
    assert status.usable and status.installed and status.version == "2.1.332"


@pytest.mark.slow
def test_real_claude_plain_answer(agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path) -> None:
    harness = ClaudeCodeHarness(_stub(agent_server), env=_env(tmp_path, agent_tools))
    run = asyncio.run(harness.run(Task(id="t", prompt="say hello"), EMPTY, timeout_s=120))
    assert run.error is None, run.error
    assert run.response == "hello" and run.exit_status == 0 and run.tool_calls == []
    assert run.usage.output_tokens > 0 and run.latency_s > 0
    assert any(s.path.startswith("/v1/messages") for s in agent_server.seen)


@pytest.mark.slow
def test_real_claude_tool_round_trip(agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path) -> None:
    harness = ClaudeCodeHarness(_stub(agent_server), env=_env(tmp_path, agent_tools))
    run = asyncio.run(harness.run(Task(id="t", prompt="STUB_TOOL: echo from-tool"), EMPTY, timeout_s=120))
    assert run.error is None, run.error
    assert [(c.name, c.arguments.get("command"), c.result) for c in run.tool_calls] == [
        ("Bash", "echo from-tool", "from-tool")
    ]
    assert run.response == "hello | tool said: from-tool"


@pytest.mark.slow
def test_real_claude_skill_reaches_the_model(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    harness = ClaudeCodeHarness(_stub(agent_server), env=_env(tmp_path, agent_tools))
    task = Task(id="t", prompt="what now")
    baseline = asyncio.run(harness.run(task, EMPTY, timeout_s=120))
    assert baseline.error is None and baseline.response == "hello"
    assert "SKILL_SAYS" not in agent_server.requests_text()
    skill = Skill("---\nname: fruit\ndescription: answers with a fruit\n---\nSKILL_SAYS: kiwi\n")
    run = asyncio.run(harness.run(task, skill, timeout_s=120))
    assert run.error is None and run.response == "kiwi"
    assert "SKILL_SAYS: kiwi" in agent_server.requests_text()


@pytest.mark.slow
def test_real_claude_resolves_a_recorded_slash_invocation_to_the_candidate(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    harness = ClaudeCodeHarness(_stub(agent_server), env=_env(tmp_path, agent_tools))
    skill = Skill("---\nname: fruit\ndescription: answers with a fruit\n---\nSKILL_SAYS: kiwi\n")
    run = asyncio.run(harness.run(Task(id="t", prompt="/fruit what now"), skill, timeout_s=120))
    assert run.error is None and run.response == "kiwi"
    text = agent_server.requests_text()
    assert "<command-name>/fruit</command-name>" in text and "<command-args>what now</command-args>" in text
    assert text.count("SKILL_SAYS: kiwi") == len(agent_server.seen)  # once a request: the expanded skill


@pytest.mark.slow
def test_real_claude_timeout_kills_the_process_group(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    marker = f"SKILLSLEEP_TEST_RUN={uuid.uuid4().hex}"
    name, value = marker.split("=")
    harness = ClaudeCodeHarness(_stub(agent_server, env={name: value}), env=_env(tmp_path, agent_tools))
    run = asyncio.run(harness.run(Task(id="t", prompt="STUB_HANG"), EMPTY, timeout_s=4))
    assert run.error is not None and "timeout" in run.error and "within 4 s" in run.error
    assert run.exit_status is None
    assert any(s.path.startswith("/v1/messages") for s in agent_server.seen)  # it was waiting on the model
    left = survivors(marker)
    assert left == [], f"agent processes survived the timeout: {left}"


@pytest.mark.slow
def test_real_claude_dead_server(agent_tools: AgentTools, tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    harness = ClaudeCodeHarness(_stub(dead), env=_env(tmp_path, agent_tools))
    run = asyncio.run(harness.run(Task(id="t", prompt="say hello"), EMPTY, timeout_s=120))
    assert run.error is not None and "could not reach the model server" in run.error and dead in run.error
    assert run.exit_status not in (None, 0)


@pytest.mark.slow
def test_real_claude_not_logged_in(agent_tools: AgentTools, tmp_path: Path) -> None:
    # the agent's own provider, with no key and no login in the (temporary) user home
    harness = ClaudeCodeHarness(ClaudeCodeSettings(max_retries=0), env=_env(tmp_path, agent_tools))
    run = asyncio.run(harness.run(Task(id="t", prompt="say hello"), EMPTY, timeout_s=120))
    assert run.error is not None and "could not authenticate" in run.error and "/login" in run.error
    assert run.response == ""


@pytest.mark.slow
def test_real_claude_missing_cli(agent_tools: AgentTools, tmp_path: Path) -> None:
    settings = ClaudeCodeSettings(command=str(tmp_path / "not-installed" / "claude"))
    run = asyncio.run(
        ClaudeCodeHarness(settings, env=_env(tmp_path, agent_tools)).run(Task(id="t", prompt="hi"), EMPTY)
    )
    assert run.error is not None and "npm install -g @anthropic-ai/claude-code" in run.error


@pytest.mark.slow
def test_real_claude_leaves_the_users_folders_and_workdir_unchanged(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    # credentials, .claude.json, and a settings.json that points Claude Code at the server (the
    # agent's own configuration: no base_url) and has a Stop hook that would touch a file
    user = _user_claude(home, base_url=agent_server.url)
    sessions = user / "projects" / "-work-project"
    sessions.mkdir(parents=True)
    (sessions / "0b5e7c1e-session.jsonl").write_text('{"type":"user","message":{"content":"old prompt"}}\n')
    (home / ".codex").mkdir()
    (home / ".codex" / "history.jsonl").write_text("{}\n")
    project = _project(tmp_path)
    before_home, before_project = snapshot(home), snapshot(project)
    env = {"PATH": agent_tools.path_env(), "HOME": str(home), "ANTHROPIC_API_KEY": "dummy"}
    harness = ClaudeCodeHarness(ClaudeCodeSettings(target_model="stub-model", max_retries=0), env=env)
    task = Task(id="t", prompt="STUB_TOOL: echo changed > notes.txt && cat notes.txt", workdir=str(project))
    run = asyncio.run(harness.run(task, Skill("Be brief.\n"), timeout_s=120))
    assert run.error is None, run.error
    assert run.tool_calls and run.tool_calls[0].result == "changed"  # the replay did write, in its copy
    assert snapshot(home) == before_home
    assert snapshot(project) == before_project
    assert not (home / "stop-hook-fired").exists()


@pytest.mark.slow
def test_real_claude_parallel_runs_are_capped_by_concurrency(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    log = tmp_path / "starts.log"
    real = agent_tools.bin / "claude"
    # Each run logs start/end; a run waits (bounded) until a second one has started, so two runs
    # overlap whenever the cap allows it, and the log order shows how many were ever in flight.
    wrapper = _script(
        tmp_path / "claude",
        f"""#!/bin/sh
[ "$1" = --version ] && exec "{real}" "$@"
echo start >> "{log}"
i=0
while [ "$(grep -c start "{log}")" -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
"{real}" "$@"
rc=$?
echo end >> "{log}"
exit $rc
""",
    )
    harness = ClaudeCodeHarness(
        _stub(agent_server, command=str(wrapper), concurrency=2), env=_env(tmp_path, agent_tools)
    )

    async def many() -> list[Any]:
        return await asyncio.gather(
            *(harness.run(Task(id=f"t{i}", prompt="say hello"), EMPTY, timeout_s=120) for i in range(4))
        )

    runs = asyncio.run(many())
    assert [r.error for r in runs] == [None] * 4 and [r.response for r in runs] == ["hello"] * 4
    events = log.read_text().split()
    assert events.count("start") == 4 and events.count("end") == 4
    in_flight, peak = 0, 0
    for event in events:
        in_flight += 1 if event == "start" else -1
        peak = max(peak, in_flight)
    assert peak == 2
    assert sum(s.path.startswith("/v1/messages") for s in agent_server.seen) >= 4


# --- the real local model (slow smoke test) -----------------------------------------------------------


@pytest.mark.slow
def test_real_claude_with_the_local_model(agent_tools: AgentTools, llama_server: str, tmp_path: Path) -> None:
    # --bare --tools "": ~100 tokens of system prompt, which a 0.5B model on 2 cores answers in seconds
    settings = ClaudeCodeSettings(
        base_url=llama_server, target_model="qwen2.5-coder-0.5b", bare=True, tools=[], max_turns=1, max_retries=0
    )
    harness = ClaudeCodeHarness(settings, env=_env(tmp_path, agent_tools))
    run = asyncio.run(
        harness.run(Task(id="t", prompt="Say hello in one word."), Skill("Answer briefly.\n"), timeout_s=300)
    )
    assert run.error is None, run.error
    assert run.response.strip()
