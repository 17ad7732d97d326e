"""/sleep inside the real agents (slow): the pinned `claude` and `codex` (tests/conftest.py
`agent_tools`) against the scripted model server (tests/agent_server.py), with skillsleep's state,
the agents' homes and a live skill in temporary folders.

- Claude Code: plugins/claude-code validates; with `--plugin-dir` a typed `/sleep …` inlines the
  verb's markdown into the model request, `/sleep adopt` changes the live skill (`/sleep adopt NAME`
  that skill's only, `/sleep adopt --all` each skill's), bad input gives
  its message, and the SessionEnd hook harvests the session it ends (a session of nothing but /sleep
  verbs is read and never stored); after `skillsleep install
  claude-code` the same works with no plugin flag and no skillsleep on PATH.
- Codex: after `skillsleep install codex`, `$sleep …` injects the skill and the model's shell call
  (scripted: the command the installed skill names) runs the verb, whose markdown comes back
  (`$sleep adopt NAME` adopts that skill's proposal only);
  plugins/codex installs from a local marketplace as `$skillsleep:sleep`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_server import AgentServer
from click.testing import CliRunner
from conftest import AgentTools

from skillsleep.core.models.store import Store
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.shared.session import source_key
from skillsleep.harnesses.install import Installs, installer
from skillsleep.harnesses.install_plan import InstallContext
from skillsleep.slash_commands.agent_installs import skillsleep_command
from skillsleep.slash_commands.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = str(Path(sys.executable).parent)  # where this installation's `skillsleep` is
OLD = "---\nname: fmt\ndescription: answer format\n---\n# Format\n\n- Be brief.\n"
NEW = OLD + "- End with `ANSWER: <answer>`.\n"
REVIEW = b"---\r\nname: review-pr\r\ndescription: review a pull request\r\n---\r\n- Read the diff first.\r\n"
REVIEW_NEW = REVIEW + b"- Name the risky line.\r\n"


class World:
    """Temporary HOME, agent homes, skillsleep data and a live skill; `env` is what the agents get."""

    def __init__(self, root: Path, agent_tools: AgentTools, server: AgentServer) -> None:
        self.root, self.data, self.home = root, root / "data", root / "home"
        self.cwd = root / "project"
        self.live = root / "skills" / "fmt" / "SKILL.md"
        for folder in (self.home, self.cwd, self.live.parent, root / "tmp"):
            folder.mkdir(parents=True)
        self.live.write_text(OLD)
        self.tools = agent_tools
        self.server = server
        self.env = {
            "PATH": agent_tools.path_env(),
            "HOME": str(self.home),
            "SKILLSLEEP_HOME": str(self.data),
            "TMPDIR": str(root / "tmp"),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            "CODEX_HOME": str(self.home / ".codex"),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "dummy",
            "STUB_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }

    def with_skillsleep_on_path(self) -> dict[str, str]:
        return {**self.env, "PATH": f"{VENV_BIN}:{self.env['PATH']}"}

    def stage(self, text: str = NEW) -> str:
        """A pending accepted proposal for the live skill, as a night stages it."""
        return Proposals(self.data).stage(self.live, text, accepted=True, reason="0.40 → 0.70").id

    def skillsleep(self, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
        """`skillsleep ARGS --json` in this world's environment (install, uninstall)."""
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        result = CliRunner().invoke(main, [*args, "--json"])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    def run(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            env=env or self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )

    def claude(self, prompt: str, *flags: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        """One `claude -p` turn; its JSON result. What reached the model: `self.sent()`."""
        self.server.seen.clear()
        done = self.run([str(self.tools.bin / "claude"), "-p", "--output-format", "json", *flags, "--", prompt], env)
        assert done.returncode == 0, done.stderr
        assert "hook" not in done.stderr.lower(), done.stderr  # the SessionEnd hook never shows
        return dict(json.loads(done.stdout))

    def codex(self, prompt: str, *flags: str) -> tuple[str, str]:
        """One `codex exec` turn: (the first model request as text, the output of the shell call the
        model made, as Codex sent it back)."""
        self.server.seen.clear()
        done = self.run(
            [
                str(self.tools.bin / "codex"),
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--ephemeral",
                "-s",
                "workspace-write",
                *flags,
                "--",
                prompt,
            ]
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs = [
            item["output"]
            for s in self.server.seen
            for item in s.body.get("input", [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        return json.dumps(self.server.seen[0].body), str(outputs[-1]) if outputs else ""

    def sent(self) -> str:
        return self.server.requests_text()

    def harvested(self) -> dict[str, list[str]]:
        """Claude Code sessions in skillsleep's state: id → the commands typed."""
        if not (self.data / "state.db").exists():
            return {}
        store = Store(self.data / "state.db")
        try:
            return {s.id: [t.text for t in s.turns if t.kind == "command"] for s in store.sessions("claude-code")}
        finally:
            store.close()

    def hook_read(self, sessions: int) -> set[str]:
        """The Claude Code sessions whose transcripts a harvest read (stored or not): their ids, once
        there are `sessions` of them or after a minute. The SessionEnd hook harvests in the background,
        after `claude` has exited. A session of nothing but /sleep verbs is read by the hook and never
        stored (docs/harvest.md)."""
        deadline = time.monotonic() + 60
        while True:
            read = self._read()
            if len(read) >= sessions or time.monotonic() > deadline:
                return read
            time.sleep(0.1)

    def _read(self) -> set[str]:
        if not (self.data / "state.db").exists():
            return set()
        store = Store(self.data / "state.db")
        try:
            found = (self.home / ".claude" / "projects").rglob("*.jsonl")
            return {p.stem for p in found if store.cursor(source_key(p)) is not None}
        finally:
            store.close()


@pytest.fixture
def world(tmp_path: Path, agent_tools: AgentTools, agent_server: AgentServer) -> Iterator[World]:
    yield World(tmp_path, agent_tools, agent_server)


# --- Claude Code ----------------------------------------------------------------------------------


def test_the_claude_code_plugin_validates(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = world.run(
        [str(world.tools.bin / "claude"), "plugin", "validate", "--json", str(ROOT / "plugins" / "claude-code")]
    )
    assert bundled.returncode == 0, bundled.stdout
    report = json.loads(bundled.stdout)
    assert report["success"] is True and report["manifest"]["errors"] == []
    assert report["provides"]["skills"] == ["skillsleep:sleep"]
    assert [(h["event"], h["command"]) for h in report["provides"]["hooks"]] == [
        (
            "SessionEnd",
            "type skillsleep >/dev/null 2>&1 || exit 0; trap '' HUP; event=$(cat); "
            "(printf '%s\\n' \"$event\" | skillsleep harvest --hook claude-code) >/dev/null 2>&1 &",
        )
    ]
    world.skillsleep(monkeypatch, "install", "claude-code")  # the hook plugin as installed, full path and all
    installed = world.run(
        [
            str(world.tools.bin / "claude"),
            "plugin",
            "validate",
            "--json",
            str(world.home / ".claude" / "skills" / "skillsleep-harvest"),
        ]
    )
    assert installed.returncode == 0 and json.loads(installed.stdout)["success"] is True


def test_sleep_in_claude_code_with_the_plugin(world: World) -> None:
    """`claude --plugin-dir plugins/claude-code`: /sleep status, adopt and bad input; the hook harvests."""
    env = world.with_skillsleep_on_path()
    plugin = ("--plugin-dir", str(ROOT / "plugins" / "claude-code"))
    pid = world.stage()

    result = world.claude("/sleep status", *plugin, env=env)
    assert result["num_turns"] == 1 and not result["is_error"], json.dumps(result)
    sent = world.sent()
    assert "<command-name>/skillsleep:sleep</command-name>" in sent  # the bare name reached the plugin's skill
    assert "**skillsleep**: 0 night(s), 1 pending proposal(s)" in sent and f"`/sleep adopt {pid}`" in sent
    # the hook read that session, and stored none of it: nothing but /sleep, skillsleep's own
    assert world.hook_read(1) == {result["session_id"]} and world.harvested() == {}
    assert not (world.data / "logs" / "hooks.log").exists()

    world.claude("/sleep adopt", *plugin, env=env)
    assert f"Adopted proposal `{pid}`" in world.sent() and world.live.read_text() == NEW
    assert Proposals(world.data).get(pid).status == "adopted"
    (action,) = [a for a in Proposals(world.data).history() if a.kind == "adopt"]
    assert action.proposal_id == pid and action.backup and Path(action.backup).is_dir()

    world.claude("/sleep adopt", *plugin, env=env)  # nothing pending any more
    assert "**Error:** there is no pending accepted proposal" in world.sent() and world.live.read_text() == NEW
    world.claude("/sleep stauts", *plugin, env=env)
    assert "**Error:** unknown /sleep verb 'stauts'. Did you mean 'status'?" in world.sent()

    staged = world.stage(NEW + "- Cite the source.\n")
    world.live.write_text(NEW + "- my own line\n")  # the user edits the live skill after the night staged
    world.claude(f"/sleep adopt {staged}", *plugin, env=env)
    assert "**Error:**" in world.sent() and "my own line" in world.sent()
    assert world.live.read_text() == NEW + "- my own line\n" and Proposals(world.data).get(staged).status == "staged"
    assert len(world.hook_read(5)) == 5 and world.harvested() == {}  # every session read as it ended, none stored


def test_the_session_end_hook_harvests_after_claude_code_exits_however_slowly_skillsleep_starts(
    world: World,
) -> None:
    """Claude Code cancels a SessionEnd hook after 1.5 s and says "Hook cancelled" as the session ends
    (on a loaded machine Python alone can take that long): the hook harvests in the background, so a
    `skillsleep` that takes 3 s to start still harvests the session, and the session ends quietly."""
    slow = world.root / "slow-bin"
    slow.mkdir()
    (slow / "skillsleep").write_text(f'#!/bin/sh\n[ "$1" = harvest ] && sleep 3\nexec {VENV_BIN}/skillsleep "$@"\n')
    (slow / "skillsleep").chmod(0o755)
    env = {**world.env, "PATH": f"{slow}:{world.env['PATH']}"}
    result = world.claude("/sleep status", "--plugin-dir", str(ROOT / "plugins" / "claude-code"), env=env)
    assert not result["is_error"]  # and nothing about the hook on stderr (World.claude)
    assert world.hook_read(1) == {result["session_id"]}
    assert not (world.data / "logs" / "hooks.log").exists()


def test_sleep_adopt_by_skill_name_in_claude_code(world: World) -> None:
    """Two skills with pending proposals: `/sleep adopt fmt` typed in Claude Code reaches the CLI as
    typed and adopts fmt's only (the other skill's file byte for byte as it was); `/sleep adopt --all`
    then adopts the other one."""
    env = world.with_skillsleep_on_path()
    plugin = ("--plugin-dir", str(ROOT / "plugins" / "claude-code"))
    review = world.root / "skills" / "review-pr" / "SKILL.md"
    review.parent.mkdir(parents=True)
    review.write_bytes(REVIEW)
    theirs = Proposals(world.data).stage(review, REVIEW_NEW.decode(), accepted=True, reason="0.40 → 0.70").id
    pid = world.stage()

    world.claude("/sleep status", *plugin, env=env)
    sent = world.sent()
    assert f"- **fmt**: Proposal `{pid}`" in sent and f"- **review-pr**: Proposal `{theirs}`" in sent
    assert "`/sleep adopt --all` each skill's" in sent

    world.claude("/sleep adopt fmt", *plugin, env=env)
    assert f"Adopted proposal `{pid}`" in world.sent() and world.live.read_text() == NEW
    assert review.read_bytes() == REVIEW  # the other skill: untouched, byte for byte
    assert Proposals(world.data).get(theirs).status == "staged"

    world.claude("/sleep adopt reveiw-pr", *plugin, env=env)  # a typo: the skills with proposals are named
    assert "**Error:** 'reveiw-pr' is not a staged proposal nor the name of a skill with one" in world.sent()
    assert "review-pr (" in world.sent() and review.read_bytes() == REVIEW

    world.claude("/sleep adopt --all", *plugin, env=env)
    assert "**adopt --all**: 1 adopted, 0 refused" in world.sent() and f"adopted proposal `{theirs}`" in world.sent()
    assert review.read_bytes() == REVIEW_NEW and world.live.read_text() == NEW


def test_sleep_in_claude_code_without_skillsleep_on_path_says_what_to_do(world: World) -> None:
    result = world.claude("/sleep status", "--plugin-dir", str(ROOT / "plugins" / "claude-code"))
    assert result["num_turns"] == 1  # the turn went on: the message reached the model
    sent = world.sent()
    assert "**Error:** Claude Code cannot run skillsleep here" in sent and "skillsleep install claude-code" in sent
    assert "command not found" not in sent
    assert world.harvested() == {} and not world.data.exists()  # the hook found no skillsleep and kept quiet


def test_installed_sleep_works_in_claude_code_without_a_plugin_flag_or_path(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = world.skillsleep(monkeypatch, "install", "claude-code")["agents"][0]
    assert len(installed["written"]) == 4
    pid = world.stage()
    result = world.claude("/sleep status")  # PATH without skillsleep: the skill has its full path
    sent = world.sent()
    assert "<command-name>/sleep</command-name>" in sent  # the user skill: a bare /sleep
    assert f"`/sleep adopt {pid}`" in sent
    # the skill says where it runs: a night started here would use Claude Code as harness and model
    assert "Next night: replays in claude-code, claude-code as the model ← claude-code (the agent this command " in sent
    assert world.hook_read(1) == {result["session_id"]} and world.harvested() == {}  # the installed hook

    world.skillsleep(monkeypatch, "uninstall", "claude-code")
    world.claude("/sleep status")
    assert f"`/sleep adopt {pid}`" not in world.sent()  # gone: no /sleep skill any more

    # an installation that was removed since: the message says what to do
    gone = InstallContext(
        home=world.home, env=world.env, skillsleep=world.root / "removed" / "skillsleep", data_dir=world.data
    )
    Installs(world.data).install(installer("claude-code")(gone))
    world.claude("/sleep status")
    assert "**Error:** Claude Code cannot run skillsleep here" in world.sent()
    assert "No such file" not in world.sent()


# --- Codex ------------------------------------------------------------------------------------------


def codex_config(world: World) -> None:
    """Codex on the scripted server, no network features."""
    codex_home = world.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "stub-model"\nmodel_provider = "local"\ncheck_for_update_on_startup = false\n'
        "[analytics]\nenabled = false\n[features]\nremote_plugin = false\napps = false\n"
        f'[model_providers.local]\nname = "local"\nbase_url = "{world.server.url}/v1"\nwire_api = "responses"\n'
        'env_key = "STUB_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
    )


def test_sleep_in_codex_after_install(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$sleep …` injects the installed skill; the shell call it names runs the verb (login shell, no
    skillsleep on PATH: the skill has the full path) and its markdown reaches the model."""
    codex_config(world)
    world.skillsleep(monkeypatch, "install", "codex")
    skill = world.home / ".codex" / "skills" / "sleep" / "SKILL.md"
    command = next(
        line.strip() for line in skill.read_text().splitlines() if line.startswith("   ") and " sleep --prefix " in line
    )
    assert command == f"{skillsleep_command()} sleep --prefix '$sleep' --from-agent codex [verb] [args]"
    pid = world.stage()

    def sleep(words: str) -> list[str]:
        return world.codex(f"$sleep {words}\nSTUB_TOOL: {command.replace('[verb] [args]', words)}")

    request, output = sleep("status")
    assert "<name>sleep</name>" in request and str(skill) in request  # $sleep brought the skill in
    assert "Process exited with code 0" in output
    assert "**skillsleep**: 0 night(s), 1 pending proposal(s)" in output and f"`$sleep adopt {pid}`" in output
    assert "Next night: replays in codex, codex as the model ← codex (the agent this command was typed in)" in output

    _, output = sleep("adopt")
    assert f"Adopted proposal `{pid}`" in output and world.live.read_text() == NEW
    _, output = sleep("adopt")
    assert "**Error:** there is no pending accepted proposal" in output
    _, output = sleep("stauts")
    assert "**Error:** unknown $sleep verb 'stauts'" in output

    # a sandbox in which skillsleep's data folder, then only the live skill, is read-only (/tmp is, here):
    # the message says so and what to do, nothing changes
    sandbox = (
        "-c",
        "sandbox_workspace_write.exclude_slash_tmp=true",
        "-c",
        "sandbox_workspace_write.exclude_tmpdir_env_var=true",
    )
    world.stage(NEW + "- Cite the source.\n")
    _, output = world.codex(f"$sleep adopt\nSTUB_TOOL: {command.replace('[verb] [args]', 'adopt')}", *sandbox)
    assert "**Error:**" in output and "read-only file system here" in output and "Traceback" not in output
    in_workspace = world.cwd / "skillsleep-data"
    shutil.copytree(world.data, in_workspace)  # the workspace is writable, /tmp not
    world.env["SKILLSLEEP_HOME"] = str(in_workspace)
    _, output = world.codex(f"$sleep adopt\nSTUB_TOOL: {command.replace('[verb] [args]', 'adopt')}", *sandbox)
    assert f"**Error:** could not write {world.live.parent}" in output and "Read-only file system" in output
    assert "with permission to write there" in output and "Traceback" not in output
    assert world.live.read_text() == NEW
    assert [p.status for p in Proposals(in_workspace).list()].count("staged") == 1


def test_sleep_adopt_by_skill_name_in_codex(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$sleep adopt review-pr` in Codex (the installed skill's command with the words as typed) adopts
    that skill's proposal only: fmt's file stays as it was."""
    codex_config(world)
    world.skillsleep(monkeypatch, "install", "codex")
    skill = world.home / ".codex" / "skills" / "sleep" / "SKILL.md"
    command = next(
        line.strip() for line in skill.read_text().splitlines() if line.startswith("   ") and " sleep --prefix " in line
    )
    review = world.root / "skills" / "review-pr" / "SKILL.md"
    review.parent.mkdir(parents=True)
    review.write_bytes(REVIEW)
    theirs = Proposals(world.data).stage(review, REVIEW_NEW.decode(), accepted=True, reason="0.40 → 0.70").id
    pid = world.stage()
    _, output = world.codex(f"$sleep adopt review-pr\nSTUB_TOOL: {command.replace('[verb] [args]', 'adopt review-pr')}")
    assert f"Adopted proposal `{theirs}`" in output and "`$sleep rollback`" in output
    assert review.read_bytes() == REVIEW_NEW and world.live.read_text() == OLD  # fmt: untouched
    assert Proposals(world.data).get(pid).status == "staged"


def test_the_codex_plugin_installs_from_a_local_marketplace(world: World) -> None:
    codex_config(world)
    market = world.root / "market"
    shutil.copytree(ROOT / "plugins" / "codex", market / "plugins" / "skillsleep")
    (market / ".agents" / "plugins").mkdir(parents=True)
    (market / ".agents" / "plugins" / "marketplace.json").write_text(
        json.dumps(
            {
                "name": "skillsleep-local",
                "plugins": [
                    {
                        "name": "skillsleep",
                        "source": {"source": "local", "path": "./plugins/skillsleep"},
                        "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
                        "category": "Productivity",
                    }
                ],
            }
        )
    )
    codex = str(world.tools.bin / "codex")
    for argv in (
        [codex, "plugin", "marketplace", "add", str(market)],
        [codex, "plugin", "add", "skillsleep@skillsleep-local"],
    ):
        done = world.run(argv)
        assert done.returncode == 0, done.stderr
    env = world.with_skillsleep_on_path()
    world.env = env
    request, output = world.codex(
        "$skillsleep:sleep status\nSTUB_TOOL: skillsleep sleep --prefix '$sleep' status",
        "-c",
        "allow_login_shell=false",
    )
    assert "<name>skillsleep:sleep</name>" in request and "skillsleep sleep --prefix '$sleep'" in request
    assert "No nights yet: `$sleep run` starts one." in output


def test_sleep_run_in_claude_code_starts_a_detached_night_with_claude_code_as_harness_and_model(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/sleep run` typed in the real Claude Code (after `skillsleep install claude-code`, with Codex
    installed later so that the newest-installed rule alone would pick Codex): the night it starts in
    the background replays in Claude Code and sends every model call to Claude Code's headless mode,
    and stages a proposal."""
    import re

    from sleep_kit import TARGET_RULES, optimizer_rules, write_chat_logs

    write_chat_logs(world.root / "chats")
    world.env["SKILLSLEEP_CHAT_DIRS"] = str(world.root / "chats")
    world.server.rules = [(re.compile(r["match"]), r["reply"]) for r in optimizer_rules() + TARGET_RULES]
    world.skillsleep(monkeypatch, "install", "claude-code")
    world.skillsleep(monkeypatch, "install", "codex")
    world.claude("/sleep run")
    assert "Night 1 started in the background (pid " in world.sent()  # the verb's line reached the model

    record = world.data / "nights" / "0001" / "night.json"
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline and not (
        record.exists() and json.loads(record.read_text())["status"] != "running"
    ):
        time.sleep(1)
    night = json.loads(record.read_text())
    assert night["status"] == "finished" and night["harness"] == "claude-code", night
    ledger = [json.loads(line) for line in (record.parent / "ledger.jsonl").read_text().splitlines()]
    assert ledger and {e["provider"] for e in ledger} == {"claude-code"}
    assert night["outcome"] == "accepted" and night["proposal_id"], night
