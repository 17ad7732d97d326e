"""Rollouts on a Ray cluster (`--executor ray`, harnesses/cluster.py).

The slow tests start a real local cluster of their own: a head and a second node joining it, on
127.0.0.1, one CPU each (`ray start`), stopped with `ray stop` when the module is done. The fast
ones check the errors that need no cluster: Ray missing, a bad or unreachable address.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_server import AgentServer
from conftest import AgentTools
from replay_checks import snapshot
from servers import free_port
from sleep_kit import night_env, run_args, write_chat_logs, write_scripts
from test_cli import OPTIMIZER, SEED, TARGET, invoke

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.backends.registry import create_backend
from skillsleep.core.models.ledger import Ledger
from skillsleep.core.models.llm import LLM
from skillsleep.core.night.user_config import parse_user_config
from skillsleep.core.report.result import StopReason
from skillsleep.core.shared.errors import ConfigError, ExecutorLost
from skillsleep.core.shared.events import ClusterJoined, ClusterLoad, Event
from skillsleep.core.shared.records import Check, Judge, Task
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.executor import ExecutorSection
from skillsleep.core.train.gate import GateConfig
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.slash_commands.progress import Progress, event_line, read_event

RAY = Path(sys.executable).parent / "ray"
WORKER_TITLE = "ray::replay"  # what Ray names a worker process while it runs a rollout


# --- a project and its config -----------------------------------------------------------------


def make_project(root: Path, *, executor: str = "") -> Path:
    """test_cli's project (scripted optimizer and target) with `[executor]` in its config.toml."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "opt.json").write_text(json.dumps(OPTIMIZER))
    (root / "target.json").write_text(json.dumps(TARGET))
    (root / "SKILL.md").write_text(SEED)
    tasks = [
        {
            "id": f"q{i}",
            "prompt": f"Question {i}: What is 2+2?",
            "split": "train" if i < 4 else "val" if i < 8 else "test",
            "answer": "4",
            "answer_pattern": r"ANSWER:\s*(.+)$",
            "answer_match": "number",
            "checks": [{"type": "last_line_regex", "value": "ANSWER: .+"}],
        }
        for i in range(10)
    ]
    (root / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (root / "run.toml").write_text(
        '[run]\nname = "cli"\n[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'
        f'[target]\nbackend = "scripted:{root / "target.json"}"\n'
        f'[optimizer]\nbackend = "scripted:{root / "opt.json"}"\n'
        '[train]\nepochs = 2\nbatch_size = 4\n[lr]\nschedule = "linear"\nmax_edits = 2\nmin_edits = 1\n'
    )
    (root / "home").mkdir(exist_ok=True)
    (root / "home" / "config.toml").write_text(f"[executor]\n{executor}")
    return root


def train(monkeypatch: pytest.MonkeyPatch, root: Path, *args: str) -> tuple[int, dict[str, Any], list[Event]]:
    """`skillsleep train --json` in `root` (its config.toml and state): exit code, summary, events."""
    monkeypatch.setenv("SKILLSLEEP_HOME", str(root / "home"))
    code, out, err = invoke("train", "--config", str(root / "run.toml"), "--json", *args)
    events = [e for e in map(read_event, err.splitlines()) if e is not None]
    return code, (json.loads(out) if code == 0 else {"error": err}), events


# --- errors that need no cluster --------------------------------------------------------------


def test_ray_not_installed_is_a_usage_error_naming_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "p")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, summary, _ = train(monkeypatch, root, "--executor", "ray")
    assert code == 2
    assert "pip install 'skillsleep[ray]'" in summary["error"] and "--executor local" in summary["error"]
    assert not (root / "runs" / "cli" / "ledger.jsonl").exists()  # nothing was run or spent


def test_a_malformed_address_names_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "p", executor='kind = "ray"\naddress = "head-node"\n')
    code, summary, _ = train(monkeypatch, root)
    assert code == 2 and "address" in summary["error"] and "ray://HOST:PORT" in summary["error"]


