"""The Codex replay harness: parsing `codex exec --json` (recorded samples), installing the skill,
and real `codex exec` runs against the scripted agent server (slow) and the local model (slow)."""

from __future__ import annotations

import asyncio
import json
import shutil
import stat
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from agent_server import AgentServer
from conftest import AgentTools
from replay_checks import processes_with, snapshot
from servers import free_port

from skillsleep.core.document.skill import Skill
from skillsleep.core.shared.records import Task
from skillsleep.harnesses.agent_cli import FALLBACK_SKILL_NAME
from skillsleep.harnesses.codex.output import parse_codex_output
from skillsleep.harnesses.codex.replay import CodexHarness
from skillsleep.harnesses.codex.settings import CodexSettings
from skillsleep.harnesses.codex.skill import codex_skill

RECORDED = Path(__file__).parent / "fixtures" / "recorded" / "codex" / "stdout"
MANGO = Skill.parse(
    "---\nname: answer\ndescription: How to answer in this project.\n---\n\n"
    "Always answer with one word. SKILL_SAYS: mango\n"
)
# Recorded from codex 0.171.0 against a server answering 401 (the recorder has no auth sample).
AUTH_FAILED = (
    '{"type":"thread.started","thread_id":"01a2277e-cd27-7152-82a1-5a52bb503244"}\n'
    '{"type":"turn.started"}\n'
    '{"type":"error","message":"unexpected status 401 Unauthorized: Incorrect API key provided: dummy., '
    'url: http://127.0.0.1:28932/v1/responses"}\n'
    '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Incorrect API key provided: '
    'dummy., url: http://127.0.0.1:28932/v1/responses"}}\n'
)


def recorded(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


# --- parsing recorded stdout ------------------------------------------------------------------


def test_manifest_says_which_samples_succeeded() -> None:
    manifest = json.loads(recorded("manifest.json"))
    assert {k: v["exit_code"] for k, v in manifest.items()} == {
        "plain.jsonl": 0,
        "tool.jsonl": 0,
        "skill.jsonl": 0,
        "dead-server.jsonl": 1,
    }


def test_plain_answer_with_usage_and_no_cost() -> None:
    run = parse_codex_output(recorded("plain.jsonl"))
    assert run.response == "hello"
    assert run.error is None  # the "Model metadata … not found" error item is a warning
    assert (run.usage.input_tokens, run.usage.output_tokens) == (120, 6)
    assert run.tool_calls == [] and run.cost_usd == 0.0


def test_tool_call_comes_with_its_arguments_and_result() -> None:
    run = parse_codex_output(recorded("tool.jsonl"))
    assert [c.name for c in run.tool_calls] == ["exec_command"]
    call = run.tool_calls[0]
    assert call.arguments == {"cmd": "echo from-tool"}  # unwrapped from `/bin/bash -lc '…'`
    assert call.result == "from-tool\n"
    assert run.response == "hello | tool said: from-tool" and run.error is None
    assert run.usage.input_tokens == 240


def test_skill_sample_answers_with_the_skill_word() -> None:
    assert parse_codex_output(recorded("skill.jsonl")).response == "mango"


def test_dead_server_is_an_error_saying_to_start_it() -> None:
    run = parse_codex_output(recorded("dead-server.jsonl"))
    assert run.response == ""
    assert run.error is not None
    assert "Connection failed" in run.error and "model server did not answer" in run.error


def test_auth_failure_says_to_log_in() -> None:
    run = parse_codex_output(AUTH_FAILED)
    assert run.error is not None and "401" in run.error and "codex login" in run.error


def test_garbage_lines_and_unknown_events_are_skipped() -> None:
    lines = recorded("tool.jsonl").splitlines()
    noisy = [
        "not json at all",
        "[1, 2]",
        '"a string"',
        '{"type":"future.event","x":1}',
        "{broken",
        *lines[:3],
        "\x00\x01",
        *lines[3:],
        "",
    ]
    assert parse_codex_output("\n".join(noisy)) == parse_codex_output(recorded("tool.jsonl"))


def test_output_cut_anywhere_never_raises_and_a_missing_turn_end_is_an_error() -> None:
    text = recorded("tool.jsonl")
    for cut in range(len(text.rstrip("\n"))):  # any cut before the last closing brace
        run = parse_codex_output(text[:cut])
        assert run.error is not None, f"cut at {cut} gave no error"
        assert "ended before the turn finished" in run.error
    started_only = "\n".join(text.splitlines()[:4])  # the command started, nothing after
    run = parse_codex_output(started_only)
    assert [(c.name, c.result) for c in run.tool_calls] == [("exec_command", None)]


def test_retry_error_events_are_not_a_failure_when_the_turn_completes() -> None:
    lines = recorded("plain.jsonl").splitlines()
    retry = '{"type":"error","message":"Reconnecting... 1/5 (Connection failed: error sending request)"}'
    run = parse_codex_output("\n".join([*lines[:3], retry, *lines[3:]]))
    assert run.error is None and run.response == "hello"


def test_the_last_agent_message_is_the_answer_and_failures_show_in_results() -> None:
    events = [
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "a", "type": "agent_message", "text": "Let me look."}},
        {
            "type": "item.completed",
            "item": {
                "id": "b",
                "type": "command_execution",
                "command": "ls nope",
                "aggregated_output": "ls: nope: No such file",
                "exit_code": 2,
                "status": "failed",
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "c",
                "type": "file_change",
                "status": "completed",
                "changes": [{"path": "a.py", "kind": "update"}],
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "d",
                "type": "mcp_tool_call",
                "server": "docs",
                "tool": "find",
                "arguments": {"q": "x"},
                "status": "failed",
                "error": {"message": "denied"},
            },
        },
        {"type": "item.completed", "item": {"id": "e", "type": "agent_message", "text": "Done."}},
        {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 3}},
    ]
    run = parse_codex_output("\n".join(json.dumps(e) for e in events))
    assert run.response == "Done."
    assert [c.name for c in run.tool_calls] == ["exec_command", "apply_patch", "mcp__docs__find"]
    assert run.tool_calls[0].result == "ls: nope: No such file\n[exit code 2]"
    assert run.tool_calls[1].arguments == {"changes": [{"path": "a.py", "kind": "update"}]}
    assert run.tool_calls[2].arguments == {"q": "x"} and run.tool_calls[2].result == "error: denied"
    assert (run.usage.input_tokens, run.usage.cached_tokens, run.usage.output_tokens) == (10, 4, 3)


