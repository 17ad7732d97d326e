"""plugins/openclaw/: the OpenClaw plugin as data in the package. Its /sleep command (index.js, run
by node here with a recording `skillsleep`) passes the raw text to `skillsleep sleep --line` under
the plugin's settings and returns what it printed, never throwing; the Python entry points apply
the same settings; the held-out task files load and tell a good reply from a poor one.

The plugin inside the real OpenClaw (installed, listed, `/sleep` through a gateway, its cron job)
is tests/test_openclaw_gateway.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from agent_server import AgentServer
from click.testing import CliRunner
from conftest import AgentTools

from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.train.tasks import load_tasks
from skillsleep.slash_commands.cli import main

PLUGIN = Path(str(resources.files("skillsleep.plugins") / "openclaw"))
BUNDLE = [
    "openclaw.plugin.json",
    "package.json",
    "index.js",
    "config.json",
    "skills/skillsleep/SKILL.md",
    "run_sleep.py",
    "slash_sleep.py",
    "run_sleep_cron.sh",
]
TASK_FILES = ["research-cron-tasks.json", "devops-tasks.json", "wiki-tasks.json"]
# A good and a poor reply to every held-out task, written for these tests: {file: {task id: {good, poor}}}
REPLIES = json.loads((Path(__file__).parent / "fixtures" / "openclaw-task-replies.json").read_text(encoding="utf-8"))

# A `skillsleep` that records its arguments and SKILLSLEEP_* environment, then prints what it is told.
RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD"], "w") as f:
    json.dump({{"argv": sys.argv[1:], "env": {{k: v for k, v in os.environ.items() if k.startswith("SKILLSLEEP_")}}}}, f)
sys.stdout.write(os.environ.get("SAY_OUT", ""))
sys.stderr.write(os.environ.get("SAY_ERR", ""))
sys.exit(int(os.environ.get("EXIT", "0")))
"""

# Loads index.js as OpenClaw does (its default export's register(api)) and calls the /sleep handler.
DRIVER = """
import { pathToFileURL } from "node:url";
const [dir, pluginConfig, args] = process.argv.slice(1);  // node -e: no script path in argv
const entry = (await import(pathToFileURL(dir + "/index.js").href)).default;
const commands = [];
entry.register({ pluginConfig: JSON.parse(pluginConfig), registerCommand: (c) => commands.push(c) });
const [command] = commands;
const reply = await command.handler({ args: args === "<none>" ? undefined : args, commandBody: "/sleep " + args });
process.stdout.write(JSON.stringify({ id: entry.id, names: commands.map((c) => c.name), acceptsArgs: command.acceptsArgs, reply }));
"""


def test_the_plugin_ships_in_the_package() -> None:
    for name in BUNDLE:
        assert (PLUGIN / name).is_file(), name
    manifest = json.loads((PLUGIN / "openclaw.plugin.json").read_text())
    package = json.loads((PLUGIN / "package.json").read_text())
    assert manifest["id"] == package["name"] == "skillsleep"  # no "id differs from npm name" warning
    assert package["openclaw"]["extensions"] == ["./index.js"] and package["type"] == "module"


def test_the_config_and_its_schema_name_the_same_settings_each_one_skillsleep_reads() -> None:
    config = json.loads((PLUGIN / "config.json").read_text())
    schema = json.loads((PLUGIN / "openclaw.plugin.json").read_text())["configSchema"]
    assert set(config) == set(schema["properties"]) and schema["additionalProperties"] is False
    assert config["harness"] == "openclaw" and config["command"] == "skillsleep"
    assert set(config) - {"command"} <= set(SleepSection.model_fields)  # passed as SKILLSLEEP_<KEY>
    kinds = {"string": str, "number": (int, float), "integer": int}
    for key, value in config.items():
        assert isinstance(value, kinds[schema["properties"][key]["type"]]), key
        assert value in schema["properties"][key].get("enum", [value]), key


def test_the_skill_does_not_shadow_the_sleep_command_and_needs_skillsleep_on_path() -> None:
    text = (PLUGIN / "skills" / "skillsleep" / "SKILL.md").read_text()
    assert text == (Path(__file__).parents[1] / "SKILL.md").read_text()  # the pack's own skill, one file
    front = dict(line.split(": ", 1) for line in text.split("---")[1].strip().splitlines())
    assert front["name"] == "skillsleep"  # a user-invocable skill named `sleep` would take /sleep from the command
    assert front["user-invocable"] == "true"
    assert json.loads(front["metadata"])["openclaw"]["requires"]["bins"] == ["skillsleep"]


