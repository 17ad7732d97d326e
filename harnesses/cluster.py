"""The Ray executor (`[executor] kind = "ray"`, `--executor ray`): each rollout a Ray task.

The driver (this process) keeps what must be single: the evaluator's memo (a rollout it holds is
never dispatched), the response cache, the budget and the ledger. For the chat harness the
driver answers a request from its cache when it can, reserves the budget for the request before
dispatch, and afterwards records the worker's usage and caches the answer, so a cluster never
repays nor overspends. A worker gets the harness settings (`cluster_worker.HarnessSpec`), the
task, the skill and the sample, and returns the `Run` with its usage.

Faults: a worker that dies mid-rollout is run again by Ray up to `max_retries` times, then the
rollout is a failed episode naming the node; a lost connection to the cluster raises
`ExecutorLost`, which stops the run as a dead model server does (finished rollouts are kept in
the run's rollouts.jsonl, so running the command again repays none). Ray is imported only when
this executor is built (`pip install 'skillsleep[ray]'`), through the typed calls of ray_api.py.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import Counter
from typing import Any

from skillsleep.core.document.skill import Skill
from skillsleep.core.models.backends.base import BackendSettings
from skillsleep.core.models.llm import RESERVE_POLL_S, estimate_usage
from skillsleep.core.shared.errors import BackendError, ConfigError, ExecutorLost
from skillsleep.core.shared.events import ClusterJoined, ClusterLoad, EventSink, quiet
from skillsleep.core.shared.records import Completion, Run, Task
from skillsleep.core.train.executor import ExecutorSection
from skillsleep.core.train.harness import Harness
from skillsleep.harnesses.chat import ChatHarness
from skillsleep.harnesses.cluster_worker import HarnessSpec, Placed, replay
from skillsleep.harnesses.ray_api import ObjectRef, Ray, ray, task_attempts
from skillsleep.harnesses.replay import CLIHarness

__all__ = ["RAY_INSTALL", "RayExecutor"]

RAY_INSTALL = "pip install 'skillsleep[ray]'"
CONNECT_TIMEOUT_S = 5.0
HEARTBEAT_S = 2.0  # how often the driver checks, while it waits, that the cluster still answers
LOST_AFTER_S = 10.0  # no answer for this long is a lost cluster (Ray itself would end the process at 60 s)


def _ray() -> Ray:
    try:
        return ray()
    except ImportError:
        raise ConfigError(
            f'[executor] kind = "ray" needs Ray, which is not installed here: {RAY_INSTALL} '
            "(or run with --executor local)"
        ) from None


def _reachable(address: str) -> None:
    """A ConfigError naming the fix when nothing answers at a HOST:PORT address (Ray would wait long)."""
    if not (where := _host_port(address)):
        return
    host, _, port = where.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigError(
            f"the Ray cluster at {address} is not reachable ({exc.strerror or exc}): start it "
            "(`ray start --head --port PORT` on the head node) or fix [executor] address"
        ) from None


class RayExecutor:
    """Rollouts as Ray tasks on the cluster at `section.address` (see the module docstring)."""

    name = "ray"

    def __init__(self, section: ExecutorSection, *, on_event: EventSink = quiet) -> None:
        self.section = section
        self.on_event = on_event
        self._ray = _ray()
        _reachable(section.address)
        try:
            self._ray.init(address=section.address, log_to_driver=False, logging_level=logging.ERROR)
        except ConnectionError as exc:
            raise ConfigError(
                f"no Ray cluster at {section.address} ({exc}); start one with `ray start --head` "
                "or set [executor] address"
            ) from None
        self._gcs = _host_port(section.address) or str(self._ray.get_runtime_context().gcs_address)
        self._checked_at, self._silent_since = time.monotonic(), 0.0
        self._remote = self._ray.remote(replay)
        self._died = _death_errors(self._ray)
        self._checked: set[str] = set()
        self._in_flight = 0
        self._by_node: Counter[str] = Counter()
        nodes = self._nodes()
        cpus = float(self._ray.cluster_resources().get("CPU", 0.0))
        on_event(ClusterJoined(executor=self.name, address=section.address, nodes=sorted(nodes.values()), cpus=cpus))

    async def run(self, harness: Harness, task: Task, skill: Skill, *, sample: int, timeout_s: float) -> Run:
        if isinstance(harness, ChatHarness):
            return await self._chat(harness, task, skill, sample, timeout_s)
        placed = await self._dispatch(_agent_spec(harness), task, skill, sample, timeout_s)
        return placed.run

    async def aclose(self) -> None:
        self._ray.shutdown()

    async def _chat(self, harness: ChatHarness, task: Task, skill: Skill, sample: int, timeout_s: float) -> Run:
        """A chat rollout: the driver's cache first, the budget reserved before dispatch, the
        worker's answer then counted, cached and logged here."""
        llm = harness.llm
        request = harness.request(task, skill, sample=sample)
        key = request.cache_key(llm.backend.name, llm.backend.endpoint)
        if llm.store is not None and llm.store.cached(key) is not None:
            return await harness.run(task, skill, sample=sample, timeout_s=timeout_s)  # a cache hit, here
        estimate = estimate_usage(request)
        while (reservation := llm.ledger.reserve(llm.backend.name, llm.backend.model, estimate)) is None:
            await asyncio.sleep(RESERVE_POLL_S)  # rollouts in flight hold the rest of the budget
        try:
            placed = await self._dispatch(_chat_spec(harness), task, skill, sample, timeout_s)
        except BackendError as exc:
            if not isinstance(exc, ExecutorLost):  # the worker's backend failed for good: counted as a call
                llm.record("target", Completion(text=""), cache_hit=False, error=str(exc))
            raise
        finally:
            llm.ledger.release(reservation)
        if placed.completion is None:  # the worker died: a failed episode, nothing answered
            return placed.run
        llm.record("target", placed.completion, cache_hit=False)
        if llm.store is not None and not placed.completion.truncated:
            llm.store.cache(key, placed.completion)
        return harness.finish(task, sample, request, placed.completion)

    async def _dispatch(self, spec: HarnessSpec, task: Task, skill: Skill, sample: int, timeout_s: float) -> Placed:
        """One Ray task; a worker that died past its retries is a failed episode naming the node."""
        options: dict[str, Any] = {"num_cpus": self.section.num_cpus, "max_retries": self.section.max_retries}
        if spec.name in self.section.resources:
            options["resources"] = {spec.name: self.section.resources[spec.name]}
        self._check_schedulable(spec.name, options)
        ref = self._remote.options(**options).remote(spec, task, skill, sample, timeout_s)
        self._count(+1)
        node = ""
        try:
            placed = await self._result(ref)
            node = placed.node
            return placed
        except self._died as exc:
            node = await self._node_of(ref)
            tries = self.section.max_retries + 1
            error = (
                f"the worker running this rollout on node {node} died ({type(exc).__name__}), "
                f"{tries} time(s) in all ([executor] max_retries = {self.section.max_retries})"
            )
            return Placed(run=Run(error=error), node=node)
        except asyncio.CancelledError:
            self._ray.cancel(ref)
            raise
        except (ConnectionError, self._ray.exceptions.RaySystemError) as exc:
            raise self._lost(str(exc)) from exc
        finally:
            self._count(-1, node)

    async def _result(self, ref: ObjectRef) -> Placed:
        """The task's result; ExecutorLost when the cluster stops answering while it is awaited."""
        future = asyncio.wrap_future(ref.future())
        while True:
            done, _ = await asyncio.wait({future}, timeout=HEARTBEAT_S)
            if done:
                result: Placed = future.result()
                return result
            if not await self._answering():
                future.cancel()
                raise self._lost(f"nothing answered at {self._gcs} for {LOST_AFTER_S:g} s")

    async def _answering(self) -> bool:
        """Whether the cluster's head answered a connection lately (checked at most every HEARTBEAT_S)."""
        now = time.monotonic()
        if now - self._checked_at >= HEARTBEAT_S:
            self._checked_at = now
            host, _, port = self._gcs.rpartition(":")
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), HEARTBEAT_S)
                writer.close()
                self._silent_since = 0.0
            except (OSError, TimeoutError):
                self._silent_since = self._silent_since or now
        return not self._silent_since or now - self._silent_since < LOST_AFTER_S

    def _lost(self, why: str) -> ExecutorLost:
        return ExecutorLost(
            f"lost the connection to the Ray cluster at {self.section.address} ({why}); the finished rollouts "
            "are kept: run the same command again once the cluster is back (or with --executor local)"
        )

    def _count(self, change: int, node: str = "") -> None:
        self._in_flight += change
        if node:
            self._by_node[node] += 1
        done = sum(self._by_node.values())
        self.on_event(ClusterLoad(in_flight=self._in_flight, done=done, by_node=dict(self._by_node)))

    def _nodes(self) -> dict[str, str]:
        """The cluster's live nodes: Ray id → label (address and the start of the id)."""
        return {
            n["NodeID"]: f"{n['NodeManagerAddress']} ({n['NodeID'][:8]})" for n in self._ray.nodes() if n.get("Alive")
        }

    def _check_schedulable(self, harness: str, options: dict[str, Any]) -> None:
        """A ConfigError, before the first dispatch of a harness, when no node could ever run it
        (Ray would wait for such a node forever)."""
        if harness in self._checked:
            return
        wanted = {"CPU": float(options["num_cpus"]), **options.get("resources", {})}
        offered = [n.get("Resources", {}) for n in self._ray.nodes() if n.get("Alive")]
        if not any(all(res.get(k, 0.0) >= v for k, v in wanted.items()) for res in offered):
            needs = ", ".join(f"{k} {v:g}" for k, v in wanted.items())
            raise ConfigError(
                f"no node of the Ray cluster at {self.section.address} offers what a {harness} rollout needs "
                f"({needs}): start one with `ray start --address HEAD:PORT --num-cpus N "
                f"--resources '{{\"{harness}\": 1}}'`, or lower [executor] num_cpus / resources"
            )
        self._checked.add(harness)

    async def _node_of(self, ref: ObjectRef, wait_s: float = 10.0) -> str:
        """The node a failed task last ran on, from Ray's state API ("an unknown node" if it cannot
        say). Ray reports task events asynchronously, so a just-failed task may not be known yet:
        ask again for up to `wait_s` (only a failed rollout pays it)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                ids = [a.node_id for a in task_attempts(ref.task_id().hex()) if a.node_id]
                if ids:
                    return self._nodes().get(ids[-1], ids[-1][:8])
            except Exception:  # the state API is best effort; the failed episode is recorded either way
                pass
            if time.monotonic() >= deadline:
                return "an unknown node"
            await asyncio.sleep(0.5)


def _host_port(address: str) -> str:
    """HOST:PORT of an address ("" for auto: Ray finds the cluster)."""
    return "" if address == "auto" else address.removeprefix("ray://")


def _death_errors(ray: Ray) -> tuple[type[BaseException], ...]:
    """Ray's errors for a rollout whose worker or node went away (after its retries)."""
    names = ("WorkerCrashedError", "NodeDiedError", "OutOfMemoryError", "ObjectLostError")
    return tuple(getattr(ray.exceptions, n) for n in names if hasattr(ray.exceptions, n))


def _chat_spec(harness: ChatHarness) -> HarnessSpec:
    llm = harness.llm
    settings = getattr(llm.backend, "settings", None)
    if not isinstance(settings, BackendSettings):
        raise ConfigError(
            f"the {llm.backend.name} backend cannot be rebuilt on a Ray worker (it keeps no BackendSettings); "
            "run with --executor local"
        )
    return HarnessSpec(
        name=harness.name,
        backend=f"{llm.backend.name}:{llm.backend.model}",
        backend_settings=settings,
        temperature=llm.temperature,
        max_tokens=llm.max_tokens,
        seed=llm.seed,
    )


def _agent_spec(harness: Harness) -> HarnessSpec:
    if not isinstance(harness, CLIHarness):
        raise ConfigError(f"the {harness.name} harness cannot run on a Ray cluster; run with --executor local")
    return HarnessSpec(name=harness.name, agent_settings=harness.settings.model_dump(mode="json"))
