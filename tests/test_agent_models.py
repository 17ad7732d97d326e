"""The agents as model providers (`claude-code`, `codex`), without running an agent: the command
lines, the parsing of outputs recorded from the pinned CLIs (tests/fixtures/<agent>/model/,
written by scripts/record_model_fixtures.py), how failures are classified, registration, the
concurrency default and a reported cost in the ledger. tests/test_agent_models_real.py runs them."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillsleep.core.models.backends import registry as backends
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.model_set import ModelSection, section_settings
from skillsleep.core.shared.errors import BackendError, BackendUnavailable, TransientError
from skillsleep.core.shared.records import Completion, CompletionRequest, Message
from skillsleep.harnesses.agent_cli import CLIResult
from skillsleep.harnesses.agent_model import AgentModelBackend, prompt_text
from skillsleep.harnesses.claude_code.model import ClaudeCodeModel
from skillsleep.harnesses.claude_code.model import build_argv as claude_argv
from skillsleep.harnesses.codex.model import CodexModel, strict_schema
from skillsleep.harnesses.codex.model import build_argv as codex_argv
from skillsleep.harnesses.providers import provider_names, register_providers

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def recorded(agent: str, case: str) -> CLIResult:
    folder = FIXTURES / agent / "model"
    name = f"{case}.json" if agent == "claude" else f"{case}.jsonl"
    code = json.loads((folder / "manifest.json").read_text())[case]
    return CLIResult(stdout=(folder / name).read_text(), stderr="", returncode=code, timed_out=False, duration_s=1)


def backend(cls: type[AgentModelBackend], base_url: str | None = "http://127.0.0.1:43210") -> AgentModelBackend:
    return cls(BackendSettings(model="stub-model", base_url=base_url))


# --- command lines -------------------------------------------------------------------------------


def test_claude_command_line_isolates_the_call() -> None:
    argv = claude_argv("claude", "sonnet", SCHEMA, Path("/t/system.md"))
    assert argv[:4] == ["claude", "-p", "--output-format", "json"]
    for flag in ("--no-session-persistence", "--strict-mcp-config", "--disable-slash-commands"):
        assert flag in argv
    assert argv[argv.index("--tools") + 1] == "" and argv[argv.index("--setting-sources") + 1] == ""
    assert argv[argv.index("--model") + 1] == "sonnet"
    assert argv[argv.index("--system-prompt-file") + 1] == "/t/system.md"
    assert json.loads(argv[argv.index("--json-schema") + 1]) == SCHEMA
    assert "--bare" not in argv  # it would read only ANTHROPIC_API_KEY, never a subscription's login
    assert "--model" not in claude_argv("claude", None, None, None)


def test_codex_command_line_isolates_the_call() -> None:
    provider = {"name": "skillsleep", "base_url": "http://x/v1"}
    argv = codex_argv("codex", "gpt-x", Path("/t/i.md"), Path("/t/s.json"), provider)
    assert argv[:7] == ["codex", "exec", "--json", "--skip-git-repo-check", "--ephemeral", "-s", "read-only"]
    options = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    assert 'model_instructions_file="/t/i.md"' in options and "project_doc_max_bytes=0" in options
    assert 'approval_policy="never"' in options and 'model_provider="skillsleep"' in options
    assert argv[argv.index("--output-schema") + 1] == "/t/s.json" and argv[argv.index("-m") + 1] == "gpt-x"
    assert "shell_tool" in [argv[i + 1] for i, a in enumerate(argv) if a == "--disable"]
    assert argv[-1] == "-" and "--strict-config" in argv  # the prompt comes on stdin; every -c key known
    assert "-m" not in codex_argv("codex", None, Path("/t/i.md"), None, None)


@pytest.mark.parametrize("cls", [ClaudeCodeModel, CodexModel])
def test_prepare_sends_the_system_prompt_and_prompt_and_no_user_state(
    cls: type[AgentModelBackend], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text("{}")
    (home / ".codex").mkdir()
    (home / ".codex" / "auth.json").write_text("{}")
    (home / ".codex" / "AGENTS.md").write_text("USER_AGENTS")
    request = CompletionRequest(
        model="m",
        messages=[Message(role="system", content="SYS"), Message(role="user", content="Q")],
        max_tokens=99,
    )
    state = tmp_path / "state"
    state.mkdir()
    call = backend(cls, base_url=None).prepare("agent", request, {"HOME": str(home), "PATH": "/bin"}, state)
    assert call.stdin == b"Q"
    if cls is ClaudeCodeModel:
        assert (state / "system.md").read_text() == "SYS"
        assert call.env["CLAUDE_CONFIG_DIR"] == str(state / "config") and call.env["CLAUDE_CODE_MAX_RETRIES"] == "0"
        assert call.env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "99"
        assert (state / "config" / ".credentials.json").is_symlink()  # the login goes along
    else:
        assert (state / "instructions.md").read_text() == "SYS"
        assert sorted(p.name for p in (state / "home").iterdir()) == ["auth.json"]  # no AGENTS.md, no config
        assert call.env["CODEX_HOME"] == str(state / "home")


def test_a_conversation_becomes_one_prompt() -> None:
    assert prompt_text([Message(role="user", content="hi")]) == "hi"
    turns = [
        Message(role="user", content="a"),
        Message(role="assistant", content="b"),
        Message(role="user", content="c"),
    ]
    assert prompt_text(turns) == "User: a\n\nAssistant: b\n\nUser: c"


# --- recorded outputs ----------------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "agent"), [(ClaudeCodeModel, "claude"), (CodexModel, "codex")])
def test_recorded_typed_reply_with_usage(cls: type[AgentModelBackend], agent: str) -> None:
    completion = backend(cls).finish(recorded(agent, "structured"), 60)
    assert json.loads(completion.text) == {"answer": "ok"}
    assert completion.usage.input_tokens == 120 and completion.usage.output_tokens == 6
    assert completion.finish_reason == "stop"
    assert completion.cost_usd == (pytest.approx(0.0006) if agent == "claude" else None)


@pytest.mark.parametrize(("cls", "agent"), [(ClaudeCodeModel, "claude"), (CodexModel, "codex")])
@pytest.mark.parametrize("case", ["not-json", "wrong-shape"])
def test_recorded_reply_that_misses_the_schema_comes_back_as_text(
    cls: type[AgentModelBackend], agent: str, case: str
) -> None:
    """Not a failure of the call: the caller's strict parse refuses it (LLM.ask_model → ParseError)."""
    completion = backend(cls).finish(recorded(agent, case), 60)
    assert completion.text and completion.text != '{"answer": "ok"}'


