"""``Server``: starts one task of a cluster, as a Ray actor (``tf.train.Server``).

The actor holds the task's variables and runs the stages clients send it; ``target``
(``grpc://host:port``, the task's address) is what ``Session(target)`` takes. The
address only names the task: no socket is opened, Ray carries every message.
"""
from __future__ import annotations

import socket
import time
from typing import Optional, Union

from tensorboard.compat.proto import cluster_pb2

from gradflow.distribute import ray_tasks
from gradflow.distribute.cluster_spec import ClusterSpec
from gradflow.framework import errors

__all__ = ["Server", "ServerDef"]


class ServerDef:
    """What a server runs: the cluster, its own job and task, the protocol (TF's
    ``ServerDef`` message, whose protocol buffer class gradflow does not carry)."""

    def __init__(self, cluster: cluster_pb2.ClusterDef, job_name: str, task_index: int,
                 protocol: str = "grpc", default_session_config=None):
        self.cluster = cluster
        self.job_name = job_name
        self.task_index = task_index
        self.protocol = protocol
        self.default_session_config = default_session_config

    def __repr__(self) -> str:
        return (f"ServerDef(job_name={self.job_name!r}, task_index={self.task_index}, "
                f"protocol={self.protocol!r}, cluster={ClusterSpec(self.cluster)!r})")


def _server_def(server_or_cluster_def, job_name, task_index, protocol, config) -> ServerDef:
    if isinstance(server_or_cluster_def, ServerDef):
        given = server_or_cluster_def
        job_name = given.job_name if job_name is None else job_name
        task_index = given.task_index if task_index is None else task_index
        protocol = given.protocol if protocol is None else protocol
        config = given.default_session_config if config is None else config
        server_or_cluster_def = given.cluster
    cluster = ClusterSpec(server_or_cluster_def)
    if job_name is None:
        if len(cluster.jobs) != 1:
            raise ValueError("Must specify an explicit `job_name`.")
        job_name = cluster.jobs[0]
    if task_index is None:
        indices = cluster.task_indices(job_name) if job_name in cluster.jobs else []
        if len(indices) != 1:
            raise ValueError("Must specify an explicit `task_index`.")
        task_index = indices[0]
    if job_name not in cluster.jobs:
        raise errors.InternalError(None, None, f'Job "{job_name}" was not defined in cluster')
    if task_index not in cluster.task_indices(job_name):
        raise errors.InternalError(None, None, f'Task {task_index} was not defined in job '
                                   f'"{job_name}"')
    protocol = "grpc" if protocol is None else protocol
    if protocol != "grpc":
        raise errors.NotFoundError(None, None, "No server factory registered for the given "
                                   f"ServerDef (protocol {protocol!r}); the available "
                                   "server factories are: [ GRPC_SERVER ]")
    return ServerDef(cluster.as_cluster_def(), job_name, task_index, protocol, config)


class Server:
    """One task of a cluster, running as a Ray actor (``tf.train.Server``)."""

    def __init__(self, server_or_cluster_def: Union[ClusterSpec, dict, ServerDef,
                                                    cluster_pb2.ClusterDef],
                 job_name: Optional[str] = None, task_index: Optional[int] = None,
                 protocol: Optional[str] = None, config=None, start: bool = True):
        self._server_def = _server_def(server_or_cluster_def, job_name, task_index,
                                       protocol, config)
        cluster = ClusterSpec(self._server_def.cluster)
        self._cluster = cluster
        self._address = cluster.task_address(self._server_def.job_name,
                                             self._server_def.task_index)
        self._actor = None
        if start:
            self.start()

    @property
    def server_def(self) -> ServerDef:
        return self._server_def

    @property
    def target(self) -> str:
        """The session target of this task: ``grpc://host:port``."""
        return "grpc://" + self._address

    def start(self) -> None:
        """Starts the task's actor (once; a second call does nothing)."""
        if self._actor is None:
            self._actor = ray_tasks.create_task_actor(
                self._cluster.as_dict(), self._server_def.job_name,
                self._server_def.task_index, self._address)

    def join(self) -> None:
        """Blocks while the task runs (a ps task's program ends here, as in TF1);
        returns when its actor has been stopped or has died."""
        self.start()
        ray = ray_tasks.connect()
        while True:
            try:
                ray.get(self._actor.ping.remote())
            except ray.exceptions.RayActorError:
                return
            time.sleep(0.5)

    def stop(self) -> None:
        """Ends the task's actor: its variables are lost (gradflow's addition; a TF1
        server lives as long as its process)."""
        if self._actor is not None:
            ray_tasks.connect().kill(self._actor)
            self._actor = None

    @staticmethod
    def create_local_server(config=None, start: bool = True) -> "Server":
        """A one-task cluster (job ``localhost``) on an unused local port."""
        with socket.socket() as probe:  # an unused port names the task uniquely here
            probe.bind(("localhost", 0))
            port = probe.getsockname()[1]
        return Server({"localhost": [f"localhost:{port}"]}, protocol="grpc", config=config,
                      start=start)
