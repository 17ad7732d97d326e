"""Both modes are library calls: docs/examples/train_from_python.py (core's `train()`) and
docs/examples/night_from_python.py (core's `run_night()`) run verbatim as plain Python scripts with
the scripted backend, import only skillsleep.core and skillsleep.harnesses (no module of
skillsleep.slash_commands is loaded), and do what the commands do."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sleep_kit import RULE, write_chat_logs, write_scripts
from test_cli import invoke, project

__all__ = ["project"]  # the fixture, shared with test_cli

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
# runs an example as `python EXAMPLE ARGS…` would, then names every skillsleep module it loaded (on stderr)
RUN = (
    "import json, runpy, sys\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "print(json.dumps(sorted(m for m in sys.modules if m.startswith('skillsleep'))), file=sys.stderr)\n"
)
SKILL = "---\nname: replies\ndescription: how to reply\n---\n# Replies\n\n- Be brief.\n"


def run_example(name: str, *args: str, cwd: Path) -> tuple[str, list[str]]:
    """(stdout, the skillsleep modules it loaded) of docs/examples/`name` run in `cwd`."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(EXAMPLES / name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stderr.splitlines()[-1])


def assert_core_only(modules: list[str]) -> None:
    assert "skillsleep.core.train.trainer" in modules or "skillsleep.core.night.cycle" in modules
    assert [m for m in modules if m.startswith("skillsleep.slash_commands")] == []
    assert {m.split(".")[1] for m in modules if "." in m} <= {"core", "harnesses"}


@pytest.mark.parametrize("name", ["train_from_python.py", "night_from_python.py"])
def test_an_example_is_short_and_imports_only_core_and_harnesses(name: str) -> None:
    source = (EXAMPLES / name).read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 25
    modules = {
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    ours = {m for m in modules if m and m.startswith("skillsleep")}
    assert ours and all(m.startswith(("skillsleep.core.", "skillsleep.harnesses")) for m in ours), ours
    assert all(m.split(".")[0] in sys.stdlib_module_names for m in modules if m and m not in ours), modules


def test_train_from_python_prints_what_the_train_command_prints(project: Path) -> None:
    out, modules = run_example("train_from_python.py", str(project / "run.toml"), cwd=project)
    assert_core_only(modules)
    result = json.loads(out)
    assert result["done"] and result["accepted"] == 1 and result["best_score"] == 1.0
    assert result["test"] == {"seed": 0.0, "best": 1.0, "final": 1.0}
    run = project / "runs" / "cli"
    assert RULE in (run / "best_skill.md").read_text()
    assert json.loads((run / "summary.json").read_text()) == result
    # the command, trained again from the start (the library call kept no response cache), says the same
    code, cli, err = invoke("train", "--config", str(project / "run.toml"), "--fresh", "--json")
    assert code == 0, err
    assert json.loads(cli) == result


def test_night_from_python_stages_the_proposal_the_gate_accepted(tmp_path: Path) -> None:
    write_scripts(tmp_path)
    (write_chat_logs(tmp_path / "chats")).rename(tmp_path / "chat.jsonl")
    (tmp_path / "SKILL.md").write_text(SKILL)
    (tmp_path / "data").mkdir()
    out, modules = run_example("night_from_python.py", cwd=tmp_path)
    assert_core_only(modules)
    result = json.loads(out)
    assert result["outcome"] == "accepted" and result["gate"]["accepted"], result["reason"]
    night = tmp_path / "data" / "nights" / "0001"
    assert {"report.md", "report.json", "report.html", "plan.json", "state.json"} <= {p.name for p in night.iterdir()}
    [proposal] = (tmp_path / "data" / "staging").iterdir()
    assert RULE in (proposal / "SKILL.md").read_text()
    assert (tmp_path / "SKILL.md").read_text() == SKILL  # staged, not adopted: only `adopt` writes the live skill
