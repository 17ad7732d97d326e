"""`skillsleep schedule --openclaw` / `unschedule --openclaw`: the night as an OpenClaw cron job
(`openclaw cron add --command-argv …` through the running gateway), replaced rather than doubled,
shown by `status`, and a clear error that changes nothing when no gateway answers. A stand-in
`openclaw` keeps the jobs here; tests/test_openclaw_gateway.py runs a real night through the real
gateway.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from fake_openclaw import FakeOpenClaw, invoke

from skillsleep.core.shared.errors import ConfigError

SCRIPT = str(resources.files("skillsleep.cron") / "run_sleep_cron.sh")
SKILLSLEEP = str(Path(sys.executable).parent / "skillsleep")


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeOpenClaw:
    monkeypatch.chdir(tmp_path)
    return FakeOpenClaw.around(tmp_path, monkeypatch)


def scheduled() -> list[dict[str, Any]]:
    code, out, err = invoke("status", "--json")
    assert code == 0, err
    return [x for x in out["schedule"]["scheduled"] if x["via"] == "openclaw"]


def test_schedule_openclaw_adds_a_command_job_running_the_night_script_with_absolute_paths(
    fake: FakeOpenClaw, tmp_path: Path
) -> None:
    code, out, err = invoke("schedule", "--openclaw", "--at", "03:30", "--backend", "local", "--steps", "1", "--json")
    assert code == 0, err
    assert (out["via"], out["installed"], out["replaced"], out["when"]) == ("openclaw", True, False, "03:30 daily")
    [job] = fake.jobs()
    assert job["name"] == "skillsleep-night" and job["schedule"] == {"kind": "cron", "expr": "30 3 * * *"}
    assert "skillsleep unschedule --openclaw" in job["description"]
    payload = job["payload"]
    assert payload["argv"] == ["/bin/sh", SCRIPT, SKILLSLEEP, "--backend", "local", "--steps", "1"]
    assert payload["cwd"] == str(tmp_path) and payload["timeoutSeconds"] == 0  # a night may take hours
    assert payload["env"]["SKILLSLEEP_HOME"] == str(tmp_path / "data")
    assert payload["env"]["SKILLSLEEP_LOG_DIR"] == str(tmp_path / "data" / "logs")
    assert payload["env"]["HOME"] == str(tmp_path / "home") and payload["env"]["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    [add] = [c for c in fake.calls() if c[:2] == ["cron", "add"]]
    assert "--no-deliver" in add and "--command" not in add  # `--command` runs `sh -lc`, which loses PATH
    assert scheduled() == [{"via": "openclaw", "when": "03:30 daily", "where": out["where"], "entry": "30 3 * * *"}]
    code, text, _ = invoke("status")
    assert "scheduled: 03:30 daily via openclaw" in text


def test_a_second_schedule_replaces_the_job_and_leaves_the_users_own_jobs(fake: FakeOpenClaw) -> None:
    fake.add_job(id="user-1", name="morning-brief", schedule={"kind": "cron", "expr": "0 7 * * *"})
    assert invoke("schedule", "--openclaw", "--at", "03:00")[0] == 0
    [first] = [j for j in fake.jobs() if j["name"] == "skillsleep-night"]
    code, out, err = invoke("schedule", "--openclaw", "--at", "04:15", "--json")
    assert code == 0, err
    assert out["replaced"] is True
    names = {j["id"]: (j["name"], j["schedule"]["expr"]) for j in fake.jobs()}
    assert first["id"] not in names and sorted(names.values()) == [
        ("morning-brief", "0 7 * * *"),
        ("skillsleep-night", "15 4 * * *"),
    ]
    assert [x["when"] for x in scheduled()] == ["04:15 daily"]
    code, out, err = invoke("unschedule", "--openclaw", "--json")
    assert code == 0 and out["removed"] is True
    assert [j["name"] for j in fake.jobs()] == ["morning-brief"] and scheduled() == []
    code, out, err = invoke("unschedule", "--openclaw")
    assert code == 0 and "nothing was scheduled via openclaw" in out


def test_no_gateway_is_an_error_saying_how_to_start_it_and_nothing_changes(
    fake: FakeOpenClaw, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke("schedule", "--openclaw", "--at", "03:00")[0] == 0
    jobs = fake.jobs()
    monkeypatch.setenv("FAKE_OPENCLAW_GATEWAY_DOWN", "1")
    for verb in (["schedule", "--openclaw", "--at", "05:00"], ["unschedule", "--openclaw"]):
        code, _out, err = invoke(*verb)
        assert code == 1 and "Traceback" not in err, err
        assert "no OpenClaw gateway answers" in err and "Gateway not reachable at ws://127.0.0.1:18789" in err
        assert "openclaw gateway run" in err and "nothing was changed" in err
    assert fake.jobs() == jobs and [x["when"] for x in scheduled()] == ["03:00 daily"]


def test_a_job_of_that_name_skillsleep_did_not_write_is_never_replaced_or_removed(fake: FakeOpenClaw) -> None:
    fake.add_job(
        id="user-2", name="skillsleep-night", description="my own", schedule={"kind": "cron", "expr": "0 1 * * *"}
    )
    for verb in (["schedule", "--openclaw", "--at", "03:00"], ["unschedule", "--openclaw"]):
        code, _out, err = invoke(*verb)
        assert code == 2 and "user-2" in err and "was not written by skillsleep" in err and "nothing was changed" in err
    assert [j["id"] for j in fake.jobs()] == ["user-2"] and scheduled() == []


def test_print_shows_the_cron_add_command_and_asks_no_gateway(fake: FakeOpenClaw) -> None:
    code, out, err = invoke("schedule", "--openclaw", "--at", "03:00", "--print", "--backend", "local")
    assert code == 0, err
    assert "openclaw cron add --name skillsleep-night --cron '0 3 * * *'" in out and "--command-argv" in out
    assert fake.calls() == [] and scheduled() == []


def test_without_openclaw_on_path_schedule_says_what_to_install(
    fake: FakeOpenClaw, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, _out, err = invoke("schedule", "--openclaw", "--at", "03:00")
    assert code == 2 and "`openclaw` is not on PATH" in err and "--systemd" in err
    code, _out, err = invoke("schedule", "--openclaw", "--cron", "0 3 * * 1")
    assert code == 2 and "with --openclaw give --at HH:MM" in err


def test_an_agents_own_cron_is_a_place_for_the_night_through_its_record(monkeypatch: pytest.MonkeyPatch) -> None:
    from skillsleep.harnesses import registry
    from skillsleep.slash_commands.schedulers import AgentCronScheduler, schedulers

    monkeypatch.setattr(registry, "AGENTS", dict(registry.AGENTS))
    assert list(schedulers()) == ["crontab", "systemd", "openclaw"]  # codex and claude-code keep no cron
    with pytest.raises(ConfigError, match="'codex' keeps no cron of its own"):
        registry.get("codex").own_cron()
    mine = registry.get("codex").model_copy(
        update={"name": "my-agent", "cron": "skillsleep.harnesses.openclaw.cron:CRON"}
    )
    registry.register(mine)
    place = schedulers()["my-agent"]()
    assert isinstance(place, AgentCronScheduler) and place.note().name == "my-agent.json"
    assert place.mark.endswith("`skillsleep unschedule --my-agent` removes it.")
