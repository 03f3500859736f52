"""``ClusterSpec``: the jobs of a cluster and the network address of each of their tasks.

As in TF1 a job's tasks are a list (indices 0..n-1) or a dict from task index to address
(sparse indices); ``as_cluster_def`` gives TF's ``ClusterDef`` protocol buffer, which the
constructor also accepts. Nothing here needs Ray.
"""
from __future__ import annotations

from typing import Union

from tensorboard.compat.proto import cluster_pb2

__all__ = ["ClusterSpec"]

_BAD_CLUSTER = ("`cluster` must be a dictionary mapping one or more job names to lists of "
                "network addresses, or a `ClusterDef` protocol buffer")


def _text(value, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{what} {value!r} must be bytes or unicode")
    return value


def _job_tasks(job: str, tasks) -> dict[int, str]:
    if isinstance(tasks, (list, tuple)):
        return {i: _text(address, "Task address") for i, address in enumerate(tasks)}
    if isinstance(tasks, dict):
        result = {}
        for index, address in tasks.items():
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"Task index {index!r} of job '{job}' must be an integer")
            result[index] = _text(address, "Task address")
        return result
    raise TypeError(f"The tasks for job '{job}' must be a list or a dictionary from integers "
                    "to strings.")


class ClusterSpec:
    """A cluster: job name -> {task index -> "host:port"} (``tf.train.ClusterSpec``)."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            self._jobs = {job: dict(tasks) for job, tasks in cluster._jobs.items()}
        elif isinstance(cluster, cluster_pb2.ClusterDef):
            self._jobs = {}
            for job in cluster.job:
                if job.name in self._jobs:
                    raise ValueError(f"Duplicated job name: {job.name}")
                self._jobs[job.name] = dict(sorted(job.tasks.items()))
        elif isinstance(cluster, dict):
            self._jobs = {}
            for job, tasks in cluster.items():
                name = _text(job, "Job name")
                self._jobs[name] = _job_tasks(name, tasks)
        else:
            raise TypeError(_BAD_CLUSTER)
        self._sparse = {job for job, tasks in self._jobs.items()
                        if sorted(tasks) != list(range(len(tasks)))}

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other) -> bool:
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(tuple((job, tuple(sorted(t.items()))) for job, t in sorted(self._jobs.items())))

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"

    def as_dict(self) -> dict[str, Union[list, dict]]:
        """Each job's tasks: a list when the indices are 0..n-1, else a dict."""
        return {job: dict(sorted(tasks.items())) if job in self._sparse
                else [tasks[i] for i in range(len(tasks))]
                for job, tasks in sorted(self._jobs.items())}

    def as_cluster_def(self) -> cluster_pb2.ClusterDef:
        """The cluster as TF's ``ClusterDef`` protocol buffer."""
        result = cluster_pb2.ClusterDef()
        for job, tasks in sorted(self._jobs.items()):
            entry = result.job.add(name=job)
            for index, address in sorted(tasks.items()):
                entry.tasks[index] = address
        return result

    @property
    def jobs(self) -> list[str]:
        return sorted(self._jobs)

    def _tasks(self, job_name: str) -> dict[int, str]:
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: str) -> int:
        return len(self._tasks(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        return sorted(self._tasks(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        tasks = self._tasks(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index} in job '{job_name}'") from None

    def job_tasks(self, job_name: str) -> list:
        """The addresses of ``job_name``'s tasks by index, None where an index is unused."""
        tasks = self._tasks(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]

    def tasks(self) -> list[tuple[str, int, str]]:
        """Every task of the cluster as (job, index, address), jobs and indices sorted."""
        return [(job, index, address) for job in self.jobs
                for index, address in sorted(self._jobs[job].items())]