@pytest.mark.parametrize(("cls", "agent"), [(ClaudeCodeModel, "claude"), (CodexModel, "codex")])
@pytest.mark.parametrize(
    ("case", "error", "words"),
    [
        ("rate-limit", TransientError, "rate-limited"),
        ("server-error", TransientError, "failed to answer"),
        ("dead-server", TransientError, "could not reach the model server"),
        ("unauthorized", BackendError, "could not authenticate"),
    ],
)
def test_recorded_failures_are_classified(
    cls: type[AgentModelBackend], agent: str, case: str, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words) as caught:
        backend(cls).finish(recorded(agent, case), 60)
    if error is BackendError:
        assert not isinstance(caught.value, TransientError)


@pytest.mark.parametrize(("cls", "agent"), [(ClaudeCodeModel, "claude"), (CodexModel, "codex")])
def test_a_refused_login_says_how_to_log_in(cls: type[AgentModelBackend], agent: str) -> None:
    with pytest.raises(BackendUnavailable, match="log ?in"):
        backend(cls, base_url=None).finish(recorded(agent, "unauthorized"), 60)


@pytest.mark.parametrize("cls", [ClaudeCodeModel, CodexModel])
def test_killed_garbled_and_crashed_runs(cls: type[AgentModelBackend]) -> None:
    b = backend(cls)
    with pytest.raises(TransientError, match="timed out"):
        b.finish(CLIResult(stdout="", stderr="", returncode=None, timed_out=True, duration_s=9), 9)
    with pytest.raises(BackendError, match="without"):
        b.finish(CLIResult(stdout="garbage\n{", stderr="boom", returncode=0, timed_out=False, duration_s=1), 9)
    with pytest.raises(BackendError, match="boom"):
        b.finish(CLIResult(stdout="", stderr="boom", returncode=3, timed_out=False, duration_s=1), 9)


@pytest.mark.parametrize("cls", [ClaudeCodeModel, CodexModel])
def test_a_missing_cli_names_the_install(cls: type[AgentModelBackend], tmp_path: Path) -> None:
    settings = BackendSettings(model="default", options={"command": str(tmp_path / "nowhere" / "agent")})
    usable, reason = cls.check(settings)
    assert not usable and "npm install -g" in reason
    request = CompletionRequest(model="default", messages=[Message(role="user", content="hi")])
    with pytest.raises(BackendUnavailable, match="npm install -g"):
        asyncio.run(cls(settings)._send(request))


