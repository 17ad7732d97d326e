"""skillsleep inside the real OpenClaw (2026.9.6): `skillsleep install openclaw` links the plugin and
OpenClaw lists it with its /sleep command and the `skillsleep` skill; through a Gateway this module
starts (and stops), `/sleep …` in a chat is answered by skillsleep with no model call; `schedule
--openclaw` puts the night in the gateway's cron, where `cron run` runs a whole night (the scripted
backend of sleep_kit). Everything here is slow: a gateway takes ~12 s and ~0.9 GB to start, so one
serves the whole module, and each OpenClaw command takes seconds on two shared cores.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_server import AgentServer
from conftest import AgentTools
from servers import free_port
from sleep_kit import write_chat_logs, write_scripts

from skillsleep.core.report.proposals import Proposals

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent  # this checkout's skillsleep
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class OpenClaw:
    """A user's OpenClaw (state dir, config on a free port) with skillsleep installed into it."""

    root: Path
    env: dict[str, str]
    server: AgentServer
    tools: AgentTools
    installed: dict[str, Any]

    @property
    def state(self) -> Path:
        return Path(self.env["OPENCLAW_STATE_DIR"])

    @property
    def data(self) -> Path:
        return Path(self.env["SKILLSLEEP_HOME"])

    def run(self, *argv: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
        )

    def openclaw_json(self, *args: str, **env: str) -> Any:
        done = self.run("openclaw", *args, "--json", **env)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return json.loads(done.stdout)

    def skillsleep(self, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "skillsleep"), *args],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=300,
            cwd=cwd or self.root,
            stdin=subprocess.DEVNULL,
        )

    def skill(self, **env: str) -> dict[str, Any]:
        """The `skillsleep` skill as `openclaw skills list` shows it."""
        found = self.openclaw_json("skills", "list", **env)
        [entry] = [s for s in found["skills"] if s["name"] == "skillsleep"]
        return dict(entry)

    def chat(self, message: str) -> str:
        """`message` sent through the Gateway's chat (where plugin commands run); the reply's text."""
        key, sent = f"agent:main:{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex}"
        self.openclaw_json(
            "gateway",
            "call",
            "chat.send",
            "--params",
            json.dumps({"sessionKey": key, "message": message, "idempotencyKey": sent}),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            history = self.openclaw_json(
                "gateway", "call", "chat.history", "--params", json.dumps({"sessionKey": key, "limit": 20})
            )
            messages = history.get("messages", [])
            asked = [i for i, m in enumerate(messages) if str(m.get("idempotencyKey", "")).startswith(sent)]
            replies = [m for m in messages[asked[0] + 1 :] if m.get("role") == "assistant"] if asked else []
            if replies:
                content = replies[0]["content"]
                return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
            time.sleep(1)
        raise AssertionError(f"no reply to {message!r} within 120 s")


def user_openclaw(root: Path, agent_tools: AgentTools, server: AgentServer, *, port: int) -> dict[str, str]:
    """A fresh OpenClaw state dir with a config (model: the scripted server; gateway: local, `port`)."""
    state = root / "state"
    state.mkdir(parents=True)
    config = {
        "update": {"checkOnStart": False},
        "models": {
            "providers": {
                "stub": {
                    "baseUrl": f"{server.url}/v1",
                    "apiKey": "dummy",
                    "api": "openai-completions",
                    "models": [{"id": "stub-model", "name": "stub-model"}],
                }
            }
        },
        "agents": {"defaults": {"model": {"primary": "stub/stub-model"}}},
        "gateway": {
            "mode": "local",
            "port": port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": "skillsleep-test"},
        },
    }
    (state / "openclaw.json").write_text(json.dumps(config, indent=2))
    return {
        "PATH": f"{agent_tools.node24}:{BIN}:{agent_tools.bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(root / "home"),
        "OPENCLAW_STATE_DIR": str(state),
        "XDG_CACHE_HOME": str(root / "cache"),
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "DO_NOT_TRACK": "1",
        "SKILLSLEEP_HOME": str(root / "data"),
        "LANG": "C.UTF-8",
    }


def start_gateway(oc: OpenClaw) -> subprocess.Popen[bytes]:
    with (oc.root / "gateway.log").open("wb") as log:  # the gateway writes to its own copy of the handle
        gateway = subprocess.Popen(
            ["openclaw", "gateway", "run"],
            env=oc.env,
            cwd=oc.root,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if "[gateway] ready" in _ANSI.sub("", (oc.root / "gateway.log").read_text(errors="replace")):
            return gateway
        if gateway.poll() is not None:
            break
        time.sleep(0.5)
    stop_gateway(gateway)
    raise AssertionError(f"the gateway did not get ready:\n{(oc.root / 'gateway.log').read_text()[-3000:]}")


def stop_gateway(gateway: subprocess.Popen[bytes]) -> None:
    """SIGTERM to its process group (`openclaw gateway stop` only manages the installed service)."""
    if gateway.poll() is None:
        os.killpg(gateway.pid, signal.SIGTERM)
        try:
            gateway.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(gateway.pid, signal.SIGKILL)
            gateway.wait(30)


@pytest.fixture(scope="module")
def oc(agent_tools: AgentTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenClaw]:
    """skillsleep installed into a fresh OpenClaw, then one Gateway for the module (stopped after it)."""
    root = tmp_path_factory.mktemp("openclaw")
    with AgentServer() as server:
        oc = OpenClaw(root, user_openclaw(root, agent_tools, server, port=free_port()), server, agent_tools, {})
        done = oc.skillsleep("install", "openclaw", "--json")
        assert done.returncode == 0, done.stderr
        oc.installed = json.loads(done.stdout)
        gateway = start_gateway(oc)
        try:
            yield oc
        finally:
            stop_gateway(gateway)


# --- install, list --------------------------------------------------------------------------------------


def test_install_links_the_plugin_and_openclaw_lists_it_with_sleep_and_the_skill(oc: OpenClaw) -> None:
    [agent] = oc.installed["agents"]
    folder = oc.state / "skillsleep-plugin"
    assert agent["ran"] == ["link the plugin into OpenClaw", "enable the plugin"]
    assert json.loads((folder / "config.json").read_text())["command"] == str(BIN / "skillsleep")
    [plugin] = [p for p in oc.openclaw_json("plugins", "list")["plugins"] if p["id"] == "skillsleep"]
    assert (plugin["status"], plugin["enabled"], plugin["commands"]) == ("loaded", True, ["sleep"])
    assert Path(plugin["rootDir"]) == folder

    listed = oc.skill()  # asked of the running gateway, whose PATH has skillsleep
    assert listed["userInvocable"] is True and listed["eligible"] is True


def test_a_second_install_changes_nothing_and_an_edited_plugin_file_is_kept(oc: OpenClaw) -> None:
    config = (oc.state / "openclaw.json").read_bytes()
    done = oc.skillsleep("install", "openclaw", "--json")
    assert done.returncode == 0, done.stderr
    [agent] = json.loads(done.stdout)["agents"]
    assert (agent["written"], agent["ran"]) == ([], []) and (oc.state / "openclaw.json").read_bytes() == config
    skill = oc.state / "skillsleep-plugin" / "skills" / "skillsleep" / "SKILL.md"
    mine = skill.read_text() + "Also say good night.\n"
    skill.write_text(mine)
    try:
        done = oc.skillsleep("install", "openclaw")
        assert done.returncode == 2 and "+Also say good night." not in done.stderr
        assert "-Also say good night." in done.stderr and "skillsleep install openclaw --force" in done.stderr
        assert skill.read_text() == mine and (oc.state / "openclaw.json").read_bytes() == config
    finally:
        skill.write_text(mine.removesuffix("Also say good night.\n"))


# --- /sleep through the gateway -------------------------------------------------------------------------


def test_sleep_status_in_a_chat_is_skillsleeps_markdown_with_no_model_call(oc: OpenClaw) -> None:
    asked = len(oc.server.seen)
    reply = oc.chat("/sleep status")
    direct = oc.skillsleep("sleep", "status", SKILLSLEEP_HARNESS="openclaw")
    assert reply == direct.stdout.strip()
    assert reply.startswith("**skillsleep**: 0 night(s), 0 pending proposal(s)")
    assert len(oc.server.seen) == asked  # a command of the gateway, not a model turn
    print(f"\n/sleep status shows:\n{reply}")


def test_sleep_adopt_puts_a_staged_proposal_live_and_bad_input_changes_nothing(oc: OpenClaw) -> None:
    live = oc.root / "skills" / "fmt" / "SKILL.md"
    live.parent.mkdir(parents=True)
    live.write_text("---\nname: fmt\ndescription: format answers\n---\nAnswer briefly.\n")
    new = "---\nname: fmt\ndescription: format answers\n---\nAnswer briefly.\nEnd with `ANSWER: <answer>`.\n"
    proposal = Proposals(oc.data).stage(live, new, accepted=True, reason="better on held-out tasks")
    asked = len(oc.server.seen)
    reply = oc.chat("/sleep frobnicate")
    assert reply.startswith("**Error:** unknown /sleep verb 'frobnicate'. Known: adopt, cost, diff, help")
    reply = oc.chat("/sleep adopt")
    assert reply.startswith(f"Adopted proposal `{proposal.id}` into {live}")
    assert live.read_text() == new
    reply = oc.chat("/sleep adopt")
    assert reply.startswith("**Error:** there is no pending accepted proposal") and live.read_text() == new
    # two skills waiting: a skill's name typed after /sleep adopt reaches skillsleep as typed
    review = oc.root / "skills" / "review-pr" / "SKILL.md"
    review.parent.mkdir(parents=True)
    review.write_bytes(b"---\r\nname: review-pr\r\n---\r\nRead the diff.\r\n")
    theirs = Proposals(oc.data).stage(
        review, "---\r\nname: review-pr\r\n---\r\nRead it twice.\r\n", accepted=True, reason="x"
    )
    Proposals(oc.data).stage(live, new + "Cite.\n", accepted=True, reason="better on held-out tasks")
    reply = oc.chat("/sleep adopt review-pr")
    assert reply.startswith(f"Adopted proposal `{theirs.id}` into {review}") and live.read_text() == new
    reply = oc.chat("/sleep adopt --all")
    assert reply.startswith("**adopt --all**: 1 adopted, 0 refused") and live.read_text() == new + "Cite.\n"
    assert review.read_bytes() == b"---\r\nname: review-pr\r\n---\r\nRead it twice.\r\n"
    assert len(oc.server.seen) == asked


def test_a_missing_skillsleep_inside_the_agent_is_a_reply_saying_what_to_do(oc: OpenClaw) -> None:
    key = "plugins.entries.skillsleep.config.command"
    assert oc.run("openclaw", "config", "set", key, "/nowhere/skillsleep").returncode == 0
    try:
        for _ in range(10):  # the gateway applies the change by hot reload, shortly after
            reply = oc.chat("/sleep status")
            if reply.startswith("**Error:**"):
                break
        assert reply.startswith("**Error:** /sleep cannot find skillsleep at `/nowhere/skillsleep`")
        assert "skillsleep install openclaw" in reply
    finally:
        assert oc.run("openclaw", "config", "unset", key).returncode == 0


# --- the night in OpenClaw's cron -------------------------------------------------------------------------


def test_schedule_openclaw_runs_a_whole_night_through_the_gateways_cron(oc: OpenClaw) -> None:
    night = oc.root / "night"
    write_scripts(night)
    write_chat_logs(night / "chats")
    env = {"SKILLSLEEP_HOME": str(night / "data")}
    flags = [
        "--backend",
        "scripted",
        "--optimizer-model",
        str(night / "opt.json"),
        "--target-model",
        str(night / "target.json"),
        "--since",
        "3650d",
        "--chat-dir",
        "chats",
    ]
    done = oc.skillsleep("schedule", "--openclaw", "--at", "03:00", *flags, "--json", cwd=night, **env)
    assert done.returncode == 0, done.stderr
    again = oc.skillsleep("schedule", "--openclaw", "--at", "03:15", *flags, "--json", cwd=night, **env)
    assert again.returncode == 0 and json.loads(again.stdout)["replaced"] is True, again.stderr
    [job] = [j for j in oc.openclaw_json("cron", "list", "--all")["jobs"] if j["name"] == "skillsleep-night"]
    assert job["schedule"]["expr"] == "15 3 * * *"
    ran = oc.openclaw_json("cron", "run", job["id"], "--wait", "--wait-timeout", "5m", "--poll-interval", "1s")
    assert (ran["ok"], ran["completionStatus"]) == (True, "succeeded"), ran
    record = json.loads((night / "data" / "nights" / "0001" / "night.json").read_text())
    assert record["outcome"] == "accepted"
    assert record["sessions"] >= 18  # the kit's chat logs, and the /sleep chats of this gateway's transcripts
    status = json.loads(oc.skillsleep("status", "--json", **env).stdout)["schedule"]
    assert [(x["via"], x["when"]) for x in status["scheduled"] if x["via"] == "openclaw"] == [
        ("openclaw", "03:15 daily")
    ]
    assert (status["last_run"]["outcome"], status["last_run"]["night"]) == ("accepted", 1)
    done = oc.skillsleep("unschedule", "--openclaw", **env)
    assert done.returncode == 0, done.stderr
    assert not [j for j in oc.openclaw_json("cron", "list", "--all")["jobs"] if j["name"] == "skillsleep-night"]
    assert "via openclaw" not in oc.skillsleep("status", **env).stdout


def test_schedule_openclaw_without_a_running_gateway_says_how_to_start_it(oc: OpenClaw) -> None:
    other = oc.root / "no-gateway"
    env = user_openclaw(other, oc.tools, oc.server, port=free_port())
    done = oc.skillsleep("schedule", "--openclaw", "--at", "03:00", **env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "no OpenClaw gateway answers (Gateway not reachable at ws://127.0.0.1:" in done.stderr
    assert "openclaw gateway run" in done.stderr and "nothing was changed" in done.stderr
    assert not (other / "data" / "schedule").exists()


# --- uninstall --------------------------------------------------------------------------------------------


def test_the_skill_needs_skillsleep_on_path_and_uninstall_leaves_openclaws_state_as_it_was(
    agent_tools: AgentTools, tmp_path: Path
) -> None:
    with AgentServer() as server:
        mine = OpenClaw(
            tmp_path, user_openclaw(tmp_path, agent_tools, server, port=free_port()), server, agent_tools, {}
        )
        before = json.loads((mine.state / "openclaw.json").read_text())
        done = mine.skillsleep("install", "openclaw")
        assert done.returncode == 0, done.stderr
        assert mine.skill()["eligible"] is True
        without = mine.skill(PATH=mine.env["PATH"].replace(f"{BIN}:", ""))  # no gateway: OpenClaw checks this PATH
        assert without["eligible"] is False and without["missing"]["bins"] == ["skillsleep"]  # "needs setup"
        done = mine.skillsleep("uninstall", "openclaw", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["agents"][0]["ran"] == ["undo: link the plugin into OpenClaw"]
        after = json.loads((mine.state / "openclaw.json").read_text())
        assert after["plugins"]["entries"].pop("skillsleep") == {"enabled": False}  # OpenClaw's uninstall marker
        assert not after["plugins"]["entries"] and not after["plugins"].get("load", {}).get("paths")
        ignored = ("plugins", "meta")  # meta: OpenClaw's own bookkeeping, written with any change of the file
        assert {k: v for k, v in after.items() if k not in ignored} == {
            k: v for k, v in before.items() if k not in ignored
        }
        assert not (mine.state / "skillsleep-plugin").exists()
        listed = mine.openclaw_json("plugins", "list")["plugins"]
        assert not [p for p in listed if p["id"] == "skillsleep" and p["status"] == "loaded"]
