"""harnesses/install.py: an install writes what its plan says, never a file the user changed, runs
each agent command once, and `uninstall` takes out exactly what it recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillsleep.core.shared.errors import ConfigError
from skillsleep.harnesses.install import InstallFailed, Installs
from skillsleep.harnesses.install_plan import Plan, PlannedCommand, PlannedFile


def plan(
    home: Path, *, skill: str = "---\nname: sleep\n---\nrun it\n", commands: list[PlannedCommand] | None = None
) -> Plan:
    return Plan(
        agent="demo",
        files=[
            PlannedFile(path=home / ".agent" / "skills" / "sleep" / "SKILL.md", text=skill),
            PlannedFile(path=home / ".agent" / "hooks" / "end.sh", text="#!/bin/sh\nexit 0\n", executable=True),
        ],
        commands=commands or [],
        notes=["type /sleep"],
    )


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_install_writes_the_plan_records_it_and_a_second_install_changes_nothing(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    (home / ".agent").mkdir(parents=True)  # the agent's own folder exists: install creates only below it
    first = Installs(data).install(plan(home))
    skill = home / ".agent" / "skills" / "sleep" / "SKILL.md"
    assert first.written == [str(skill), str(home / ".agent" / "hooks" / "end.sh")] and first.notes == ["type /sleep"]
    assert skill.read_text() == "---\nname: sleep\n---\nrun it\n"
    assert (home / ".agent" / "hooks" / "end.sh").stat().st_mode & 0o111
    manifest = json.loads((data / "installed" / "demo.json").read_text())
    assert {f["path"] for f in manifest["files"]} == set(first.written)
    assert manifest["files"][0]["created_dirs"] == [str(home / ".agent" / "skills"), str(skill.parent)]
    before = tree(tmp_path)
    second = Installs(data).install(plan(home))
    assert second.written == [] and sorted(second.unchanged) == sorted(first.written)
    after = tree(tmp_path)
    assert {k: v for k, v in after.items() if "installed" not in k} == {
        k: v for k, v in before.items() if "installed" not in k
    }


def test_a_file_the_user_changed_is_never_replaced_and_nothing_is_written_without_force(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    Installs(data).install(plan(home))
    skill = home / ".agent" / "skills" / "sleep" / "SKILL.md"
    skill.write_text("---\nname: sleep\n---\nmy own words\n")
    hook = home / ".agent" / "hooks" / "end.sh"
    with pytest.raises(ConfigError) as refused:
        Installs(data).install(plan(home, skill="---\nname: sleep\n---\nversion two\n"))
    message = str(refused.value)
    assert "nothing was written" in message and "-my own words" in message and "+version two" in message
    assert "--force" in message
    assert skill.read_text().endswith("my own words\n") and hook.read_text() == "#!/bin/sh\nexit 0\n"

    forced = Installs(data).install(plan(home, skill="---\nname: sleep\n---\nversion two\n"), force=True)
    assert skill.read_text().endswith("version two\n")
    assert len(forced.backed_up) == 1 and Path(forced.backed_up[0]).read_text().endswith("my own words\n")


def test_a_file_skillsleep_wrote_and_nobody_changed_is_updated_without_force(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    Installs(data).install(plan(home))
    update = Installs(data).install(plan(home, skill="---\nname: sleep\n---\nversion two\n"))
    assert update.written == [str(home / ".agent" / "skills" / "sleep" / "SKILL.md")] and update.backed_up == []


def test_a_file_that_was_never_skillsleeps_is_not_overwritten(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    skill = home / ".agent" / "skills" / "sleep" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("a skill of the user's that happens to be called sleep\n")
    with pytest.raises(ConfigError, match="nothing was written"):
        Installs(data).install(plan(home))
    assert not (home / ".agent" / "hooks").exists() and not (data / "installed").exists()


def test_uninstall_removes_only_what_install_wrote(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    (home / ".agent" / "skills").mkdir(parents=True)
    (home / ".agent" / "skills" / "mine.md").write_text("the user's")
    Installs(data).install(plan(home))
    out = Installs(data).uninstall("demo")
    assert len(out.removed) == 2
    assert tree(home) == {".agent/skills/mine.md": b"the user's"}
    assert not (home / ".agent" / "hooks").exists() and not (home / ".agent" / "skills" / "sleep").exists()
    assert not (data / "installed" / "demo.json").exists()
    assert Installs(data).uninstall("demo").removed == []  # nothing recorded: nothing to do


def test_uninstall_refuses_a_changed_file_unless_forced_and_then_keeps_it_in_backups(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    Installs(data).install(plan(home))
    skill = home / ".agent" / "skills" / "sleep" / "SKILL.md"
    skill.write_text("edited\n")
    with pytest.raises(ConfigError, match="nothing was removed"):
        Installs(data).uninstall("demo")
    assert skill.exists() and (home / ".agent" / "hooks" / "end.sh").exists()
    forced = Installs(data).uninstall("demo", force=True)
    assert not skill.exists() and Path(forced.backed_up[0]).read_text() == "edited\n"


def test_commands_run_once_and_their_undo_runs_at_uninstall_newest_first(tmp_path: Path) -> None:
    home, data, log = tmp_path / "home", tmp_path / "data", tmp_path / "log"
    cmds = [
        PlannedCommand(
            what=f"register {n}",
            argv=["sh", "-c", f"echo do {n} >> {log}"],
            undo=["sh", "-c", f"echo undo {n} >> {log}"],
        )
        for n in (1, 2)
    ]
    assert Installs(data).install(plan(home, commands=cmds)).ran == ["register 1", "register 2"]
    assert Installs(data).install(plan(home, commands=cmds)).ran == []
    assert Installs(data).uninstall("demo").ran == ["undo: register 2", "undo: register 1"]
    assert log.read_text().split("\n") == ["do 1", "do 2", "undo 2", "undo 1", ""]


def test_a_failing_command_stops_the_install_and_uninstall_undoes_what_was_done(tmp_path: Path) -> None:
    home, data, log = tmp_path / "home", tmp_path / "data", tmp_path / "log"
    cmds = [
        PlannedCommand(
            what="register", argv=["sh", "-c", f"echo do >> {log}"], undo=["sh", "-c", f"echo undo >> {log}"]
        ),
        PlannedCommand(what="enable", argv=["sh", "-c", "echo no such plugin >&2; exit 3"]),
    ]
    with pytest.raises(InstallFailed, match="could not enable: .* exited 3: no such plugin"):
        Installs(data).install(plan(home, commands=cmds))
    out = Installs(data).uninstall("demo")
    assert out.ran == ["undo: register"] and len(out.removed) == 2
    assert log.read_text() == "do\nundo\n"


def test_a_folder_where_a_file_goes_is_a_clear_error(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    (home / ".agent" / "skills" / "sleep" / "SKILL.md").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is a folder where skillsleep would write a file"):
        Installs(data).install(plan(home))


def test_a_damaged_manifest_is_named_and_nothing_is_guessed(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    Installs(data).install(plan(home))
    (data / "installed" / "demo.json").write_text("{not json")
    with pytest.raises(ConfigError, match="demo.json .* cannot be read"):
        Installs(data).uninstall("demo")
    assert (home / ".agent" / "skills" / "sleep" / "SKILL.md").exists()


def test_uninstall_removes_a_folder_install_created_for_one_file_that_held_another(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    nested = Plan(
        agent="demo",
        files=[
            PlannedFile(path=home / "skill" / "SKILL.md", text="a\n"),  # creates skill/
            PlannedFile(path=home / "skill" / "agents" / "x.yaml", text="b\n"),
        ],
    )
    Installs(data).install(nested)
    Installs(data).uninstall("demo")
    assert list(home.iterdir()) == []


def test_uninstall_removes_a_folder_install_created_for_several_files(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    bundle = Plan(
        agent="demo",
        files=[PlannedFile(path=home / "bundle" / name, text=name) for name in ("a.json", "b.js", "skills/x/SKILL.md")],
    )
    Installs(data).install(bundle)
    assert Installs(data).uninstall("demo").removed == [
        str(home / "bundle" / n) for n in ("a.json", "b.js", "skills/x/SKILL.md")
    ]
    assert tree(tmp_path) == {} and not (home / "bundle").exists()  # the folder a.json's write created, emptied last
