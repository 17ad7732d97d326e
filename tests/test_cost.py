"""`skillsleep cost` (`/sleep cost`): spend by night, by month and by role, from the nights' ledgers."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from sleep_kit import data, dead_pid, invoke, save_night, spend  # noqa: F401  (fixture)

from skillsleep.core.night.nights import Nights, month_start


def test_cost_by_night_month_and_role_from_the_ledgers(data: Path) -> None:
    this_month, last_month = month_start(), month_start() - timedelta(days=3)
    nights = Nights(data)
    for n in range(1, 8):  # seven nights last month; only the last ones are listed
        save_night(
            data, n, last_month, "/s/SKILL.md", finished=last_month, status="finished", harness="chat", skill_name="old"
        )
        spend(data, n, "reflect", 100, 0.01, last_month, output_tokens=10)
    save_night(data, 8, this_month, "/s/SKILL.md", finished=this_month, status="finished", tokens=0, cost_usd=0.0)
    spend(data, 8, "reflect", 1000, 0.10, this_month, output_tokens=10)
    spend(data, 8, "target", 2000, 0.20, this_month, output_tokens=10)
    spend(data, 8, "target", 2000, 0.0, this_month, output_tokens=10, cache_hit=True)  # a cache hit costs nothing
    # a killed night: its record never got its spend; its ledger has it
    save_night(data, 9, this_month, "/s/SKILL.md", status="running", pid=dead_pid())
    spend(data, 9, "judge", 500, 0.05, this_month, output_tokens=10)
    # a night whose record cannot be read still counts
    (nights.folder(10)).mkdir(parents=True)
    (nights.folder(10) / "night.json").write_text("{torn")
    spend(data, 10, "reflect", 90, 0.01, this_month, output_tokens=10)

    code, out, err = invoke("cost", "--json")
    assert code == 0, err
    c = json.loads(out)
    month = c["month"]
    assert month["since"] == this_month.isoformat()
    assert month["calls"] == 4 and month["cache_hits"] == 1
    assert month["tokens"] == 1010 + 2010 + 510 + 100 and abs(month["cost_usd"] - 0.36) < 1e-9
    assert month["by_role"]["target"]["calls"] == 1 and month["by_role"]["target"]["cache_hits"] == 1
    assert month["by_role"]["judge"]["input_tokens"] == 500 and "reflect" in month["by_role"]
    shown = {n["night"]: n for n in c["nights"]}
    assert set(shown) == {6, 7, 8, 9, 10}  # this month's, and the last five
    assert shown[8]["tokens"] == 3020 and shown[8]["calls"] == 2 and shown[8]["this_month"] is True
    assert shown[9]["status"] == "died" and shown[9]["tokens"] == 510
    assert shown[10]["status"] == "unreadable" and shown[10]["tokens"] == 100
    assert shown[7]["this_month"] is False and c["nights_in_all"] == 10
    assert "skillsleep train" in c["counted"] and "ledger.jsonl" in c["counted"]

    code, out, err = invoke("cost")
    assert code == 0, err
    rows = [line.split(" | ")[0] for line in out.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows[:5] == ["| 6", "| 7", "| 8", "| 9", "| 10"]  # night 5 is neither this month's nor one of the last
    assert "3,630 tokens" in out and "$0.3600" in out
    assert "| target | 1 | 1 |" in out
    assert "not counted" in out
    code, md, err = invoke("sleep", "cost")
    assert code == 0 and md == out  # the markdown an agent shows is what a pipe gets


def test_cost_of_an_empty_data_dir_writes_nothing(data: Path) -> None:
    code, out, err = invoke("cost", "--format", "text")
    assert code == 0, err
    assert "no nights yet" in out and "0 tokens" in out
    assert not data.exists()