# --- the skill as Codex loads it --------------------------------------------------------------


def test_a_complete_skill_is_installed_unchanged_under_its_own_name() -> None:
    assert codex_skill(MANGO) == ("answer", MANGO.text)


def test_a_skill_without_frontmatter_gets_the_fallback_name_and_a_description() -> None:
    name, text = codex_skill(Skill.parse("# Rules\n\n- Be brief.\n"))
    assert name == FALLBACK_SKILL_NAME
    assert text.startswith(f"---\nname: {FALLBACK_SKILL_NAME}\ndescription: ")
    assert Skill.parse(text).body == "# Rules\n\n- Be brief.\n"


def test_an_empty_description_is_replaced() -> None:
    name, text = codex_skill(Skill.parse('---\nname: answer\ndescription: ""\n---\nbody\n'))
    fm = Skill.parse(text).frontmatter
    assert name == "answer" and fm.count("description:") == 1 and 'description: ""' not in fm


def test_an_invalid_name_is_replaced_and_other_keys_are_kept() -> None:
    name, text = codex_skill(Skill.parse("---\nname: My Skill\nlicense: MIT\n---\nbody\n"))
    assert name == FALLBACK_SKILL_NAME
    fm = Skill.parse(text).frontmatter
    assert "license: MIT" in fm and "My Skill" not in fm and "description:" in fm


# --- failures found before or without the model -----------------------------------------------


def fake_cli(path: Path, script: str) -> Path:
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


async def test_a_missing_cli_is_an_error_naming_the_install(tmp_path: Path) -> None:
    harness = CodexHarness(CodexSettings(command=str(tmp_path / "nowhere" / "codex")), env={"PATH": "/usr/bin:/bin"})
    run = await harness.run(Task(id="t", prompt="hi"), MANGO)
    assert run.error is not None and "npm install -g @openai/codex@0.171.0" in run.error
    assert harness.status().installed is False


