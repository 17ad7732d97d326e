"""`skillsleep install claude-code|codex` / `uninstall`: what each agent gets (the user skill `sleep`
with this installation's skillsleep by its full path, Claude Code's SessionEnd hook), where (the
agents' own home variables), idempotent, never over a file the user changed, and `uninstall`
leaves the agents' folders as they were, byte for byte. The agents running it: tests/test_agent_sleep.py."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from replay_checks import snapshot

from skillsleep.harnesses.install import installer
from skillsleep.harnesses.install_plan import InstallContext
from skillsleep.slash_commands.agent_installs import skillsleep_command
from skillsleep.slash_commands.cli import main

SKILLSLEEP = str(skillsleep_command())


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME and data folder, the agents' homes in their default places (with a file of
    the user's in each) and no agent CLI on PATH."""
    home = tmp_path / "home"
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    (home / ".claude" / "skills" / "mine").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    (home / ".claude" / "skills" / "mine" / "SKILL.md").write_text("---\nname: mine\n---\nmy skill\n")
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "mine"\n')
    return home


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def installed(*args: str) -> dict[str, dict[str, list[str]]]:
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return {o["agent"]: o for o in json.loads(result.stdout)["agents"]}


def frontmatter(text: str) -> dict[str, str]:
    head = text.split("---\n")[1]
    return dict(line.split(": ", 1) for line in head.splitlines())


def test_claude_code_gets_the_sleep_skill_and_the_session_end_hook_calling_this_skillsleep(homes: Path) -> None:
    out = installed("install", "claude-code")["claude-code"]
    claude = homes / ".claude"
    skill = claude / "skills" / "sleep" / "SKILL.md"
    pack = claude / "skills" / "skillsleep" / "SKILL.md"
    plugin = claude / "skills" / "skillsleep-harvest"
    assert out["written"] == [
        str(skill),
        str(pack),
        str(plugin / ".claude-plugin" / "plugin.json"),
        str(plugin / "hooks" / "hooks.json"),
    ]
    # the pack's own skill, model-invocable, naming this skillsleep where it says what to run
    assert frontmatter(pack.read_text())["name"] == "skillsleep"
    assert f"Run `{SKILLSLEEP} sleep <verb> [args]` in the shell" in pack.read_text()
    text = skill.read_text()
    meta = frontmatter(text)
    assert meta["name"] == "sleep" and meta["disable-model-invocation"] == "true"
    assert meta["allowed-tools"] == f"Bash({SKILLSLEEP}:*)"  # only this skillsleep, nothing else
    assert (
        f"then {SKILLSLEEP} sleep --from-agent claude-code $ARGUMENTS 2>&1 || true; else echo '**Error:** Claude Code cannot run"
        in text
    )
    assert f"if type {SKILLSLEEP} >/dev/null 2>&1;" in text
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]["SessionEnd"]
    assert [h["command"] for entry in hooks for h in entry["hooks"]] == [
        f"type {SKILLSLEEP} >/dev/null 2>&1 || exit 0; trap '' HUP; event=$(cat); "
        f"(printf '%s\\n' \"$event\" | {SKILLSLEEP} harvest --hook claude-code) >/dev/null 2>&1 &"
    ]
    assert json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())["name"] == "skillsleep"
    assert any("/sleep status" in note for note in out["notes"])


def test_codex_gets_the_sleep_user_skill_hidden_from_the_model(homes: Path) -> None:
    out = installed("install", "codex")["codex"]
    skill = homes / ".codex" / "skills" / "sleep"
    pack = homes / ".codex" / "skills" / "skillsleep" / "SKILL.md"
    assert out["written"] == [str(skill / "SKILL.md"), str(skill / "agents" / "openai.yaml"), str(pack)]
    assert frontmatter(pack.read_text())["name"] == "skillsleep"
    text = (skill / "SKILL.md").read_text()
    assert frontmatter(text)["name"] == "sleep" and "description" in frontmatter(text)
    assert f"   {SKILLSLEEP} sleep --prefix '$sleep' --from-agent codex [verb] [args]\n" in text
    assert (skill / "agents" / "openai.yaml").read_text() == "policy:\n  allow_implicit_invocation: false\n"
    assert any("$sleep status" in note for note in out["notes"])