def test_a_bad_executor_table_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError, match=r"\[executor\] kind") as err:
        parse_user_config('[executor]\nkind = "slurm"\n', path)
    assert "'local' or 'ray'" in str(err.value)
    with pytest.raises(ConfigError, match=r"\[executor\] unknown key 'retries'") as err:
        parse_user_config("[executor]\nretries = 2\n", path)
    assert str(path) in str(err.value) and "did you mean 'max_retries'" in str(err.value)
    cfg = parse_user_config('[executor]\nkind = "ray"\naddress = "ray://head:10001"\nresources = {codex = 1}\n', path)
    assert cfg.executor.resources == {"codex": 1.0} and cfg.executor.max_retries == 3


def test_an_unreachable_cluster_is_a_usage_error_saying_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' (CI installs it)")
    root = make_project(tmp_path / "p", executor=f'address = "127.0.0.1:{free_port()}"\n')
    code, summary, _ = train(monkeypatch, root, "--executor", "ray")
    assert code == 2 and "not reachable" in summary["error"] and "ray start --head" in summary["error"]
    code, summary, _ = train(monkeypatch, root)  # [executor] kind is local: the address is never dialled
    assert code == 0 and summary["accepted"] == 1


def test_eval_and_run_take_the_executor_flag_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' (CI installs it)")
    root = make_project(tmp_path / "p", executor=f'address = "127.0.0.1:{free_port()}"\n')
    monkeypatch.setenv("SKILLSLEEP_HOME", str(root / "home"))
    target = f"scripted:{root / 'target.json'}"
    args = ("--skill", str(root / "SKILL.md"), "--tasks", str(root / "tasks.jsonl"), "--target", target)
    code, _, err = invoke("eval", *args, "--executor", "ray")
    assert code == 2 and "not reachable" in err
    code, out, _ = invoke("eval", *args, "--executor", "local", "--json")
    assert code == 0 and json.loads(out)["n"] == 10
    data = night_env(monkeypatch, tmp_path / "night")  # no real transcripts are read
    data.mkdir(parents=True)
    (tmp_path / "night" / "chats").mkdir()
    write_scripts(tmp_path / "night")  # the night's backends are checked before its executor
    (data / "config.toml").write_text(f'[executor]\naddress = "127.0.0.1:{free_port()}"\n')
    code, _, err = invoke(*run_args(tmp_path / "night"), "--executor", "ray", "--dry-run")
    assert code == 2 and "not reachable" in err


def test_cluster_events_have_lines_and_round_trip_as_json() -> None:
    joined = ClusterJoined(executor="ray", address="10.0.0.1:6379", nodes=["10.0.0.1 (ab)", "10.0.0.2 (cd)"], cpus=8)
    load = ClusterLoad(in_flight=3, done=5, by_node={"10.0.0.1 (ab)": 4, "10.0.0.2 (cd)": 1})
    assert joined.describe() == (
        "rollouts run on the ray cluster at 10.0.0.1:6379: 2 node(s) (10.0.0.1 (ab), 10.0.0.2 (cd)), 8 CPUs"
    )
    assert load.describe() == "on the cluster: 3 in flight, 5 done (10.0.0.1 (ab): 4, 10.0.0.2 (cd): 1)"
    assert not load.shown and joined.shown
    assert read_event(event_line(load)) == load and read_event(event_line(joined)) == joined


def test_a_night_stopped_by_a_lost_cluster_says_how_to_go_on() -> None:
    stop = StopReason.from_error(ExecutorLost("lost the connection to the Ray cluster at h:6379"))
    assert stop.kind == "backend" and "--executor local" in stop.advice and "model server" not in stop.advice


def test_progress_shows_cluster_load_only_live_or_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    load = ClusterLoad(in_flight=1, done=2, by_node={"n1": 2})
    shown = Progress()
    shown(load)  # off a terminal: no line of its own (a live display shows it beside the count)
    assert capsys.readouterr().err == ""
    shown.start(json_lines=True)
    shown(load)
    line = capsys.readouterr().err.strip()
    assert json.loads(line)["kind"] == "cluster_load" and read_event(line) == load
    shown.stop()


# --- a real local cluster -----------------------------------------------------------------------


