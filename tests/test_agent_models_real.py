"""The pinned real `claude` and `codex` as skillsleep's model providers, against the scripted model
server (tests/agent_server.py) on 127.0.0.1: what reaches the model (skillsleep's system prompt
and schema, nothing of the user's), the typed reply, the ledger, the budget, retries, a malformed
reply, the concurrency cap and the response cache. Slow: each call starts an agent (~1 s)."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agent_server import AgentServer
from replay_checks import survivors

from skillsleep.core.models.backends.base import BackendSettings, RetryPolicy
from skillsleep.core.models.ledger import Budget, Ledger
from skillsleep.core.models.llm import LLM, estimate_usage
from skillsleep.core.models.replies import Reply
from skillsleep.core.models.store import Store
from skillsleep.core.shared.errors import BackendUnavailable, BudgetExceeded, ParseError, RetriesExhausted
from skillsleep.core.shared.records import CompletionRequest, Message
from skillsleep.harnesses import agent_cli, agent_model
from skillsleep.harnesses.agent_model import AgentModelBackend
from skillsleep.harnesses.claude_code.model import ClaudeCodeModel
from skillsleep.harnesses.codex.model import CodexModel, strict_schema

if TYPE_CHECKING:
    from conftest import AgentTools

pytestmark = pytest.mark.slow
AGENTS = [ClaudeCodeModel, CodexModel]
SYSTEM = "SKILLSLEEP_SYSTEM_PROMPT: you grade answers."
SENTINELS = (
    "USER_CLAUDE_MD",
    "PROJECT_CLAUDE_MD",
    "HOOK_SAID",
    "USER_SETTING",
    "USER_AGENTS_MD",
    "CODEX_CONFIG",
    "PROJECT_AGENTS_MD",
)


class Verdict(Reply):
    answer: str


def _user_home(home: Path) -> None:
    """A user's agent state full of sentinels that must never reach the model."""
    claude = home / ".claude"
    claude.mkdir(parents=True)
    (claude / "CLAUDE.md").write_text("USER_CLAUDE_MD\n")
    hook = {"hooks": [{"type": "command", "command": "echo HOOK_SAID"}]}
    settings = {"model": "USER_SETTING-model", "hooks": {"UserPromptSubmit": [hook], "SessionStart": [hook]}}
    (claude / "settings.json").write_text(json.dumps(settings))
    codex = home / ".codex"
    codex.mkdir()
    (codex / "AGENTS.md").write_text("USER_AGENTS_MD\n")
    (codex / "config.toml").write_text('developer_instructions = "CODEX_CONFIG"\n')


def _project_around_the_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git project with instructions, a hook and settings that holds the run's temporary folder,
    so the agent would find them walking up from its working folder."""
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_text("PROJECT_CLAUDE_MD\n")
    (project / "AGENTS.md").write_text("PROJECT_AGENTS_MD\n")
    (project / ".claude").mkdir()
    hook = {"hooks": [{"type": "command", "command": "echo HOOK_SAID"}]}
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [hook]}}))
    (project / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(project / "tmp"))


def _backend(
    cls: type[AgentModelBackend], server: AgentServer, tools: AgentTools, home: Path, **fields: Any
) -> AgentModelBackend:
    url = server.url + ("/v1" if cls is CodexModel else "")
    retry = fields.pop("retry", RetryPolicy(attempts=2, base_delay_s=0, timeout_s=120))
    backend = cls(BackendSettings(model="stub-model", base_url=url, retry=retry, **fields))
    backend.env = {"PATH": tools.path_env(), "HOME": str(home)}
    return backend


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command line of every agent process the providers start."""
    argvs: list[list[str]] = []

    async def counted(argv: list[str], **kw: Any) -> agent_cli.CLIResult:
        argvs.append(list(argv))
        return await agent_cli.run_cli(argv, **kw)

    monkeypatch.setattr(agent_model, "run_cli", counted)
    return argvs


@pytest.fixture
def home(tmp_path: Path) -> Path:
    agent_cli._STATUS_CACHE.clear()
    home = tmp_path / "home"
    _user_home(home)
    return home


def _messages(text: str = "grade it") -> list[Message]:
    return [Message(role="system", content=SYSTEM), Message(role="user", content=text)]


def _schema_sent(cls: type[AgentModelBackend], body: dict[str, Any]) -> Any:
    if cls is ClaudeCodeModel:
        return next(t["input_schema"] for t in body["tools"] if t["name"] == "StructuredOutput")
    return body["text"]["format"]["schema"]