def test_the_agents_home_variables_decide_where_it_goes(
    homes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    before = snapshot(homes)
    out = installed("install", "claude-code", "codex")
    assert out["claude-code"]["written"][0] == str(tmp_path / "claude-config" / "skills" / "sleep" / "SKILL.md")
    assert out["codex"]["written"][0] == str(tmp_path / "codex-home" / "skills" / "sleep" / "SKILL.md")
    assert snapshot(homes) == before  # ~/.claude and ~/.codex untouched


def test_a_path_a_shell_must_quote_is_quoted_everywhere(tmp_path: Path) -> None:
    odd = tmp_path / "my tools" / "skill'sleep"
    ctx = InstallContext(home=tmp_path, env={}, skillsleep=odd, data_dir=tmp_path / "data")
    files = {f.path.name: f.text for f in installer("claude-code")(ctx).files if f.path.parent.name != "skillsleep"}
    quoted = shlex.quote(str(odd))
    assert (
        f"allowed-tools: Bash({quoted}:*)" in files["SKILL.md"]
        and f"then {quoted} sleep --from-agent claude-code $ARGUMENTS" in files["SKILL.md"]
    )
    command = json.loads(files["hooks.json"])["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    words = shlex.split(command)
    assert words[:2] == ["type", str(odd)] and words[-7:-3] == [str(odd), "harvest", "--hook", "claude-code)"]
    codex = installer("codex")(ctx).files[0].text
    assert f"   {quoted} sleep --prefix '$sleep' --from-agent codex" in codex


def test_a_second_install_changes_nothing(homes: Path, tmp_path: Path) -> None:
    installed("install", "claude-code", "codex")
    before = snapshot(tmp_path)
    again = cli("install", "claude-code", "codex")
    assert again.exit_code == 0
    assert "installed into claude-code: nothing to do, it was already so" in again.stdout
    assert "installed into codex: nothing to do, it was already so" in again.stdout
    assert {k: v for k, v in snapshot(tmp_path).items() if "installed/" not in k} == {
        k: v for k, v in before.items() if "installed/" not in k
    }


def test_a_file_the_user_edited_is_refused_with_the_difference_and_force_backs_it_up(homes: Path) -> None:
    installed("install", "claude-code")
    skill = homes / ".claude" / "skills" / "sleep" / "SKILL.md"
    mine = skill.read_text().replace("Do not run any command yourself.", "Keep it short.")
    skill.write_text(mine)
    Path(skill.parent.parent / "skillsleep-harvest" / "hooks" / "hooks.json").unlink()  # to be written again
    refused = cli("install", "claude-code")
    assert refused.exit_code == 2
    assert "changed by you" in refused.stderr and "nothing was written" in refused.stderr
    assert "-Show the output above to the user verbatim, as markdown. Keep it short." in refused.stderr
    assert (
        "+Show the output above to the user verbatim, as markdown. Do not run any command yourself." in refused.stderr
    )
    assert (
        skill.read_text() == mine and not (skill.parent.parent / "skillsleep-harvest" / "hooks" / "hooks.json").exists()
    )

    forced = installed("install", "claude-code", "--force")["claude-code"]
    assert Path(forced["backed_up"][0]).read_text() == mine
    assert "Do not run any command yourself." in skill.read_text()
    assert (skill.parent.parent / "skillsleep-harvest" / "hooks" / "hooks.json").exists()


def test_uninstall_leaves_the_agents_folders_as_they_were_byte_for_byte(homes: Path) -> None:
    before = snapshot(homes)
    installed("install", "claude-code", "codex")
    assert snapshot(homes) != before
    out = installed("uninstall")
    assert set(out) == {"claude-code", "codex"} and len(out["claude-code"]["removed"]) == 4
    assert snapshot(homes) == before


def test_uninstall_refuses_a_file_the_user_edited_and_removes_nothing(homes: Path) -> None:
    installed("install", "codex")
    skill = homes / ".codex" / "skills" / "sleep" / "SKILL.md"
    skill.write_text(skill.read_text() + "my note\n")
    refused = cli("uninstall", "codex")
    assert refused.exit_code == 2 and "nothing was removed" in refused.stderr and str(skill) in refused.stderr
    assert skill.exists() and (skill.parent / "agents" / "openai.yaml").exists()


def test_one_agents_refusal_stops_every_agent_before_anything_is_written_or_removed(homes: Path) -> None:
    """`install` / `uninstall` of several agents: a file the user changed in one of them refuses the
    whole command up front, so no agent is left half done and unreported."""
    skill = homes / ".codex" / "skills" / "sleep" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: sleep\ndescription: my own $sleep\n---\n")
    before = snapshot(homes)
    refused = cli("install", "claude-code", "codex")
    assert refused.exit_code == 2 and "nothing was written" in refused.stderr
    assert snapshot(homes) == before  # claude-code was not installed either

    skill.unlink()
    installed("install", "claude-code", "codex")
    skill.write_text(skill.read_text() + "my edit\n")
    written = snapshot(homes)
    refused = cli("uninstall")
    assert refused.exit_code == 2 and "nothing was removed" in refused.stderr
    assert snapshot(homes) == written  # claude-code's files are still there
