"""`skillsleep cost` never counts a call whose model has no price as free: the ledger records that
the call was unpriced (a local or scripted model is priced at 0, which is a price), and `cost`
marks the total "at least", names the provider:model with its calls and tokens and says how to
give its price ([prices] in config.toml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from servers import USAGE_IN, USAGE_OUT, Action, FaultServer
from sleep_kit import invoke, run_args, scripted_night

from skillsleep.core.models.ledger import read_ledger

LEDGER = Path("data") / "nights" / "0001" / "ledger.jsonl"


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    scripted_night(monkeypatch, tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def unpriced_night(root: Path, fault_server: FaultServer) -> int:
    """A night on an openai-compatible model with no price (no money cap, so it runs); its calls."""
    fault_server.default = Action(text=json.dumps({"groups": [], "checks": [], "relevant": [], "variants": []}))
    code, out, err = invoke(
        "run", "--backend", "openai:my-model", "--base-url", f"{fault_server.url}/v1", "--since", "3650d", "--json"
    )
    assert code == 0, err
    calls = int(json.loads(out)["calls_made"])
    assert calls > 0
    return calls


def test_the_ledger_records_a_call_to_a_model_without_a_price_as_unpriced(
    root: Path, fault_server: FaultServer
) -> None:
    calls = unpriced_night(root, fault_server)
    entries = read_ledger(root / LEDGER).entries
    assert len(entries) == calls and all(e.unpriced and e.cost_usd == 0 for e in entries)


def test_a_night_on_a_model_priced_at_0_is_not_unpriced(root: Path) -> None:
    code, _, err = invoke(*run_args(root, "--json"))  # scripted: priced, at $0
    assert code == 0, err
    assert not any(e.unpriced for e in read_ledger(root / LEDGER).entries)
    code, out, _ = invoke("cost", "--json")
    month = json.loads(out)["month"]
    assert month["unpriced"] == {} and month["cost_at_least"] is False
    code, text, _ = invoke("cost")
    assert "at least" not in text and "[prices]" not in text


def test_cost_names_the_unpriced_model_its_tokens_and_how_to_price_it_instead_of_counting_it_free(
    root: Path, fault_server: FaultServer
) -> None:
    calls = unpriced_night(root, fault_server)
    code, out, err = invoke("cost", "--json")
    assert code == 0, err
    c = json.loads(out)
    month, night = c["month"], c["nights"][0]
    assert month["cost_usd"] == 0 and month["calls"] == calls  # the keys it always had
    assert month["cost_at_least"] is True and night["cost_at_least"] is True
    want = {"calls": calls, "input_tokens": calls * USAGE_IN, "output_tokens": calls * USAGE_OUT}
    assert month["unpriced"] == {"openai:my-model": want} and night["unpriced"] == month["unpriced"]
    assert c["prices_at"] == str(root / "data" / "config.toml")
    code, text, err = invoke("cost")
    assert code == 0, err
    assert f"{calls * (USAGE_IN + USAGE_OUT):,} tokens, at least $0.0000" in text
    assert f"- openai:my-model: {calls} calls, {calls * USAGE_IN:,} tokens in, {calls * USAGE_OUT:,} out" in text
    assert f"under [prices] in {root / 'data' / 'config.toml'}" in text
    assert '"openai:my-model" = {input = 0.0, output = 0.0}' in text
    assert "| 1 | 2026-12" in text and f"| {calls} | {calls * (USAGE_IN + USAGE_OUT):,} | at least $0.0000 |" in text
    t = month["by_role"]["target"]
    assert t["unpriced_calls"] == t["calls"] > 0  # by role too
    assert f"| target | {t['calls']} | 0 | {t['input_tokens']:,} | {t['output_tokens']:,} | at least $0.0000 |" in text