# --- registration, defaults, spend ---------------------------------------------------------------


def test_the_agents_register_as_providers_by_name() -> None:
    register_providers()
    register_providers()  # again: no error
    assert provider_names() == ("claude-code", "codex")
    assert backends.get_provider("claude-code").cls is ClaudeCodeModel
    assert backends.get_provider("codex").cls is CodexModel
    assert backends.parse_spec("codex") == ("codex", "default") and backends.parse_spec("claude-code:opus")[1] == "opus"
    assert backends.create_backend("claude-code").model == "default"  # type: ignore[attr-defined]
    assert section_settings(ModelSection(backend="codex:gpt-x")).concurrency == 2
    assert section_settings(ModelSection(backend="codex:gpt-x", concurrency=5)).concurrency == 5


def test_help_choices_list_the_agents_without_loading_a_backend() -> None:
    code = (
        "import sys; from skillsleep.slash_commands.choices import providers; print(providers()); "
        "print([m for m in sys.modules if m.endswith('.model') or 'backends.' in m and 'builtin' not in m])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    names, loaded = out.splitlines()
    assert "'claude-code'" in names and "'codex'" in names
    assert "agent_model" not in loaded and "claude_code.model" not in loaded and "codex.model" not in loaded


class _Reporting:
    name, model, endpoint, concurrency = "claude-code", "sonnet", "", 1

    async def complete(self, request: CompletionRequest, *, timeout_s: float | None = None) -> Completion:
        return Completion(text="x", cost_usd=0.25)

    async def aclose(self) -> None:
        return None


def test_the_ledger_counts_a_reported_cost_before_the_price_table() -> None:
    register_providers()
    ledger = Ledger(prices=backends.default_prices())
    llm = LLM(_Reporting(), ledger=ledger)  # type: ignore[arg-type]
    asyncio.run(llm.ask("judge", [Message(role="user", content="q")]))
    assert ledger.entries[0].cost_usd == 0.25 and not ledger.entries[0].unpriced
    assert ledger.by_role()["judge"]["cost_usd"] == 0.25


def test_login_is_found_where_each_agent_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("platform.system", lambda: "Linux")
    env = {"HOME": str(tmp_path)}
    assert "run `claude` once" in (ClaudeCodeModel.login_problem(env) or "")
    assert "codex login" in (CodexModel.login_problem(env) or "")
    assert ClaudeCodeModel.login_problem({**env, "ANTHROPIC_API_KEY": "k"}) is None
    assert ClaudeCodeModel.login_problem({**env, "CLAUDE_CODE_USE_BEDROCK": "1"}) is None
    assert CodexModel.login_problem({**env, "OPENAI_API_KEY": "k"}) is None
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "auth.json").write_text("{}")
    assert ClaudeCodeModel.login_problem(env) is None and CodexModel.login_problem(env) is None


def test_codex_schema_is_made_strict() -> None:
    schema = {
        "type": "object",
        "properties": {
            "edits": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "note": {"type": ["string", "null"]},
        },
        "required": ["edits"],
    }
    strict = strict_schema(schema)
    assert strict["required"] == ["edits", "note"] and strict["additionalProperties"] is False
    item = strict["properties"]["edits"]["items"]
    assert item["required"] == ["a"] and item["additionalProperties"] is False
    assert schema["required"] == ["edits"]  # the request's own schema (its cache key) is untouched


def test_codex_reconnect_notices_before_a_completed_turn_are_not_failures() -> None:
    lines = recorded("codex", "structured").stdout.splitlines()
    notice = json.dumps({"type": "error", "message": "Reconnecting... 1/5 (stream disconnected before completion)"})
    stdout = "\n".join([*lines[:2], notice, *lines[2:]])
    result = CLIResult(stdout=stdout, stderr="", returncode=0, timed_out=False, duration_s=1)
    assert json.loads(backend(CodexModel).finish(result, 60).text) == {"answer": "ok"}
    cut = CLIResult(stdout="\n".join([*lines[:2], notice]), stderr="", returncode=1, timed_out=False, duration_s=1)
    with pytest.raises(TransientError, match="Reconnecting"):  # no turn ended: the notice is all there is
        backend(CodexModel).finish(cut, 60)
