"""A budget caps the whole night (or `train` run), across every invocation that worked on it: a
night the budget (or Ctrl-C) stopped and a later `skillsleep run` resumed starts its ledger at what
it had already spent (its ledger.jsonl, a killed process's calls included), so stop + resume never
spends more than the cap (tokens or USD)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sleep_kit import invoke, run_args, scripted_night
from test_cli import project  # noqa: F401  (a fixture: the scripted train project)

from skillsleep.core.models.ledger import Price, read_ledger, spent_before
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.shared.records import LedgerEntry, Usage

FOLDER = Path("data") / "nights" / "0001"
# $1 per million tokens in and out: the scripted models cost what a token cap counts, in USD
PRICED = '[prices]\n"scripted:*" = {input = 1.0, output = 1.0}\n'


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    scripted_night(monkeypatch, tmp_path)
    (tmp_path / "config.toml").write_text(PRICED)
    monkeypatch.setenv("SKILLSLEEP_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path


def spent(root: Path) -> tuple[int, float]:
    """(tokens, USD) of every call night 1 made, by every invocation (its ledger.jsonl)."""
    ledger = read_ledger(root / FOLDER / "ledger.jsonl")
    return ledger.spent_tokens, ledger.spent_usd


# A whole night takes ~14.5k tokens; 12000 stops it once training has begun (each call reserves its
# pessimistic estimate first). Were each resume given the whole cap again, the third would finish it.
@pytest.mark.parametrize(("flag", "cap"), [("--budget-tokens", "12000"), ("--budget-usd", "0.012")])
def test_a_night_stopped_by_its_budget_and_resumed_never_spends_more_than_the_cap_in_total(
    root: Path, flag: str, cap: str
) -> None:
    for run in range(3):
        code, out, err = invoke(*run_args(root, flag, cap, "--json"))
        s = json.loads(out)
        tokens, usd = spent(root)
        assert (tokens <= int(cap)) if flag == "--budget-tokens" else (0 < usd <= float(cap)), (run, tokens, usd)
        assert code == 1 and s["night"] == 1 and s["stop"]["kind"] == "budget", err  # resumed, and stopped again
        assert tokens > 0


def test_a_resumed_night_given_a_larger_cap_goes_on_and_finishes_within_it(root: Path) -> None:
    code, _, err = invoke(*run_args(root, "--budget-tokens", "12000", "--json"))
    assert code == 1, err
    first = spent(root)[0]
    code, out, err = invoke(*run_args(root, "--budget-tokens", "30000", "--json"))
    s = json.loads(out)
    assert s["night"] == 1 and s["stop"] is None, (code, s["outcome"])
    assert first < spent(root)[0] <= 30000  # the raised cap covers both invocations together


def test_a_train_run_resumed_after_a_kill_counts_the_calls_made_after_its_last_saved_state(project: Path) -> None:
    train = ["train", "--config", str(project / "run.toml"), "--json"]
    code, out, err = invoke(*train, "--budget-tokens", "5000")
    assert code == 0 and json.loads(out)["stopped"].startswith("budget"), err
    run = RunDir(project / "runs" / "cli")
    saved = json.loads(run.state_path.read_text())["spent_tokens"]
    cap = 10000
    # what a process killed after that save had recorded: calls its state never counted
    late = Usage(input_tokens=cap - saved - 100, output_tokens=100)
    run.append_ledger(LedgerEntry(role="target", provider="scripted", model="m", usage=late, cost_usd=0.0, latency_s=1))
    code, out, err = invoke(*train, "--budget-tokens", str(cap))
    assert read_ledger(run.ledger_path).spent_tokens <= cap, err  # the kill's calls counted: nothing more fits
    assert json.loads(out)["stopped"].startswith("budget")


def test_calls_made_before_their_model_had_a_price_count_at_its_price_when_the_run_resumes(tmp_path: Path) -> None:
    """A night ran without a money cap on a model with no price (its calls recorded unpriced, at $0);
    the user gives the price and resumes it under a cap: those calls count at that price."""
    run = RunDir(tmp_path)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    for unpriced, cost in ((True, 0.0), (False, 0.5)):
        run.append_ledger(
            LedgerEntry(
                role="target", provider="openai", model="m", usage=usage, cost_usd=cost, latency_s=1, unpriced=unpriced
            )
        )
    run.append_ledger(
        LedgerEntry(role="judge", provider="openai", model="m", usage=usage, cost_usd=0, latency_s=0, cache_hit=True)
    )
    tokens, usd = spent_before(run.ledger_path, {"openai:m": Price(input=2.0, output=3.0)})
    assert tokens == 4_000_000 and usd == pytest.approx(5.0 + 0.5)  # a cache hit costs nothing
