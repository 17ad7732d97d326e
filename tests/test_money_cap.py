"""The money cap and the keys, checked before any work: a cap over a model without a price is
refused (exit 2) wherever a cap is set, a missing API key fails at once (exit 2), every built-in
default model is priced, and what a call is reserved and charged covers what the provider bills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from billing_server import BillingServer
from servers import USAGE_IN, USAGE_OUT, Action, FaultServer
from sleep_kit import invoke, run_args, scripted_night
from test_cli import project  # noqa: F401  (a fixture: the scripted train project)
from test_cron_script import night_root, run_script

from skillsleep.core.models.backends.anthropic import AnthropicBackend
from skillsleep.core.models.backends.base import BackendSettings, RetryPolicy
from skillsleep.core.models.backends.deepseek import schema_instruction
from skillsleep.core.models.backends.registry import default_prices, provider_infos
from skillsleep.core.models.ledger import Budget, Ledger, find_price, price_of
from skillsleep.core.models.llm import MESSAGE_TOKENS, SCHEMA_TOKENS, estimate_usage
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.shared.records import CompletionRequest, Message, Usage
from skillsleep.harnesses.providers import register_providers

UNPRICED = ["--backend", "openai:my-model", "--base-url", "http://127.0.0.1:9/v1"]


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    scripted_night(monkeypatch, tmp_path)
    for name in ("DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def nothing_done(root: Path) -> bool:
    """No harvest (it makes state.db) and no night was recorded."""
    data = root / "data"
    return not (data / "state.db").exists() and not (data / "nights").exists()


# --- a money cap needs prices ---------------------------------------------------------------------


def test_every_built_in_default_model_has_a_price_but_ollamas() -> None:
    # ollama's default runs wherever OLLAMA_HOST points: its price is the user's to give; codex's
    # models have no known price (a token cap needs none)
    register_providers()
    for info in provider_infos():
        if info.default_model and info.name not in ("ollama", "codex"):
            assert find_price(default_prices(), info.name, info.default_model) is not None, info.name
    assert find_price(default_prices(), "ollama", "qwen2.5-coder:0.5b") is None
    assert find_price(default_prices(), "codex", "default") is None
    free = Usage(input_tokens=1000, output_tokens=1000)
    assert price_of(default_prices(), "local", "/models/any.gguf", free) == 0  # free by definition
    assert price_of(default_prices(), "scripted", "script.json", free) == 0
    assert find_price(default_prices(), "scripted", "script.json") is not None


def test_a_ledger_with_a_money_cap_refuses_a_call_to_a_model_without_a_price() -> None:
    ledger = Ledger(budget=Budget(usd=0.01), prices=dict(default_prices()))
    with pytest.raises(ConfigError, match=r'"openai:my-model" = \{input = 0.0, output = 0.0\}'):
        ledger.reserve("openai", "my-model", Usage(input_tokens=10, output_tokens=10))
    assert Ledger(budget=Budget(tokens=100)).reserve("openai", "my-model", Usage(input_tokens=10)) is not None


@pytest.mark.parametrize("how", ["flag", "env", "file"])
def test_run_with_a_money_cap_over_an_unpriced_model_is_refused_before_the_harvest(
    root: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    (root / "data").mkdir()
    cap = ["--budget-usd", "0.01"] if how == "flag" else []
    if how == "env":
        monkeypatch.setenv("SKILLSLEEP_BUDGET_USD", "0.01")
    if how == "file":
        (root / "data" / "config.toml").write_text("[sleep]\nbudget_usd = 0.01\n")
    code, _, err = invoke("run", *UNPRICED, "--since", "3650d", *cap)
    assert code == 2, err
    assert "openai:my-model" in err and "[prices]" in err and "--budget-tokens" in err
    assert f"under [prices] in {root / 'data' / 'config.toml'}" in err  # the file to give it in
    assert nothing_done(root)


def test_run_with_ollamas_default_model_under_a_money_cap_names_it_and_both_ways_out(root: Path) -> None:
    code, _, err = invoke("run", "--backend", "ollama", "--budget-usd", "0.5", "--since", "3650d")
    assert code == 2 and '"ollama:qwen2.5-coder:0.5b" = {input = 0.0, output = 0.0}' in err
    assert "0 is a price" in err and "--budget-tokens" in err and nothing_done(root)
    code, _, err = invoke("schedule", "--at", "03:00", "--print", "--backend", "ollama", "--budget-tokens", "1000")
    assert code == 0 and "[prices]" not in err  # a token cap needs no prices


def test_schedule_refuses_a_money_cap_over_an_unpriced_model(root: Path) -> None:
    code, _, err = invoke("schedule", "--at", "03:00", "--print", "--backend", "ollama", "--budget-usd", "0.5")
    assert code == 2 and "ollama:qwen2.5-coder:0.5b" in err and "[prices]" in err


def test_a_price_in_config_toml_counts_every_call_of_the_night_under_its_money_cap(
    root: Path, fault_server: FaultServer
) -> None:
    (root / "data").mkdir()
    (root / "data" / "config.toml").write_text('[prices]\n"openai:my-model" = {input = 3.0, output = 6.0}\n')
    fault_server.default = Action(text=json.dumps({"groups": [], "checks": [], "relevant": [], "variants": []}))
    cap = 0.05
    code, out, err = invoke(
        "run", "--backend", "openai:my-model", "--base-url", f"{fault_server.url}/v1", "--since", "3650d",
        "--budget-usd", str(cap), "--json",
    )  # fmt: skip
    assert code == 0, err
    s = json.loads(out)
    per_call = (USAGE_IN * 3.0 + USAGE_OUT * 6.0) / 1e6  # the server's usage at config.toml's price
    assert s["calls_made"] > 0 and s["cost_usd"] == pytest.approx(s["calls_made"] * per_call) and s["cost_usd"] <= cap


def test_a_price_key_without_its_provider_is_refused_naming_the_form(root: Path) -> None:
    (root / "data").mkdir()
    (root / "data" / "config.toml").write_text('[prices]\n"my-model" = {input = 1.0, output = 1.0}\n')
    code, _, err = invoke(*run_args(root))
    assert code == 2 and "'my-model'" in err and "provider:model" in err


def test_train_with_a_money_cap_over_an_unpriced_model_is_refused_before_the_run_folder(
    project: Path,
) -> None:
    config = project / "run.toml"
    config.write_text(config.read_text() + '[judge]\nbackend = "openai:judge-x"\nbase_url = "http://127.0.0.1:9/v1"\n')
    code, _, err = invoke("train", "--config", str(config), "--budget-usd", "0.01")
    assert code == 2 and "openai:judge-x" in err and f"{project / 'home' / 'config.toml'} or the run config" in err
    assert not (project / "runs").exists()
    (project / "home").mkdir(exist_ok=True)
    (project / "home" / "config.toml").write_text('[prices]\n"openai:judge-x" = {input = 0.0, output = 0.0}\n')
    code, _, err = invoke("train", "--config", str(config), "--budget-usd", "0.01", "train.epochs=1")
    assert "[prices]" not in err and (project / "runs").exists()  # priced in config.toml: it trains


# --- keys before any work -------------------------------------------------------------------------


@pytest.mark.parametrize("detach", [False, True])
def test_run_without_the_backends_key_fails_at_once_with_exit_2_naming_it(root: Path, detach: bool) -> None:
    code, _, err = invoke("run", "--backend", "deepseek", "--since", "3650d", *(["--detach"] if detach else []))
    assert code == 2, err
    assert "DEEPSEEK_API_KEY" in err and nothing_done(root)
    assert not (root / "data" / "logs").exists()


def test_train_without_the_backends_key_fails_with_exit_2_before_the_run_folder(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (project / "runs" / "cli").mkdir(parents=True)
    kept = project / "runs" / "cli" / "ledger.jsonl"
    kept.write_text("")
    code, _, err = invoke(
        "train",
        "--config",
        str(project / "run.toml"),
        "--fresh",
        "optimizer.backend=anthropic",
        "judge.backend=anthropic",
    )
    assert code == 2 and "ANTHROPIC_API_KEY" in err
    assert kept.exists()  # --fresh removed nothing


def test_the_cron_night_says_the_bad_setting_in_its_one_line_and_exits_2(tmp_path: Path) -> None:
    root = night_root(tmp_path)
    for flags, words in (
        (["--backend", "deepseek"], "no API key for deepseek: set DEEPSEEK_API_KEY"),
        (["--backend", "ollama", "--budget-usd", "0.5"], "or cap tokens instead with --budget-tokens"),
    ):
        done = run_script(root, *flags, "--chat-dir", str(root / "chats"))
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert not (root / "data" / "nights").exists() and not (root / "data" / "state.db").exists()


# --- what a call reserves and is charged ----------------------------------------------------------


def test_the_estimate_bounds_every_byte_sent_the_json_schema_and_its_instruction_included() -> None:
    schema = {"type": "object", "properties": {"réponse": {"type": "string", "description": "x" * 400}}}
    text = "中文 and emoji 🙂 " * 50
    request = CompletionRequest(
        model="m", messages=[Message(role="user", content=text)], max_tokens=7, json_schema=schema
    )
    sent = len(text.encode()) + len(schema_instruction(schema).encode()) + 2 + MESSAGE_TOKENS  # deepseek adds a system
    estimate = estimate_usage(request)
    assert estimate.input_tokens >= sent and estimate.output_tokens == 7
    assert len(schema_instruction(schema).encode()) + 2 + MESSAGE_TOKENS <= len(json.dumps(schema)) + SCHEMA_TOKENS


async def test_anthropics_cache_reads_and_writes_are_part_of_the_prompt_and_writes_cost_more() -> None:
    server = BillingServer(cached_share=0.25, write_share=0.5).start()
    try:
        backend = AnthropicBackend(
            BackendSettings(model="claude-sonnet-5", api_key="k", base_url=server.url, retry=RetryPolicy(attempts=1))
        )
        request = CompletionRequest(
            model="claude-sonnet-5", messages=[Message(role="user", content="x" * 4000)], max_tokens=5
        )
        usage = (await backend.complete(request)).usage
        await backend.aclose()
    finally:
        server.stop()
    prompt, _, read, written = server.billed[0]
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens) == (prompt, read, written)
    price = default_prices()["anthropic:claude-sonnet-5"]
    assert price.cache_write is not None and price.cached_input is not None
    billed = ((prompt - read - written) * price.input + read * price.cached_input + written * price.cache_write) / 1e6
    assert price_of(default_prices(), "anthropic", "claude-sonnet-5", usage) == pytest.approx(
        billed + 5 * price.output / 1e6
    )
