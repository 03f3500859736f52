"""Ray plumbing: connecting, and the named actor of each task of a cluster.

Ray is an optional dependency (``pip install "gradflow[distributed]"``), imported here
only when a ``Server`` or a cluster session needs it. Every task's actor is named by
its address (``task:host:port``) in the ``gradflow`` namespace, so every process of a
between-graph program, connected to the same Ray cluster, finds the same actors.

Which Ray cluster: the ``address`` argument of ``connect``, else the
``GRADFLOW_RAY_ADDRESS`` environment variable, else Ray's own ``RAY_ADDRESS``, else a
new local Ray instance.
"""
from __future__ import annotations

import os
import time
from typing import Optional

from gradflow.framework import errors
from gradflow.distribute.task import TaskActor

__all__ = ["connect", "ray_module", "actor_name", "create_task_actor", "find_task_actor",
           "wait_for_task_actor", "NAMESPACE"]

NAMESPACE = "gradflow"
# How long a new session waits for a cluster's tasks to be started, in seconds, unless
# GRADFLOW_TASK_WAIT_S says otherwise (TF1 waits forever; 0 fails at once).
DEFAULT_WAIT_S = 120.0
_remote_class = None


def ray_module():
    """The ``ray`` module; ImportError saying how to install it when absent."""
    try:
        import ray  # optional heavy dependency: only cluster programs need it
    except ImportError:
        raise ImportError("Running on a cluster needs Ray: pip install "
                          "\"gradflow[distributed]\"") from None
    return ray


def connect(address: Optional[str] = None):
    """Joins (or starts) the Ray cluster once per process; returns the ``ray`` module."""
    ray = ray_module()
    if not ray.is_initialized():
        address = address or os.environ.get("GRADFLOW_RAY_ADDRESS") or None
        options = {"ignore_reinit_error": True, "include_dashboard": False,
                   "log_to_driver": os.environ.get("GRADFLOW_RAY_LOGS", "") == "1"}
        if address is None and not os.environ.get("RAY_ADDRESS"):
            address = "local"  # a new instance, not whatever `ray start` left running
            cpus = os.environ.get("GRADFLOW_RAY_NUM_CPUS")
            if cpus:
                options["num_cpus"] = int(cpus)
        ray.init(address=address, **options)
    return ray


def actor_name(address: str) -> str:
    return f"task:{address}"


def _actor_class(ray):
    global _remote_class
    if _remote_class is None:
        # threaded: concurrent clients' runs, and runs blocking on a queue, share a task
        _remote_class = ray.remote(num_cpus=0, max_concurrency=64)(TaskActor)
    return _remote_class


def _node_resource(ray, address: str) -> dict:
    """Pins a task to the Ray node whose IP is its host, where there is one."""
    host = address.rsplit(":", 1)[0]
    if host in ("localhost", "127.0.0.1", ""):
        return {}
    alive = {node["NodeManagerAddress"] for node in ray.nodes() if node.get("Alive")}
    return {f"node:{host}": 0.001} if host in alive else {}


def create_task_actor(cluster: dict, job_name: str, task_index: int, address: str):
    """Starts the actor of one task; TF1's UnknownError when its address is taken."""
    ray = connect()
    name = actor_name(address)
    if find_task_actor(address) is not None:
        raise errors.UnknownError(None, None, f"Could not start gRPC server: a task is "
                                  f"already running at {address}")
    actor = _actor_class(ray).options(
        name=name, namespace=NAMESPACE, resources=_node_resource(ray, address)
    ).remote(cluster, job_name, task_index)
    ray.get(actor.ping.remote())
    return actor


def find_task_actor(address: str):
    """The live actor of the task at ``address``, or None."""
    ray = connect()
    try:
        return ray.get_actor(actor_name(address), namespace=NAMESPACE)
    except ValueError:
        return None


def wait_for_task_actor(address: str, task: str, timeout: Optional[float] = None):
    """The actor at ``address``, waiting for its process to start it, as TF1's
    CreateSession waits for the cluster's tasks; UnavailableError after ``timeout``."""
    if timeout is None:
        timeout = float(os.environ.get("GRADFLOW_TASK_WAIT_S", DEFAULT_WAIT_S))
    deadline = time.monotonic() + timeout
    while True:
        actor = find_task_actor(address)
        if actor is not None:
            return actor
        if time.monotonic() >= deadline:
            raise errors.UnavailableError(None, None, f"Task {task} at {address} is not "
                                          "running: no server was started for it")
        time.sleep(0.2)
