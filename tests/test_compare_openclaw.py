"""`skillsleep compare --harness openclaw`: both skills replay in OpenClaw, each installed as a
workspace skill the prompt names with `$name` (harnesses/openclaw/replay.py, as `eval` and a night
run it). The real CLI against the scripted model server shows B better (slow); a stand-in CLI
shows what compare says of runs that failed, and settings no replay can run with are refused
before any run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agent_server import AgentServer
from click.testing import CliRunner
from conftest import AgentTools

from skillsleep.harnesses import agent_cli
from skillsleep.slash_commands.cli import main

HEAD = "---\nname: answer\ndescription: How to answer any question.\n---\n"
TASKS = 6  # the fewest on which exact McNemar can reach p < 0.05

# a stand-in `openclaw`: its version; `agent exec` logs its prompt and, when the prompt names a skill
# (`$answer …`), answers with the word the installed skill says; with no skill (or FAIL_ALL) it fails
FAKE = """#!{python}
import json, os, pathlib, sys
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("OpenClaw 2026.9.6 (fake)")
    sys.exit(0)
prompt = pathlib.Path(args[args.index("--message-file") + 1]).read_text()
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(prompt) + "\\n")
if os.environ.get("FAIL_ALL") or not prompt.startswith("$answer ") or "FAILME" in prompt:
    print("fake openclaw: no provider answered", file=sys.stderr)
    sys.exit(1)
skill = pathlib.Path(args[args.index("--cwd") + 1], "skills", "answer", "SKILL.md").read_text()
word = skill.split("SKILL_SAYS: ")[1].split()[0]
usage = {{"input": 10, "output": 1, "total": 11, "cost": {{"total": 0}}}}
print(json.dumps({{"ok": True, "status": "ok", "final": word, "payloads": [{{"text": word}}], "usage": usage}}))
"""


def _files(tmp_path: Path, n: int, a: str) -> list[str]:
    """A (`a`, the skill's text after its frontmatter), B (says mango) and `n` tasks that check for
    mango: compare's arguments."""
    (tmp_path / "A.md").write_text(HEAD + a if a else "")
    (tmp_path / "B.md").write_text(HEAD + "Always answer with one word. SKILL_SAYS: mango\n")
    check = {"checks": [{"type": "contains", "value": "mango", "feedback": "say mango"}]}
    lines = (json.dumps({"id": f"t{i}", "prompt": f"question {i}", "judge": check}) for i in range(n))
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return ["compare", str(tmp_path / "A.md"), str(tmp_path / "B.md"), "--tasks", str(tmp_path / "tasks.jsonl")]


def _fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in CLI first on PATH; its log of prompts."""
    agent_cli._STATUS_CACHE.clear()
    cli = tmp_path / "bin" / "openclaw"
    cli.parent.mkdir()
    cli.write_text(FAKE.format(python=sys.executable))
    cli.chmod(0o755)
    log = tmp_path / "prompts.jsonl"
    monkeypatch.setenv("PATH", f"{cli.parent}:/usr/bin:/bin")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "ss"))
    monkeypatch.setenv("FAKE_LOG", str(log))
    return log


def test_runs_that_failed_are_counted_and_named_beside_the_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A is empty: the stand-in fails every run without a skill (each scored 0), which compare says."""
    log = _fake(tmp_path, monkeypatch)
    args = [*_files(tmp_path, 2, ""), "--harness", "openclaw"]
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["failed_a"], out["failed_b"]) == (2, 0)
    assert out["error"] is not None and "fake openclaw: no provider answered" in out["error"]
    assert (out["comparison"]["a_mean"], out["comparison"]["b_mean"]) == (0.0, 1.0)
    prompts = [json.loads(x) for x in log.read_text().splitlines()]
    assert sorted(prompts) == ["$answer question 0", "$answer question 1", "question 0", "question 1"]
    page = tmp_path / "compare.html"
    text = CliRunner().invoke(main, [*args, "--format", "text", "--html", str(page)]).stdout.splitlines()
    [failed] = [x for x in text if x.startswith("failed runs")]
    assert failed.startswith("failed runs, each scored 0: A 2 of 2, B 0 of 2; the first: ")
    assert "A 2 of 2, B 0 of 2; the first: " in page.read_text()  # the page's facts say it too