@pytest.mark.parametrize("cls", AGENTS)
def test_real_agent_answers_a_typed_request_with_nothing_of_the_users(
    cls: type[AgentModelBackend], agent_tools: AgentTools, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project_around_the_run(tmp_path / "project", monkeypatch)
    with AgentServer(reply='{"answer": "ok"}') as server:
        llm = LLM(_backend(cls, server, agent_tools, home), ledger=Ledger())
        verdict = asyncio.run(llm.ask_model("judge", _messages(), Verdict))
        assert verdict.answer == "ok"
        body = server.seen[0].body
        schema = Verdict.json_schema()
        assert _schema_sent(cls, body) == (schema if cls is ClaudeCodeModel else strict_schema(schema))
        sent = server.requests_text()
        assert SYSTEM in sent and "grade it" in sent
        assert [s for s in SENTINELS if s in json.dumps([s.body for s in server.seen])] == []
        if cls is CodexModel:  # Codex's own instructions replaced: our prompt and the user's, nothing else
            assert [i["role"] for i in body["input"]] == ["developer", "user"]
    row = llm.ledger.by_role()["judge"]
    assert row["calls"] == 1 and row["input_tokens"] >= 120 and row["output_tokens"] >= 6 and row["errors"] == 0


@pytest.mark.parametrize("cls", AGENTS)
def test_real_agent_token_budget_stops_before_the_call(
    cls: type[AgentModelBackend], agent_tools: AgentTools, home: Path, started: list[list[str]]
) -> None:
    with AgentServer(reply='{"answer": "ok"}') as server:
        backend = _backend(cls, server, agent_tools, home)
        first = LLM(backend, ledger=Ledger()).request(_messages("first"), json_schema=Verdict.json_schema())
        cap = estimate_usage(first).total + 60  # the first call fits; what it spends leaves too little
        llm = LLM(backend, ledger=Ledger(budget=Budget(tokens=cap)))
        assert asyncio.run(llm.ask_model("reflect", _messages("first"), Verdict)).answer == "ok"
        count = len(server.seen)
        with pytest.raises(BudgetExceeded, match="token budget"):
            asyncio.run(llm.ask_model("reflect", _messages("second"), Verdict))
        assert len(server.seen) == count and len(started) == 1  # refused before any agent started
    assert llm.ledger.calls_made == 1 and llm.ledger.spent_tokens <= cap


@pytest.mark.parametrize("cls", AGENTS)
@pytest.mark.parametrize(("status", "words"), [(429, "rate-limited"), (500, "failed to answer")])
def test_real_agent_retries_then_names_the_failure(
    cls: type[AgentModelBackend], status: int, words: str, agent_tools: AgentTools, home: Path
) -> None:
    with AgentServer(reply='{"answer": "ok"}') as server:
        server.failures = [status]
        llm = LLM(_backend(cls, server, agent_tools, home), ledger=Ledger())
        assert asyncio.run(llm.ask_model("merge", _messages(), Verdict)).answer == "ok"  # retried once
        server.failures = [status] * 2
        with pytest.raises(RetriesExhausted, match=words):
            asyncio.run(llm.ask_model("merge", _messages("again"), Verdict))
    assert [e.error is not None for e in llm.ledger.entries] == [False, True]


@pytest.mark.parametrize("cls", AGENTS)
def test_real_agent_malformed_reply_is_a_parse_failure(
    cls: type[AgentModelBackend], agent_tools: AgentTools, home: Path
) -> None:
    with AgentServer(reply="not json at all") as server:
        llm = LLM(_backend(cls, server, agent_tools, home), ledger=Ledger())
        with pytest.raises(ParseError, match="not valid JSON"):
            asyncio.run(llm.ask_model("rank", _messages(), Verdict))
    assert llm.ledger.by_role()["rank"]["calls"] == 1  # counted, and nothing came back to apply


@pytest.mark.parametrize("cls", AGENTS)
def test_real_agent_processes_never_exceed_the_concurrency(
    cls: type[AgentModelBackend], agent_tools: AgentTools, home: Path
) -> None:
    with AgentServer(reply='{"answer": "ok"}') as server:
        server.delay_s = 3.0  # longer than an agent's start-up, so two runs always overlap
        llm = LLM(_backend(cls, server, agent_tools, home, concurrency=2), ledger=Ledger())

        async def many() -> list[Verdict]:
            return await asyncio.gather(*(llm.ask_model("dream", _messages(f"q{i}"), Verdict) for i in range(4)))

        assert [v.answer for v in asyncio.run(many())] == ["ok"] * 4
        assert server.peak == 2


@pytest.mark.parametrize("cls", AGENTS)
def test_real_agent_repeat_is_a_cache_hit_and_twins_share_one_run(
    cls: type[AgentModelBackend], agent_tools: AgentTools, home: Path, tmp_path: Path, started: list[list[str]]
) -> None:
    with AgentServer(reply='{"answer": "ok"}') as server:
        llm = LLM(_backend(cls, server, agent_tools, home), ledger=Ledger(), store=Store(tmp_path / "s.db"))

        async def twins() -> list[Verdict]:
            return await asyncio.gather(*(llm.ask_model("meta", _messages(), Verdict) for _ in range(2)))

        assert [v.answer for v in asyncio.run(twins())] == ["ok", "ok"]
        count = len(server.seen)
        assert asyncio.run(llm.ask_model("meta", _messages(), Verdict)).answer == "ok"
        assert len(server.seen) == count  # no agent started
    assert llm.ledger.calls_made == 1 and llm.ledger.cache_hits == 2 and len(started) == 1


@pytest.mark.parametrize("cls", AGENTS)
def test_real_agent_not_logged_in_says_how_before_any_run(
    cls: type[AgentModelBackend], agent_tools: AgentTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_cli._STATUS_CACHE.clear()
    env = {"PATH": agent_tools.path_env(), "HOME": str(tmp_path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    usable, reason = cls.check(BackendSettings(model="default"))
    assert not usable and cls.cli.tested_version in reason and "not logged in" in reason
    backend = cls(BackendSettings(model="default", retry=RetryPolicy(attempts=3, base_delay_s=0)))
    backend.env = env
    with pytest.raises(BackendUnavailable, match="codex login" if cls is CodexModel else "/login"):
        asyncio.run(LLM(backend, ledger=Ledger()).ask("judge", _messages()))


def test_real_claude_refused_login_says_how_to_log_in(agent_tools: AgentTools, tmp_path: Path) -> None:
    """A login Claude Code itself refuses (here: a credentials file with nothing in it)."""
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    backend = ClaudeCodeModel(BackendSettings(model="default", retry=RetryPolicy(attempts=3, base_delay_s=0)))
    backend.env = {"PATH": agent_tools.path_env(), "HOME": str(tmp_path)}
    assert ClaudeCodeModel.login_problem(backend.env) is None  # the file is there
    with pytest.raises(BackendUnavailable, match=r"not logged in \(Not logged in.*log in with /login"):
        asyncio.run(backend.complete(CompletionRequest(model="default", messages=_messages())))


@pytest.mark.parametrize("cls", AGENTS)
def test_real_agent_timeout_kills_the_process_group(
    cls: type[AgentModelBackend], agent_tools: AgentTools, home: Path
) -> None:
    marker = f"SKILLSLEEP_TEST_MODEL={uuid.uuid4().hex}"
    with AgentServer() as server:
        # the limit leaves the CLI time to start and reach the model first: 3 × a warm call here, at
        # least 4 s (on a loaded machine the CLI's start alone passed 4 s, timing out before its request)
        warm = _backend(cls, server, agent_tools, home, retry=RetryPolicy(attempts=1, timeout_s=120))
        started = time.monotonic()
        asyncio.run(LLM(warm, ledger=Ledger()).ask("judge", _messages()))
        limit, before = max(4, round(3 * (time.monotonic() - started))), len(server.seen)
        backend = _backend(cls, server, agent_tools, home, retry=RetryPolicy(attempts=1, timeout_s=limit))
        backend.env = {**(backend.env or {}), marker.split("=")[0]: marker.split("=")[1]}
        with pytest.raises(RetriesExhausted, match=f"within {limit} s"):
            asyncio.run(LLM(backend, ledger=Ledger()).ask("judge", _messages("STUB_HANG")))
        assert len(server.seen) > before  # it was waiting on the model
    left = survivors(marker)
    assert left == [], f"agent processes survived the timeout: {left}"


def test_real_claude_subscription_login_goes_through_the_isolation(agent_tools: AgentTools, home: Path) -> None:
    """A subscription's OAuth login (a credentials file, no key) is what the call authenticates
    with, though no setting of the user's is read: the token reaches the model server."""
    token = "sk-ant-oat01-skillsleep-test"
    oauth = {
        "accessToken": token,
        "refreshToken": "sk-ant-ort01-skillsleep-test",
        "expiresAt": int(time.time() * 1000) + 3_600_000,
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max",
    }
    (home / ".claude" / ".credentials.json").write_text(json.dumps({"claudeAiOauth": oauth}))
    with AgentServer(reply='{"answer": "ok"}') as server:
        backend = ClaudeCodeModel(BackendSettings(model="stub-model", retry=RetryPolicy(attempts=1)))
        backend.env = {"PATH": agent_tools.path_env(), "HOME": str(home), "ANTHROPIC_BASE_URL": server.url}
        verdict = asyncio.run(LLM(backend, ledger=Ledger()).ask_model("judge", _messages(), Verdict))
        assert verdict.answer == "ok"
        headers = server.seen[0].headers
        assert headers.get("authorization") == f"Bearer {token}" and "x-api-key" not in headers
        assert [s for s in SENTINELS if s in json.dumps([s.body for s in server.seen])] == []