def _ray(*args: str) -> None:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([str(RAY), *args], check=True, env=env, capture_output=True, timeout=180)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head and a second node (with the resource "codex") on 127.0.0.1, one CPU each; its
    address. `ray stop` at the end."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' (CI installs it)")
    port = free_port()
    try:
        _ray(
            *("start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "1"),
            *("--dashboard-port", str(free_port()), "--ray-client-server-port", str(free_port())),
            "--disable-usage-stats",
        )
        second = ("start", "--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", "--num-cpus", "1")
        _ray(*second, "--resources", json.dumps({"codex": 1}))  # only this node may replay in Codex
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(RAY), "stop", "--force"], capture_output=True, timeout=120)


def _loads(events: list[Event]) -> list[ClusterLoad]:
    return [e for e in events if isinstance(e, ClusterLoad)]


@pytest.mark.slow
def test_train_on_a_two_node_cluster_matches_the_local_run_and_repays_nothing(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = make_project(tmp_path / "local")
    code, alone, _ = train(monkeypatch, local)
    assert code == 0
    root = make_project(tmp_path / "ray", executor=f'address = "{cluster}"\n')
    code, summary, events = train(monkeypatch, root, "--executor", "ray")
    assert code == 0, summary
    same = ("accepted", "seed_score", "best_score", "final_score", "test", "calls_made", "tokens", "calls_by_role")
    assert {k: summary[k] for k in same} == {k: alone[k] for k in same}
    joined = [e for e in events if isinstance(e, ClusterJoined)]
    assert len(joined) == 1 and len(joined[0].nodes) == 2 and joined[0].cpus == 2
    last = _loads(events)[-1]
    assert last.in_flight == 0 and last.done == summary["calls_by_role"]["target"]["calls"]
    assert set(last.by_node) <= set(joined[0].nodes)
    assert (root / "runs" / "cli" / "best_skill.md").read_text() == (
        local / "runs" / "cli" / "best_skill.md"
    ).read_text()

    code, again, events = train(
        monkeypatch, root, "--executor", "ray", "--fresh"
    )  # every answer is in the driver's cache
    assert code == 0 and again["calls_made"] == 0 and again["accepted"] == 1
    assert not _loads(events)  # so no rollout was dispatched


@pytest.mark.slow
def test_a_budget_too_small_for_one_rollout_dispatches_nothing(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p", executor=f'kind = "ray"\naddress = "{cluster}"\n')
    code, summary, events = train(monkeypatch, root, "--budget-tokens", "10")
    assert code == 1 and "budget" in summary["error"]
    assert [e for e in events if isinstance(e, ClusterJoined)] and not _loads(events)


@pytest.mark.slow
def test_a_night_runs_its_rollouts_on_the_cluster(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    night_env(monkeypatch, tmp_path)
    write_scripts(tmp_path)
    write_chat_logs(tmp_path / "chats")
    (tmp_path / "data").mkdir(parents=True, exist_ok=True)
    (tmp_path / "data" / "config.toml").write_text(f'[executor]\nkind = "ray"\naddress = "{cluster}"\n')
    code, out, err = invoke(*run_args(tmp_path), "--json")
    assert code == 0, err
    s = json.loads(out)
    assert s["outcome"] == "accepted" and s["candidate"] == 1.0
    events = [e for e in map(read_event, err.splitlines()) if e is not None]
    loads = _loads(events)
    assert loads and loads[-1].in_flight == 0 and loads[-1].done == s["calls_by_role"]["target"]["calls"]


# --- faults ------------------------------------------------------------------------------------


def _evaluator(root: Path, cluster: str, *, max_retries: int, latency_s: float) -> tuple[Evaluator, list[Event]]:
    """An evaluator on the cluster whose chat target (scripted) takes `latency_s` per answer."""
    (root / "target.json").write_text(json.dumps(TARGET))
    settings = BackendSettings(model=str(root / "target.json"), options={"latency_s": latency_s})
    llm = LLM(create_backend(f"scripted:{root / 'target.json'}", settings), ledger=Ledger())
    heard: list[Event] = []
    from skillsleep.harnesses.cluster import RayExecutor

    executor = RayExecutor(ExecutorSection(kind="ray", address=cluster, max_retries=max_retries), on_event=heard.append)
    ev = Evaluator(ChatHarness(llm), judge_llm=None, gate=GateConfig(), executor=executor)
    return ev, heard


def _kill_first_worker(killed: list[int], timeout_s: float = 60.0) -> None:
    """SIGKILL the first process that runs a rollout (found by its title), once."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not killed:
        for pid, argv in _processes():
            if argv[0].startswith(WORKER_TITLE):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        time.sleep(0.05)


def _processes() -> Iterator[tuple[int, list[str]]]:
    """Each running process's pid and argv (argv[0] may be a title the process set itself)."""
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            yield pid, Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue


TASK = Task(
    id="q1",
    prompt="Question 1: What is 2+2?",
    judge=Judge(checks=[Check(type="last_line_regex", value="ANSWER: .+")]),
)


def _roll_with_a_kill(ev: Evaluator) -> tuple[Any, list[int]]:
    killed: list[int] = []
    killer = threading.Thread(target=_kill_first_worker, args=(killed,))
    killer.start()
    skill = Skill.parse(f"{SEED}\nEnd every reply with a final line `ANSWER: <answer>`.\n")
    try:
        result = asyncio.run(ev.rollout(skill, TASK))
    finally:
        killer.join()
        asyncio.run(ev.executor.aclose())
    return result, killed


@pytest.mark.slow
def test_a_worker_killed_mid_rollout_is_retried_and_the_rollout_succeeds(cluster: str, tmp_path: Path) -> None:
    ev, heard = _evaluator(tmp_path, cluster, max_retries=2, latency_s=3.0)
    result, killed = _roll_with_a_kill(ev)
    assert killed, "no worker ran the rollout"
    assert result.run.error is None and result.score.hard == 1.0 and "ANSWER: 4" in result.run.response
    assert _loads(heard)[-1].done == 1


@pytest.mark.slow
def test_a_worker_killed_past_its_retries_is_a_failed_episode_naming_the_node(cluster: str, tmp_path: Path) -> None:
    ev, heard = _evaluator(tmp_path, cluster, max_retries=0, latency_s=3.0)
    result, killed = _roll_with_a_kill(ev)
    assert killed
    error = result.run.error or ""
    nodes = next(e for e in heard if isinstance(e, ClusterJoined)).nodes
    assert "died" in error and "max_retries = 0" in error and any(n in error for n in nodes), error
    assert result.score.hard == 0.0


@pytest.mark.slow
def test_a_resource_no_node_offers_is_a_usage_error_naming_the_node_option(cluster: str, tmp_path: Path) -> None:
    from skillsleep.harnesses.cluster import RayExecutor

    executor = RayExecutor(ExecutorSection(kind="ray", address=cluster, resources={"chat": 1}))
    (tmp_path / "target.json").write_text(json.dumps(TARGET))
    llm = LLM(create_backend(f"scripted:{tmp_path / 'target.json'}"), ledger=Ledger())
    try:
        with pytest.raises(ConfigError, match=r"""--resources '\{"chat": 1\}'"""):
            asyncio.run(executor.run(ChatHarness(llm), TASK, Skill.parse(SEED), sample=0, timeout_s=10))
    finally:
        asyncio.run(executor.aclose())


# --- a real agent CLI on a worker ------------------------------------------------------------------


@pytest.mark.slow
def test_a_codex_replay_runs_on_the_node_with_codex_and_writes_nothing_there(
    cluster: str, agent_tools: AgentTools, agent_server: AgentServer, tmp_path: Path
) -> None:
    from skillsleep.harnesses.cluster import RayExecutor
    from skillsleep.harnesses.codex.replay import CodexHarness
    from skillsleep.harnesses.codex.settings import CodexSettings

    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "history.jsonl").write_text('{"session_id":"s","ts":1,"text":"old prompt"}\n')
    before = snapshot(home)
    settings = CodexSettings(
        command=str(agent_tools.bin / "codex"),
        base_url=f"{agent_server.url}/v1",
        target_model="stub-model",
        env={"HOME": str(home), "PATH": agent_tools.path_env()},  # the worker's agent process gets these
    )
    heard: list[Event] = []
    executor = RayExecutor(ExecutorSection(kind="ray", address=cluster, resources={"codex": 1}), on_event=heard.append)
    try:
        run = asyncio.run(
            executor.run(CodexHarness(settings), Task(id="t", prompt="say hello"), Skill(""), sample=0, timeout_s=120)
        )
    finally:
        asyncio.run(executor.aclose())
    assert run.error is None, run.error
    assert run.response == "hello" and run.usage.output_tokens > 0
    assert [s.body["model"] for s in agent_server.seen] == ["stub-model"]
    with_codex = [n for n in _ray_nodes(cluster) if n["Resources"].get("codex")]
    assert list(_loads(heard)[-1].by_node) == [f"{with_codex[0]['NodeManagerAddress']} ({with_codex[0]['NodeID'][:8]})"]
    assert snapshot(home) == before  # replayed in a temporary copy: the node's agent folders untouched


def _ray_nodes(address: str) -> list[dict[str, Any]]:
    import ray

    ray.init(address=address, log_to_driver=False)
    try:
        return [n for n in ray.nodes() if n["Alive"]]
    finally:
        ray.shutdown()


# --- a lost cluster (last: it kills this module's cluster) -------------------------------------


def _kill_head(cluster: str, after_s: float) -> None:
    """SIGKILL the head's GCS process of this cluster (by its port) after `after_s`."""
    time.sleep(after_s)
    port = cluster.rpartition(":")[2]
    for pid, argv in _processes():
        if argv and argv[0].endswith("gcs_server") and any(a.endswith(f"={port}") for a in argv):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_lost_cluster_stops_the_rollouts_and_a_resume_repays_only_the_unfinished(
    cluster: str, tmp_path: Path
) -> None:
    from skillsleep.harnesses.cluster import RayExecutor

    log = tmp_path / "rollouts.jsonl"
    (tmp_path / "target.json").write_text(json.dumps(TARGET))
    skill = Skill.parse(f"{SEED}\nEnd every reply with a final line `ANSWER: <answer>`.\n")
    tasks = [TASK.model_copy(update={"id": f"q{i}", "prompt": f"Question {i}: What is 2+2?"}) for i in range(4)]

    backends: list[Any] = []

    def evaluator(latency_s: float, executor: Any = None) -> Evaluator:
        settings = BackendSettings(model=str(tmp_path / "target.json"), options={"latency_s": latency_s})
        backends.append(create_backend(f"scripted:{tmp_path / 'target.json'}", settings))
        llm = LLM(backends[-1], ledger=Ledger())
        return Evaluator(ChatHarness(llm), judge_llm=None, gate=GateConfig(), log_path=log, executor=executor)

    first = RayExecutor(ExecutorSection(kind="ray", address=cluster))
    try:
        assert len(asyncio.run(evaluator(0.0, first).rollouts(skill, tasks[:2]))) == 2
    finally:
        asyncio.run(first.aclose())
    second = RayExecutor(ExecutorSection(kind="ray", address=cluster))
    killer = threading.Thread(target=_kill_head, args=(cluster, 2.0))
    killer.start()
    began = time.monotonic()
    try:
        with pytest.raises(ExecutorLost, match="run the same command again"):
            asyncio.run(evaluator(30.0, second).rollouts(skill, tasks))
        assert time.monotonic() - began < 30  # it stopped; it did not wait out the 30-second answers
    finally:
        killer.join()
        asyncio.run(second.aclose())
    resumed = evaluator(0.0)  # this machine, from the same rollouts.jsonl
    assert resumed.computed == 2
    results = asyncio.run(resumed.rollouts(skill, tasks))
    assert [r.task_id for r in results] == ["q0", "q1", "q2", "q3"] and all(r.score.hard == 1.0 for r in results)
    assert len(backends[-1].requests) == 2  # only q2 and q3 were run again, here
