"""`/sleep cost` of a night whose model is an agent (`claude-code`, `codex`): its spend by role and by
night in tokens, in dollars where the agent's CLI reported them, and its calls without dollars named
as subscription tokens — never as a model to give a price to."""

from __future__ import annotations

import json
from pathlib import Path

from sleep_kit import data, invoke, save_night  # noqa: F401  (fixture)

from skillsleep.core.models.rundir import RunDir
from skillsleep.core.night.nights import Nights, month_start
from skillsleep.core.shared.records import LedgerEntry, Usage


def call(data: Path, role: str, provider: str, model: str, tokens: tuple[int, int], usd: float | None) -> None:
    """One call of night 1 (`usd` None: the CLI reported no dollars, so it is unpriced)."""
    RunDir(Nights(data).folder(1)).append_ledger(
        LedgerEntry(
            ts=month_start(),
            role=role,
            provider=provider,
            model=model,
            usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1], cached_tokens=tokens[0] // 2),
            cost_usd=usd or 0.0,
            latency_s=2.0,
            unpriced=usd is None,
        )
    )


def test_cost_shows_an_agent_nights_spend_by_role_in_tokens_and_reported_dollars(data: Path) -> None:
    save_night(data, 1, month_start(), "/skills/fmt/SKILL.md", status="finished", harness="claude-code")
    call(data, "reflect", "claude-code", "sonnet", (12_000, 800), 0.0412)  # claude -p reports its cost
    call(data, "judge", "claude-code", "sonnet", (3_000, 200), 0.0103)
    call(data, "mine", "codex", "gpt-5", (9_000, 400), None)  # codex exec reports tokens only
    code, out, err = invoke("cost", "--json")
    assert code == 0, err
    c = json.loads(out)
    assert c["agents"] == ["claude-code", "codex"]
    roles = c["month"]["by_role"]
    assert (roles["reflect"]["input_tokens"], roles["reflect"]["output_tokens"], roles["reflect"]["cost_usd"]) == (
        12_000,
        800,
        0.0412,
    )
    assert roles["mine"]["unpriced_calls"] == 1 and roles["mine"]["input_tokens"] == 9_000
    assert c["month"]["unpriced"] == {"codex:gpt-5": {"calls": 1, "input_tokens": 9_000, "output_tokens": 400}}

    code, text, err = invoke("sleep", "cost")  # as /sleep cost shows it
    assert code == 0, err
    assert "| reflect | 1 | 0 | 12,000 | 800 | $0.0412 |" in text
    assert "| judge | 1 | 0 | 3,000 | 200 | $0.0103 |" in text
    assert "| mine | 1 | 0 | 9,000 | 400 | at least $0.0000 |" in text
    assert "| 1 | " in text and "| 25,400 | at least $0.0515 |" in text  # the night: all its tokens
    assert "Agents as the model (their CLI reported no dollars: these tokens count against your subscription):" in text
    assert "- codex:gpt-5: 1 call, 9,000 tokens in, 400 out" in text
    assert "Not priced" not in text and "[prices]" not in text  # a subscription is not a price to give


def test_an_agent_and_an_unpriced_api_model_are_each_named_their_own_way(data: Path) -> None:
    save_night(data, 1, month_start(), "/skills/fmt/SKILL.md", status="finished")
    call(data, "reflect", "codex", "", (1_000, 10), None)
    call(data, "judge", "openai", "my-model", (2_000, 20), None)
    code, text, err = invoke("cost")
    assert code == 0, err
    agents, priced = text.index("Agents as the model"), text.index("Not priced")
    assert agents < text.index("- codex:: 1 call") < priced < text.index("- openai:my-model: 1 call")
    assert '"openai:my-model" = {input = 0.0, output = 0.0}' in text and '"codex:"' not in text