async def test_a_too_old_cli_is_an_error_saying_to_upgrade(tmp_path: Path) -> None:
    cli = fake_cli(tmp_path / "codex", 'echo "codex-cli 0.100.0"\n')
    run = await CodexHarness(CodexSettings(command=str(cli)), env={"PATH": "/usr/bin:/bin"}).run(
        Task(id="t", prompt="hi"), MANGO
    )
    assert run.error is not None and "0.100.0 is older than 0.171.0" in run.error and "upgrade" in run.error


async def test_a_crash_is_an_error_with_the_exit_code_and_stderr(tmp_path: Path) -> None:
    cli = fake_cli(
        tmp_path / "codex",
        '[ "$1" = --version ] && { echo "codex-cli 0.171.0"; exit 0; }\n'
        'echo \'{"type":"thread.started","thread_id":"x"}\'\n'
        'echo "panic: boom" >&2\nexit 3\n',
    )
    run = await CodexHarness(CodexSettings(command=str(cli)), env={"PATH": "/usr/bin:/bin"}).run(
        Task(id="t", prompt="hi"), MANGO
    )
    assert run.exit_status == 3
    assert run.error is not None and "exited with code 3" in run.error and "panic: boom" in run.error


async def test_an_unset_key_variable_is_named_before_anything_runs(tmp_path: Path) -> None:
    cli = fake_cli(tmp_path / "codex", 'echo "codex-cli 0.171.0"\n')
    settings = CodexSettings(command=str(cli), base_url="http://127.0.0.1:9/v1", api_key_env="MY_SERVER_KEY")
    run = await CodexHarness(settings, env={"PATH": "/usr/bin:/bin"}).run(Task(id="t", prompt="hi"), MANGO)
    assert run.error is not None and "MY_SERVER_KEY" in run.error and "export" in run.error


# --- the real CLI against the scripted server ---------------------------------------------------