def test_a_comparison_where_every_run_failed_is_an_error_naming_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake(tmp_path, monkeypatch)
    monkeypatch.setenv("FAIL_ALL", "1")
    r = CliRunner().invoke(main, [*_files(tmp_path, 2, "SKILL_SAYS: apple\n"), "--harness", "openclaw", "--json"])
    assert r.exit_code == 1
    assert "every run of A and of B failed, so there is nothing to compare" in r.output
    assert "fake openclaw: no provider answered" in r.output


def test_a_base_url_without_the_model_it_serves_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each replay would fail alike and score 0; the settings are refused first, naming the flag."""
    log = _fake(tmp_path, monkeypatch)
    args = [*_files(tmp_path, 2, "SKILL_SAYS: apple\n"), "--harness", "openclaw", "--base-url", "http://127.0.0.1:9/v1"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert "`target_model` is empty" in r.output and "--target-model" in r.output
    assert not log.exists()  # no replay started


def test_eval_counts_and_names_failed_runs_and_errs_when_every_run_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """eval scores a failed run 0 as compare does, and says so; when every run failed there is no score."""
    _fake(tmp_path, monkeypatch)
    _files(tmp_path, 2, "SKILL_SAYS: apple\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        tasks.read_text()
        + json.dumps({"id": "odd", "prompt": "FAILME", "judge": {"checks": [{"type": "contains", "value": "x"}]}})
        + "\n"
    )
    args = ["eval", "--skill", str(tmp_path / "B.md"), "--tasks", str(tasks), "--harness", "openclaw"]
    monkeypatch.setenv("FAIL_ALL", "1")
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 1 and r.stdout == ""
    assert "every run failed, so there is no score" in r.output and "fake openclaw: no provider answered" in r.output
    monkeypatch.delenv("FAIL_ALL")
    out = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert (out["failed"], out["runs"]) == (1, 3) and "no provider answered" in out["error"]
    assert [t["score"] for t in out["per_task"]] == [1.0, 1.0, 0.0] and out["score"] == pytest.approx(2 / 3)
    text = CliRunner().invoke(main, args).stdout.splitlines()
    [failed] = [x for x in text if x.startswith("failed runs")]
    assert failed.startswith("failed runs, each scored 0: 1 of 3; the first: ") and "no provider answered" in failed


@pytest.mark.slow
def test_compare_in_the_real_openclaw_says_b_is_better(
    agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A says apple, B says mango, on 6 tasks that want mango: the real `openclaw agent exec` reads
    each skill (`$answer`, then its SKILL.md), B wins every task, and compare says B is better."""
    agent_cli._STATUS_CACHE.clear()
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PATH", agent_tools.path_env())
    monkeypatch.setenv("SKILLSLEEP_HOME", str(tmp_path / "ss"))
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)
    args = [*_files(tmp_path, TASKS, "Always answer with one word. SKILL_SAYS: apple\n"), "--harness", "openclaw"]
    args += ["--base-url", f"{agent_server.url}/v1", "--target-model", "stub-model"]
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    c = out["comparison"]
    assert (out["failed_a"], out["failed_b"], out["error"]) == (0, 0, None), out["error"]
    assert (c["a_mean"], c["b_mean"], c["wins"], c["n_tasks"], c["better"]) == (0.0, 1.0, TASKS, TASKS, "B"), c
    assert c["verdict"] == "B is better: +1.00 [1.00, 1.00], p = 0.031, 6 tasks × 1 sample"
    assert out["harness"] == "openclaw"
    sent = agent_server.requests_text()
    assert "SKILL_SAYS: apple" in sent and "SKILL_SAYS: mango" in sent  # each skill reached the model
    assert all(f"$answer question {i}" in sent for i in range(TASKS))