# --- the /sleep command (index.js under node) ---------------------------------------------------------


@pytest.fixture
def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        pytest.skip("node is not installed (the /sleep command of the OpenClaw plugin is JavaScript)")
    return exe


@pytest.fixture
def recorder(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "skillsleep"
    path.parent.mkdir()
    path.write_text(RECORDER.format(python=sys.executable))
    path.chmod(0o755)
    return path


def plugin_copy(root: Path, **config: Any) -> Path:
    """The plugin folder as install writes it: config.json with these settings."""
    folder = root / "plugin"
    shutil.copytree(PLUGIN, folder, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    defaults = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**defaults, **config}))
    return folder


def slash(
    node: str, folder: Path, args: str | None, *, plugin_config: dict[str, Any] | None = None, **env: str
) -> dict[str, Any]:
    done = subprocess.run(
        [
            node,
            "--input-type=module",
            "-e",
            DRIVER,
            str(folder),
            json.dumps(plugin_config or {}),
            "<none>" if args is None else args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_sleep_passes_the_raw_text_to_skillsleep_sleep_line_with_the_plugins_settings(
    node: str, recorder: Path, tmp_path: Path
) -> None:
    record = tmp_path / "record.json"
    folder = plugin_copy(tmp_path, command=str(recorder), backend="deepseek", budget_usd=0.5)
    out = slash(
        node,
        folder,
        'diff "my id"  --format md',
        RECORD=str(record),
        SAY_OUT="## skillsleep status\n",
        SKILLSLEEP_HOME="/data/here",
    )
    assert (out["id"], out["names"], out["acceptsArgs"]) == ("skillsleep", ["sleep"], True)
    assert out["reply"] == {"text": "## skillsleep status"}
    seen = json.loads(record.read_text())
    assert seen["argv"] == ["sleep", "--line", 'diff "my id"  --format md']
    assert seen["env"] == {
        "SKILLSLEEP_HOME": "/data/here",
        "SKILLSLEEP_HARNESS": "openclaw",
        "SKILLSLEEP_BACKEND": "deepseek",
        "SKILLSLEEP_BUDGET_USD": "0.5",
    }  # 0 and "": not set


def test_openclaws_plugin_config_overrides_config_json(node: str, recorder: Path, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    folder = plugin_copy(tmp_path, command="/nowhere/skillsleep", backend="deepseek")
    out = slash(
        node,
        folder,
        None,
        plugin_config={"command": str(recorder), "harness": "codex", "backend": "", "budget_tokens": 20000},
        RECORD=str(record),
        SAY_OUT="ok",
    )
    assert out["reply"] == {"text": "ok"}
    seen = json.loads(record.read_text())
    assert seen["argv"] == ["sleep", "--line", ""]  # /sleep alone: skillsleep makes it `status`
    assert seen["env"] == {"SKILLSLEEP_HARNESS": "codex", "SKILLSLEEP_BUDGET_TOKENS": "20000"}


def test_sleep_run_runs_the_night_in_the_background(node: str, recorder: Path, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    folder = plugin_copy(tmp_path, command=str(recorder))
    for typed, sent in (
        ("run --steps 1", "run --steps 1 --detach"),
        ("run", "run --detach"),
        ("run --detach", "run --detach"),
        ("status run", "status run"),
    ):
        slash(node, folder, typed, RECORD=str(record))
        assert json.loads(record.read_text())["argv"] == ["sleep", "--line", sent]


def test_a_verbs_error_comes_back_as_its_markdown_and_stderr_when_stdout_is_empty(
    node: str, recorder: Path, tmp_path: Path
) -> None:
    folder = plugin_copy(tmp_path, command=str(recorder))
    record = str(tmp_path / "record.json")
    out = slash(
        node,
        folder,
        "frobnicate",
        RECORD=record,
        EXIT="2",
        SAY_OUT="**Error:** unknown /sleep verb\n",
        SAY_ERR="Error: unknown /sleep verb\n",
    )
    assert out["reply"] == {"text": "**Error:** unknown /sleep verb"}
    out = slash(node, folder, "status", RECORD=record, EXIT="1", SAY_ERR="Error: the lock is held\n")
    assert out["reply"] == {"text": "Error: the lock is held"}
    out = slash(node, folder, "status", RECORD=record, EXIT="3")
    assert out["reply"]["text"].startswith("**Error:** skillsleep exited 3 without a word")


def test_a_missing_skillsleep_is_a_reply_saying_what_to_do_never_a_thrown_error(node: str, tmp_path: Path) -> None:
    folder = plugin_copy(tmp_path, command=str(tmp_path / "gone" / "skillsleep"))
    out = slash(node, folder, "status")
    text = out["reply"]["text"]
    assert text.startswith(f"**Error:** /sleep cannot find skillsleep at `{tmp_path / 'gone' / 'skillsleep'}`")
    assert "skillsleep install openclaw" in text and "plugins.entries.skillsleep.config.command" in text
    not_executable = tmp_path / "skillsleep.txt"
    not_executable.write_text("not a program")
    out = slash(node, folder, "status", plugin_config={"command": str(not_executable)})
    assert "permission denied" in out["reply"]["text"]
    out = slash(node, folder, "status", plugin_config={"command": "bad\0name"})
    assert out["reply"]["text"].startswith("**Error:** /sleep could not run")


# --- the Python entry points ------------------------------------------------------------------------


def test_slash_sleep_py_runs_the_verb_with_the_same_settings_as_the_command(
    node: str, recorder: Path, tmp_path: Path
) -> None:
    folder = plugin_copy(tmp_path, command=str(recorder), backend="ollama", budget_tokens=900)
    by_command, by_hand = tmp_path / "command.json", tmp_path / "hand.json"
    slash(node, folder, "adopt --edits 1,3", RECORD=str(by_command))
    done = subprocess.run(
        [sys.executable, str(folder / "slash_sleep.py"), "adopt", "--edits", "1,3"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RECORD": str(by_hand), "SAY_OUT": "adopted"},
    )
    assert (done.returncode, done.stdout) == (0, "adopted")
    command, hand = json.loads(by_command.read_text()), json.loads(by_hand.read_text())
    assert (
        hand["env"]
        == command["env"]
        == {"SKILLSLEEP_HARNESS": "openclaw", "SKILLSLEEP_BACKEND": "ollama", "SKILLSLEEP_BUDGET_TOKENS": "900"}
    )
    assert hand["argv"] == ["sleep", "adopt", "--edits", "1,3"]
    done = subprocess.run(
        [sys.executable, str(folder / "run_sleep.py"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RECORD": str(by_hand), "EXIT": "1"},
    )
    assert done.returncode == 1 and json.loads(by_hand.read_text())["argv"] == ["run", "--dry-run"]
    assert not (folder / "__pycache__").exists()  # uninstall can take out the folder install created


def test_the_python_entry_points_name_a_missing_skillsleep_without_a_traceback(tmp_path: Path) -> None:
    folder = plugin_copy(tmp_path, command=str(tmp_path / "gone"))
    for script in ("slash_sleep.py", "run_sleep.py"):
        done = subprocess.run(
            [sys.executable, str(folder / script), "status"], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert (
            f"cannot run skillsleep at '{tmp_path / 'gone'}'" in done.stderr
            and "skillsleep install openclaw" in done.stderr
        )


def test_run_sleep_cron_sh_is_the_packages_cron_script(tmp_path: Path) -> None:
    done = subprocess.run(["/bin/sh", str(PLUGIN / "run_sleep_cron.sh")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2  # the package's script, asked without the skillsleep it runs
    assert "usage: run_sleep_cron.sh SKILLSLEEP [skillsleep run flags...]" in done.stderr
    copy = plugin_copy(tmp_path)  # a copy away from the package cannot find it, and says so
    done = subprocess.run(["/bin/sh", str(copy / "run_sleep_cron.sh")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "skillsleep schedule --openclaw" in done.stderr


# --- the held-out task files ----------------------------------------------------------------------


@pytest.mark.parametrize("name", TASK_FILES)
def test_a_held_out_task_file_is_jsonl_skillsleep_reads_with_six_to_ten_judged_tasks(name: str) -> None:
    path = PLUGIN / "tests" / name
    assert path.read_text(encoding="utf-8").startswith("// ")  # says what it holds and how to run it
    tasks = load_tasks(path)
    assert 6 <= len(tasks) <= 10
    for task in tasks:
        assert task.judge.checks or task.judge.rubric, task.id
        assert all(check.feedback for check in task.judge.checks), task.id  # plain words for the optimizer
    assert sorted(t.id for t in tasks) == sorted(REPLIES[name])


def scripted(path: Path, rules: list[tuple[str, str]]) -> str:
    path.write_text(json.dumps([{"match": match, "reply": reply} for match, reply in rules]))
    return f"scripted:{path}"


@pytest.mark.parametrize("name", TASK_FILES)
def test_every_held_out_task_passes_a_good_reply_and_fails_a_poor_one(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "data"))
    path = PLUGIN / "tests" / name
    tasks = {t.id: t for t in load_tasks(path)}
    judge = scripted(tmp_path / "judge.json", [("You grade one response", '{"score": 0.9, "rationale": "clear"}')])
    hard = {}
    for kind in ("good", "poor"):
        target = scripted(
            tmp_path / f"{kind}.json", [(re.escape(t.prompt), REPLIES[name][t.id][kind]) for t in tasks.values()]
        )
        result = CliRunner().invoke(
            main,
            [
                "eval",
                "--skill",
                str(PLUGIN / "skills" / "skillsleep" / "SKILL.md"),
                "--tasks",
                str(path),
                "--target",
                target,
                "--judge",
                judge,
                "--metric",
                "hard",
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)["per_task"]
        assert all(row["error"] is None for row in rows), rows
        hard[kind] = {row["id"]: (row["hard"], row["feedback"]) for row in rows}
    assert {i: h for i, (h, _) in hard["good"].items()} == dict.fromkeys(tasks, 1.0), hard["good"]
    assert {i: h for i, (h, _) in hard["poor"].items()} == dict.fromkeys(tasks, 0.0), hard["poor"]
    assert all(feedback for _, feedback in hard["poor"].values())  # each poor reply is told what was missing


@pytest.mark.slow
def test_eval_in_the_real_openclaw_scores_a_held_out_task_file(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two DevOps tasks run in `openclaw agent exec` against the scripted model server, whose one reply
    is the good answer to the first task only: the file's judges pass it and fail the other."""
    state = tmp_path / "home" / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text(
        json.dumps(
            {
                "update": {"checkOnStart": False},
                "models": {
                    "providers": {
                        "stub": {
                            "baseUrl": f"{agent_server.url}/v1",
                            "apiKey": "dummy",
                            "api": "openai-completions",
                            "models": [{"id": "stub-model", "name": "stub-model"}],
                        }
                    }
                },
                "agents": {"defaults": {"model": {"primary": "stub/stub-model"}}},
            }
        )
    )
    for name, value in {
        "HOME": str(tmp_path / "home"),
        "PATH": agent_tools.path_env(),
        "SKILLSLEEP_HOME": str(tmp_path / "data"),
        "LANG": "C.UTF-8",
    }.items():
        monkeypatch.setenv(name, value)
    tasks = {t.id: t for t in load_tasks(PLUGIN / "tests" / "devops-tasks.json")}
    subset = tmp_path / "two-tasks.json"
    subset.write_text(
        "".join(tasks[i].model_dump_json(exclude_defaults=True) + "\n" for i in ("nginx-502-count", "cert-expiry"))
    )
    agent_server.reply = REPLIES["devops-tasks.json"]["nginx-502-count"]["good"]
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--harness",
            "openclaw",
            "--skill",
            str(PLUGIN / "skills" / "skillsleep" / "SKILL.md"),
            "--tasks",
            str(subset),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["harness"] == "openclaw" and out["n"] == 2
    rows = {row["id"]: row for row in out["per_task"]}
    assert all(row["error"] is None for row in rows.values()), rows
    assert (rows["nginx-502-count"]["hard"], rows["cert-expiry"]["hard"]) == (1.0, 0.0)
    assert "the expected answer is '14'" in rows["cert-expiry"]["feedback"]
    sent = agent_server.requests_text()
    assert "how many 502 responses" in sent and "notAfter=Dec 15 00:00:00 2026 GMT" in sent  # context and prompt