def user_env(agent_tools: AgentTools, home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": agent_tools.path_env(), "HOME": str(home), **extra}


def stub_settings(server: AgentServer, **kw: object) -> CodexSettings:
    return CodexSettings.model_validate({"base_url": f"{server.url}/v1", "target_model": "stub-model", **kw})


@pytest.mark.slow
async def test_real_codex_plain_answer_on_the_chosen_model(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    harness = CodexHarness(
        stub_settings(agent_server, target_model="picked-model"), env=user_env(agent_tools, tmp_path / "home")
    )
    run = await harness.run(Task(id="t", prompt="say hello"), Skill(""))
    assert run.error is None, run.error
    assert run.response == "hello" and run.exit_status == 0
    assert run.usage.output_tokens > 0 and run.latency_s > 0
    assert [s.body["model"] for s in agent_server.seen] == ["picked-model"]
    assert harness.status().version == "0.171.0"


@pytest.mark.slow
async def test_real_codex_tool_call_round_trip(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    harness = CodexHarness(stub_settings(agent_server), env=user_env(agent_tools, tmp_path / "home"))
    run = await harness.run(Task(id="t", prompt="STUB_TOOL: echo from-tool"), Skill(""))
    assert run.error is None, run.error
    assert [(c.name, c.arguments, c.result) for c in run.tool_calls] == [
        ("exec_command", {"cmd": "echo from-tool"}, "from-tool\n")
    ]
    assert run.response == "hello | tool said: from-tool"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["skill", "agents_md"])
async def test_real_codex_the_skill_reaches_the_model_and_changes_the_answer(
    mode: str, agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    harness = CodexHarness(stub_settings(agent_server, skill_mode=mode), env=user_env(agent_tools, tmp_path / "home"))
    baseline = await harness.run(Task(id="t", prompt="what now"), Skill(""))
    assert baseline.response == "hello" and "SKILL_SAYS" not in agent_server.requests_text()
    run = await harness.run(Task(id="t", prompt="what now"), MANGO)
    assert run.error is None, run.error
    assert "Always answer with one word. SKILL_SAYS: mango" in agent_server.requests_text()
    assert run.response == "mango"


@pytest.mark.slow
async def test_real_codex_a_skill_codex_cannot_load_is_an_error(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    broken = Skill.parse('---\nname: answer\ndescription: "unterminated\n---\nSKILL_SAYS: mango\n')
    harness = CodexHarness(stub_settings(agent_server), env=user_env(agent_tools, tmp_path / "home"))
    run = await harness.run(Task(id="t", prompt="what now"), broken)
    assert run.error is not None and "could not load the candidate skill" in run.error and "YAML" in run.error


async def wait_for(condition: Callable[[], bool], what: str, limit_s: float = 20.0) -> None:
    """Poll `condition` until true (a bounded wait, not a timing assertion)."""
    for _ in range(int(limit_s / 0.1)):
        if condition():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"gave up waiting: {what}")


@pytest.mark.slow
async def test_real_codex_timeout_kills_the_process_group(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    marker = f"SKILLSLEEP_TEST_MARK=codex-{uuid.uuid4().hex}"
    name, value = marker.split("=")
    harness = CodexHarness(stub_settings(agent_server, env={name: value}), env=user_env(agent_tools, tmp_path / "home"))
    pending = asyncio.create_task(harness.run(Task(id="t", prompt="STUB_HANG"), Skill(""), timeout_s=4))
    await wait_for(lambda: bool(processes_with(marker)) or pending.done(), "the codex process to start")
    assert processes_with(marker), "codex was not running while the request hung"
    run = await pending
    assert run.error is not None and "did not finish within 4s" in run.error and "killed" in run.error
    assert run.exit_status is None
    await wait_for(lambda: not processes_with(marker), "the killed process group to be gone")


@pytest.mark.slow
async def test_real_codex_dead_server_is_an_error(agent_tools: AgentTools, tmp_path: Path) -> None:
    settings = CodexSettings(base_url=f"http://127.0.0.1:{free_port()}/v1", target_model="stub-model")
    run = await CodexHarness(settings, env=user_env(agent_tools, tmp_path / "home")).run(
        Task(id="t", prompt="hi"), MANGO, timeout_s=120
    )
    assert run.exit_status == 1
    assert run.error is not None and "model server did not answer" in run.error


class _Unauthorized(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def unauthorized_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
async def test_real_codex_auth_failure_says_how_to_log_in(
    agent_tools: AgentTools, unauthorized_url: str, tmp_path: Path
) -> None:
    settings = CodexSettings(base_url=unauthorized_url, target_model="stub-model", api_key_env="MY_KEY")
    env = user_env(agent_tools, tmp_path / "home", MY_KEY="wrong")
    run = await CodexHarness(settings, env=env).run(Task(id="t", prompt="hi"), MANGO)
    assert run.error is not None and "401" in run.error and "codex login" in run.error


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.slow
async def test_real_codex_leaves_the_users_codex_home_and_workdir_untouched(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    home = tmp_path / "user"
    codex_home = home / ".codex"
    # The user's own Codex setup: it points at the scripted server, so this run uses the agent's
    # configured model (no base_url, no target_model) — the default of the harness.
    notify = json.dumps(["/bin/sh", "-c", f"echo notified >> {home}/notified.txt"])  # run after each turn
    write(
        codex_home / "config.toml",
        f'notify = {notify}\nmodel = "stub-model"\nmodel_provider = "local"\n\n'
        '[model_providers.local]\nname = "local"\n'
        f'base_url = "{agent_server.url}/v1"\nwire_api = "responses"\nenv_key = "STUB_KEY"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n",
    )
    write(codex_home / "auth.json", '{"OPENAI_API_KEY": null}\n')
    sessions = codex_home / "sessions" / "2026" / "11" / "29"
    sessions.mkdir(parents=True)
    shutil.copy(
        Path(__file__).parent
        / "fixtures"
        / "codex"
        / "rollout-2026-11-29T09-00-00-22222222-2222-4222-8222-222222222222.jsonl",
        sessions,
    )
    write(codex_home / "history.jsonl", '{"session_id":"s","ts":1,"text":"old prompt"}\n')
    same_name = "---\nname: answer\ndescription: d\n---\nSKILL_SAYS: {}\n"
    write(codex_home / "skills" / "answer" / "SKILL.md", same_name.format("banana"))
    write(home / ".agents" / "skills" / "answer" / "SKILL.md", same_name.format("apple"))
    project = tmp_path / "project"
    write(project / "README.md", "the user's readme\n")
    write(project / "AGENTS.md", "Project rules.\n")
    write(project / ".agents" / "skills" / "live" / "SKILL.md", same_name.format("cherry"))
    before_home, before_project = snapshot(home), snapshot(project)

    harness = CodexHarness(CodexSettings(), env=user_env(agent_tools, home, STUB_KEY="dummy"))
    run = await harness.run(
        Task(id="t", prompt="STUB_TOOL: echo changed > README.md && cat README.md", workdir=str(project)), MANGO
    )

    assert run.error is None, run.error
    assert snapshot(home) == before_home
    assert snapshot(project) == before_project
    assert run.response == "mango | tool said: changed"  # the command ran, in the copy
    text = agent_server.requests_text()
    assert "SKILL_SAYS: mango" in text and "Project rules." in text
    for other in ("apple", "banana", "cherry"):  # same-name skills kept out, or `$answer` injects nothing
        assert f"SKILL_SAYS: {other}" not in text


@pytest.mark.slow
async def test_real_codex_runs_in_parallel_up_to_concurrency(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    # A wrapper around the real CLI: each run waits until two runs are active (a barrier, so the
    # test fails if runs were serialised), then records how many are active (never above 2).
    marks = tmp_path / "marks"
    marks.mkdir()
    real = agent_tools.bin / "codex"
    count = f"ls '{marks}' | grep -c '^active' >> '{marks}/counts'"
    wrapper = fake_cli(
        tmp_path / "codex",
        f"""[ "$1" = --version ] && exec '{real}' --version
touch '{marks}/active.'$$
i=0; while [ "$(ls '{marks}' | grep -c '^active')" -lt 2 ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done
{count}
'{real}' "$@"; rc=$?
{count}
rm -f '{marks}/active.'$$
exit $rc
""",
    )
    harness = CodexHarness(
        stub_settings(agent_server, command=str(wrapper), concurrency=2), env=user_env(agent_tools, tmp_path / "home")
    )
    runs = await asyncio.gather(
        *(harness.run(Task(id=f"t{i}", prompt=f"say hello {i}"), Skill(""), timeout_s=120) for i in range(4))
    )
    assert [r.error for r in runs] == [None] * 4
    counts = [int(n) for n in (marks / "counts").read_text().split()]
    assert len(counts) == 8 and max(counts) == 2
    assert len(agent_server.seen) == 4


# --- the real CLI against the real small local model ---------------------------------------------


@pytest.mark.slow
async def test_real_codex_with_the_local_model(agent_tools: AgentTools, llama_server: str, tmp_path: Path) -> None:
    probe = httpx.post(
        f"{llama_server}/v1/responses",
        timeout=120,
        json={"model": "local-test", "input": "Say hi.", "max_output_tokens": 4},
    )
    if probe.status_code == 404:
        pytest.skip("the local llama.cpp server does not serve /v1/responses, the only API Codex speaks")
    settings = CodexSettings(base_url=f"{llama_server}/v1", target_model="local-test", lean=True)
    run = await CodexHarness(settings, env=user_env(agent_tools, tmp_path / "home")).run(
        Task(id="t", prompt="Reply with one word: hello."), Skill(""), timeout_s=500
    )
    assert run.error is None, run.error
    assert run.response.strip()


@pytest.mark.parametrize(
    ("prompt", "sent"),
    [
        ("what now", "$answer what now"),
        ("$answer what now", "$answer what now"),  # recorded with the mention: asked as recorded
        ("  $answer", "  $answer"),
        ("$answer-two what now", "$answer $answer-two what now"),  # another skill's mention
        ("$answers what now", "$answer $answers what now"),
        ("what now, $answer", "$answer what now, $answer"),
    ],
)
async def test_a_task_recorded_with_the_skills_mention_is_asked_without_a_second_one(
    prompt: str, sent: str, tmp_path: Path
) -> None:
    cli = fake_cli(
        tmp_path / "codex",
        '[ "$1" = --version ] && { echo "codex-cli 0.171.0"; exit 0; }\n'
        'for a; do last=$a; done\nprintf %s "$last" > "$PROMPT_LOG"\n',
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "PROMPT_LOG": str(tmp_path / "prompt")}
    await CodexHarness(CodexSettings(command=str(cli)), env=env).run(Task(id="t", prompt=prompt), MANGO)
    assert (tmp_path / "prompt").read_text() == sent
    await CodexHarness(CodexSettings(command=str(cli)), env=env).run(Task(id="t", prompt=prompt), Skill(""))
    assert (tmp_path / "prompt").read_text() == prompt  # no skill: no mention
