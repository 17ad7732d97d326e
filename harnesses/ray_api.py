"""The few calls of Ray that the Ray executor makes, typed here: Ray is an optional extra (`pip
install 'skillsleep[ray]'`) and leaves some of them unannotated, so it is imported by name, only
when a cluster is used, and seen through these protocols; the type check is the same with Ray
installed or not. Nothing else imports Ray (harnesses/cluster.py, harnesses/cluster_worker.py)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol, cast

__all__ = ["ObjectRef", "Ray", "RemoteFunction", "TaskState", "ray", "task_attempts"]


class TaskID(Protocol):
    def hex(self) -> str: ...


class ObjectRef(Protocol):
    """A Ray task's result to come."""

    def future(self) -> Future[Any]: ...

    def task_id(self) -> TaskID: ...


class RemoteFunction(Protocol):
    """A function Ray runs as a task on the cluster (`ray.remote(fn)`)."""

    def options(self, **options: Any) -> RemoteFunction: ...

    def remote(self, *args: Any) -> ObjectRef: ...


class RuntimeContext(Protocol):
    @property
    def gcs_address(self) -> str: ...

    def get_node_id(self) -> str: ...


class RayErrors(Protocol):
    """`ray.exceptions` (the errors of a worker or node that went away are looked up by name)."""

    RaySystemError: type[Exception]


class RayUtil(Protocol):
    def get_node_ip_address(self) -> str: ...


class Ray(Protocol):
    """The `ray` module, as far as skillsleep uses it."""

    exceptions: RayErrors
    util: RayUtil

    def init(self, *, address: str, log_to_driver: bool, logging_level: int) -> object: ...

    def get_runtime_context(self) -> RuntimeContext: ...

    def remote(self, function: Callable[..., Any]) -> RemoteFunction: ...

    def cluster_resources(self) -> dict[str, float]: ...

    def shutdown(self) -> None: ...

    def cancel(self, ref: ObjectRef) -> None: ...

    def nodes(self) -> list[dict[str, Any]]: ...


class TaskState(Protocol):
    """One attempt of a task, as Ray's state API reports it."""

    node_id: str | None


def ray() -> Ray:
    """The `ray` module (an ImportError when Ray is not installed)."""
    return cast(Ray, importlib.import_module("ray"))


def task_attempts(task_id: str) -> list[TaskState]:
    """The attempts of the task `task_id` that Ray's state API knows of (it reports them late)."""
    found = importlib.import_module("ray.util.state").get_task(task_id)
    return [a for a in (found if isinstance(found, list) else [found]) if a is not None]
