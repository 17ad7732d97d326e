"""`skillsleep install openclaw` / `uninstall openclaw`: the plugin written where OpenClaw keeps
its state (`$OPENCLAW_STATE_DIR`, else ~/.openclaw) with this installation's skillsleep in its
config.json, linked and enabled with OpenClaw's own commands, idempotent, never over a file the
user edited, and taken out again by uninstall. A stand-in `openclaw` records the commands here;
tests/test_openclaw_gateway.py runs the real one.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from fake_openclaw import FakeOpenClaw, invoke
from replay_checks import snapshot

from skillsleep.slash_commands.agent_installs import skillsleep_command

PLUGIN = Path(str(resources.files("skillsleep.plugins") / "openclaw"))
SHIPPED = [
    "openclaw.plugin.json",
    "package.json",
    "index.js",
    "skills/skillsleep/SKILL.md",
    "slash_sleep.py",
    "run_sleep.py",
]
LINK = ["plugins", "install", "{folder}", "--link", "--force", "--accept-capabilities"]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home, an OpenClaw state dir with the user's config, skillsleep's data folder, a fake openclaw."""
    fake = FakeOpenClaw.around(tmp_path, monkeypatch)
    state = tmp_path / "state"
    state.mkdir()
    (state / "openclaw.json").write_text('{"gateway": {"mode": "local"}}\n')
    return {"root": tmp_path, "state": state, "folder": state / "skillsleep-plugin", "fake": fake.root}


def calls(world: dict[str, Path]) -> list[list[str]]:
    return FakeOpenClaw(world["fake"]).calls()


def test_install_writes_the_plugin_into_openclaws_state_dir_and_links_and_enables_it(world: dict[str, Path]) -> None:
    code, out, err = invoke("install", "openclaw", "--json")
    assert code == 0, err
    folder = world["folder"]
    for name in SHIPPED:
        assert (folder / name).read_bytes() == (PLUGIN / name).read_bytes(), name
    assert not (folder / "tests").exists() and not (folder / "run_sleep_cron.sh").exists()
    config = json.loads((folder / "config.json").read_text())
    assert config == {**json.loads((PLUGIN / "config.json").read_text()), "command": str(skillsleep_command())}
    assert Path(config["command"]).is_absolute()
    assert calls(world) == [[w.format(folder=folder) for w in LINK], ["plugins", "enable", "skillsleep"]]
    [agent] = out["agents"]
    assert agent["agent"] == "openclaw" and sorted(agent["written"]) == sorted(
        str(folder / name) for name in [*SHIPPED, "config.json"]
    )
    assert len(agent["ran"]) == 2 and any("/sleep status" in note for note in agent["notes"])


def test_a_second_install_writes_nothing_and_runs_nothing(world: dict[str, Path]) -> None:
    assert invoke("install", "openclaw")[0] == 0
    before = snapshot(world["state"])
    code, out, err = invoke("install", "openclaw")
    assert code == 0, err
    assert "installed into openclaw: nothing to do, it was already so" in out
    assert snapshot(world["state"]) == before and len(calls(world)) == 2


def test_without_a_state_dir_the_plugin_goes_to_openclaws_default_home(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENCLAW_STATE_DIR")
    assert invoke("install", "openclaw")[0] == 0
    folder = world["root"] / "home" / ".openclaw" / "skillsleep-plugin"
    assert (folder / "index.js").is_file() and not world["folder"].exists()
    assert calls(world)[0][2] == str(folder)


def test_a_plugin_file_the_user_edited_is_kept_unless_forced_and_then_backed_up(world: dict[str, Path]) -> None:
    assert invoke("install", "openclaw")[0] == 0
    edited = world["folder"] / "index.js"
    edited.write_text(edited.read_text().replace("TIMEOUT_MS = 10 * 60 * 1000", "TIMEOUT_MS = 60 * 1000"))
    (world["folder"] / "config.json").unlink()  # install must put a missing file back, but only with the rest
    before = snapshot(world["state"])
    code, out, err = invoke("install", "openclaw")
    assert code == 2 and "Traceback" not in err
    assert "were changed by you since skillsleep wrote them" in err and "nothing was written" in err
    assert "-const TIMEOUT_MS = 60 * 1000;" in err and "+const TIMEOUT_MS = 10 * 60 * 1000;" in err
    assert "skillsleep install openclaw --force" in err
    assert snapshot(world["state"]) == before and len(calls(world)) == 2
    code, out, err = invoke("uninstall", "openclaw")
    assert code == 2 and "nothing was removed" in err and snapshot(world["state"]) == before
    assert len(calls(world)) == 2  # OpenClaw's uninstall was not run either
    code, out, err = invoke("install", "openclaw", "--force", "--json")
    assert code == 0, err
    [backup] = out["agents"][0]["backed_up"]
    assert "TIMEOUT_MS = 60 * 1000" in Path(backup).read_text()
    assert edited.read_bytes() == (PLUGIN / "index.js").read_bytes() and (world["folder"] / "config.json").exists()


def test_uninstall_runs_openclaws_uninstall_and_leaves_the_state_dir_as_it_was(world: dict[str, Path]) -> None:
    (world["state"] / "extensions").mkdir()  # OpenClaw's own things stay
    before = snapshot(world["state"])
    assert invoke("install", "openclaw")[0] == 0
    code, out, err = invoke("uninstall", "openclaw", "--json")
    assert code == 0, err
    assert calls(world)[-1] == ["plugins", "uninstall", "skillsleep", "--force"]
    assert out["agents"][0]["ran"] == ["undo: link the plugin into OpenClaw"]
    assert snapshot(world["state"]) == before
    assert not (world["root"] / "data" / "installed" / "openclaw.json").exists()


def test_without_openclaw_on_path_the_files_go_in_and_a_later_install_links_them(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, out, err = invoke("install", "openclaw", "--json")
    assert code == 0, err
    agent = out["agents"][0]
    assert agent["ran"] == [] and (world["folder"] / "index.js").is_file()
    assert any(
        f"openclaw plugins install {world['folder']} --link --force --accept-capabilities" in note
        for note in agent["notes"]
    )
    monkeypatch.setenv("PATH", FakeOpenClaw(world["fake"]).env()["PATH"])
    code, out, err = invoke("install", "openclaw", "--json")
    assert code == 0, err
    assert out["agents"][0]["written"] == [] and len(out["agents"][0]["ran"]) == 2
    assert calls(world)[0] == [w.format(folder=world["folder"]) for w in LINK]


def test_a_failing_openclaw_command_is_an_error_with_its_words_and_uninstall_still_cleans_up(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(world["state"])
    monkeypatch.setenv("FAKE_OPENCLAW_FAIL", 'Plugin "skillsleep" requires capability consent.')
    code, _out, err = invoke("install", "openclaw")
    assert code == 1 and "Traceback" not in err
    assert "could not link the plugin into OpenClaw" in err and "requires capability consent" in err
    monkeypatch.delenv("FAKE_OPENCLAW_FAIL")
    code, _out, err = invoke("uninstall", "openclaw")
    assert code == 0, err
    assert snapshot(world["state"]) == before and calls(world)[-1][:2] == ["plugins", "install"]  # nothing to undo
