"""The client side of a cluster session: ``Session(target)`` runs through a ``ClusterRunner``.

Per run the client partitions the needed ops into stages (``partition.py``, once per
signature) and submits everything at once: every stage on its task's actor (a stage's
inputs are the Ray object refs of earlier stages' output bundles, so tensors go from
task to task without passing through the client); the locks of the state the run
writes (taken by a single writing task's first stage, or by ``begin`` calls chained in
task order when several tasks write); and the commit (by the run's last stage when it
depends on all others, else by a ``finish`` per writing task that Ray runs only after
every stage succeeded). It then waits once, for the fetched bundles and every stage.
A failure anywhere aborts the run on every task: nothing it wrote is committed.
"""
from __future__ import annotations

import itertools
import threading
import time
import uuid
from typing import Optional, Sequence

import numpy as np

from gradflow.distribute import ray_tasks
from gradflow.distribute.cluster_spec import ClusterSpec
from gradflow.distribute.partition import Partitioning, partition, task_name
from gradflow.distribute.task import TaskFailure
from gradflow.framework import errors
from gradflow.framework.device_spec import DeviceSpec
from gradflow.framework.graph import Graph, Operation, Tensor
from gradflow.runtime.executor import graph_structure_version

__all__ = ["ClusterRunner", "parse_target"]

_SCHEME = "grpc://"
_POLL_S = 0.2  # how often a waiting run checks whether its session was closed


class _Closed(Exception):
    """The session was closed while a run waited."""


def parse_target(target: str) -> str:
    """The task address a session target names (``grpc://host:port``)."""
    if not target.startswith(_SCHEME) or len(target) == len(_SCHEME):
        raise errors.NotFoundError(
            None, None, f"No session factory registered for the given session options: "
            f"{{target: \"{target}\"}} (a cluster target is grpc://host:port, a server's "
            "target)")
    return target[len(_SCHEME):]


def _filtered(tasks: list, config) -> list:
    """The tasks a session uses: those matching ``config.device_filters``, if any."""
    filters = list(getattr(config, "device_filters", ()) or ())
    if not filters:
        return tasks
    specs = [DeviceSpec.from_string(f) for f in filters]
    return [(job, index) for job, index in tasks
            if any((s.job is None or s.job == job) and (s.task is None or s.task == index)
                   for s in specs)]


class ClusterRunner:
    """Runs a session's steps on the cluster its target belongs to."""

    def __init__(self, target: str, graph: Graph, config):
        address = parse_target(target)
        self._ray = ray_tasks.connect()
        self._graph = graph
        own = ray_tasks.wait_for_task_actor(address, target)
        cluster_dict, job, index = self._ray.get(own.info.remote())
        self._cluster = ClusterSpec(cluster_dict)
        self._default = (job, index)
        self._known = {(j, i) for j, i, _ in self._cluster.tasks()}
        self._addresses = {(j, i): a for j, i, a in self._cluster.tasks()}
        self._actors = {self._default: own}
        for task in _filtered(sorted(self._known), config):
            if task not in self._actors:
                self._actors[task] = ray_tasks.wait_for_task_actor(
                    self._addresses[task], task_name(task))
        self._partitions: dict = {}
        self._shipped: dict = {task: set() for task in self._actors}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._run_ids = itertools.count()
        self._prefix = uuid.uuid4().hex[:12]
        # ConfigProto.operation_timeout_in_ms: a run taking longer fails (0: no limit)
        timeout_ms = getattr(config, "operation_timeout_in_ms", 0) or 0
        self._timeout = timeout_ms / 1000 if timeout_ms > 0 else None

    def list_devices(self) -> list:
        return [task_name(task) + "/device:CPU:0" for task in sorted(self._known)]

    def close(self) -> None:
        """Forgets the partitions; runs still waiting end with CancelledError."""
        self._closed.set()
        self._partitions.clear()

    def _partitioning(self, fetches, targets, feeds) -> Partitioning:
        key = (tuple(fetches), tuple(feeds), tuple(targets))
        version = graph_structure_version(self._graph)
        found = self._partitions.get(key)
        if found is None or found[0] != version:
            found = (version, partition(self._graph, fetches, targets, feeds, self._default,
                                        self._known))
            self._partitions[key] = found
        return found[1]

    def _actor(self, task):
        actor = self._actors.get(task)
        if actor is None:  # outside the session's device filters
            raise errors.InvalidArgumentError(
                None, None, f"Task {task_name(task)} is filtered out of this session by "
                "ConfigProto.device_filters")
        return actor

    def run(self, fetches: Sequence[Tensor], targets: Sequence[Operation],
            feeds: Sequence[Tensor], feed_values: Sequence) -> list:
        part = self._partitioning(fetches, targets, feeds)
        for task in part.tasks:
            self._actor(task)  # a task outside the device filters fails before any call
        ray = self._ray
        run_id = f"{self._prefix}-{next(self._run_ids)}"
        try:
            results, finishes = self._submit(run_id, part, feed_values)
        except BaseException:  # e.g. a feed Ray cannot serialize: undo what was sent
            self._failed(run_id, part, None)
            raise
        done = [r[0] for r in results]
        bundles = sorted({source[1:3] for source in part.fetch_sources
                          if source[0] == "stage"})
        # every stage's DONE too: a run returns when it has ended on every task
        waited = [results[s][1][b] for s, b in bundles] + list(finishes.values()) + done
        try:
            got = self._wait(waited)
        except ray.exceptions.GetTimeoutError:
            _collect(ray, waited)
            self._failed(run_id, part, None)
            raise errors.DeadlineExceededError(
                None, None, f"Timed out: the run took longer than operation_timeout_in_ms="
                f"{self._timeout * 1000:.0f}") from None
        except _Closed:
            self._failed(run_id, part, None)
            raise errors.CancelledError(None, None, "The session was closed while the run "
                                        "was waiting (a queue or accumulator op)") from None
        except Exception as err:  # a Ray error: rebuilt as TF1's, after aborting the run
            _collect(ray, waited)
            raise self._failed(run_id, part, err) from None
        with self._lock:
            for stage in part.stages:
                self._shipped[stage.task].add(stage.key)
        fetched = dict(zip(bundles, got[:len(bundles)], strict=True))
        read_iters = {task: iter(values) for task, values
                      in zip(finishes, got[len(bundles):len(bundles) + len(finishes)],
                             strict=True)}
        values = []
        for source in part.fetch_sources:
            if source[0] == "feed":
                values.append(feed_values[source[1]])
            elif source[0] == "variable":
                values.append(_writable(next(read_iters[source[1]])))
            else:
                values.append(_writable(fetched[source[1:3]][source[3]]))
        return values

    def _wait(self, refs: list) -> list:
        """The values of ``refs``, waited for in slices so that closing the session
        (``close``, e.g. a MonitoredSession stopping its queue runners) ends a run
        blocked on a queue or accumulator of a task; the run is then aborted there."""
        ray = self._ray
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        pending = list(dict.fromkeys(refs))  # ray.wait takes each ref once
        while pending:
            if self._closed.is_set():
                raise _Closed()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise ray.exceptions.GetTimeoutError()
            wait_s = _POLL_S if left is None else min(_POLL_S, left)
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=wait_s)
        return ray.get(refs)

    def _submit(self, run_id: str, part: Partitioning, feed_values: Sequence) -> tuple:
        """Submits the run's calls; returns per stage (its DONE ref, its bundles' refs),
        and the ``finish`` call of each task that needs one."""
        tokens = self._begin(run_id, part)
        shared = _shared_feeds(part, feed_values, self._ray)
        reads: dict = {}
        for task, key in part.variable_fetches:
            reads.setdefault(task, []).append(key)
        results: list = []
        for index, stage in enumerate(part.stages):
            waits = [results[i][0] for i in stage.after]
            if stage.task in tokens:
                waits.append(tokens[stage.task])
            args, picks, slots = [], [], {}
            for source in stage.input_sources:
                where = source[:2] if source[0] == "feed" else source[:3]
                if where not in slots:
                    slots[where] = len(args)
                    if source[0] == "feed":
                        args.append(shared.get(source[1], feed_values[source[1]]))
                    else:
                        args.append(results[source[1]][1][source[2]])
                picks.append((slots[where], -1 if source[0] == "feed" else source[3]))
            lock = not tokens and stage.task in part.writes and \
                index == part.first_on[stage.task]
            control = (lock, part.writes.get(stage.task), self._end(part, index, reads),
                       stage.bundles, picks)
            with self._lock:
                graph_def = None if stage.key in self._shipped[stage.task] else stage.graph_def
            call = self._actor(stage.task).run_stage.options(
                num_returns=1 + len(stage.bundles))
            returned = call.remote(run_id, stage.key, graph_def, stage.names, control,
                                   len(waits), *waits, *args)
            results.append((returned, []) if not stage.bundles else
                           (returned[0], list(returned[1:])))
        done = [r[0] for r in results]
        finishes = {task: self._actor(task).finish.remote(run_id, reads.get(task, ()), *done)
                    for task in part.tasks if self._needs_finish(part, task, reads)}
        return results, finishes

    def _begin(self, run_id: str, part: Partitioning) -> dict:
        """When several tasks write, takes their locks first, chained in task order (one
        order for every run: no deadlock); a single writer locks in its first stage."""
        if len(part.writes) < 2:
            return {}
        tokens, previous = {}, ()
        for task in sorted(part.writes):
            previous = (self._actor(task).begin.remote(run_id, part.writes[task], *previous),)
            tokens[task] = previous[0]
        return tokens

    @staticmethod
    def _end(part: Partitioning, index: int, reads: dict) -> int:
        """What a stage does last: 0 nothing, 1 close the run on its task (its last
        stage there, nothing to commit or read), 2 commit and close (the run's sink)."""
        task = part.stages[index].task
        if index != part.last_on[task] or task in reads:
            return 0
        if task not in part.writes:
            return 1
        return 2 if index == part.sink else 0

    @staticmethod
    def _needs_finish(part: Partitioning, task, reads: dict) -> bool:
        last = part.last_on.get(task)
        return last is None or ClusterRunner._end(part, last, reads) == 0

    def _failed(self, run_id: str, part: Partitioning,
                err: Optional[Exception]) -> Optional[Exception]:
        """Aborts the run on every live task; the TF1 error for ``err``."""
        ray = self._ray
        tasks = part.tasks
        aborts = [self._actors[t].abort.remote(run_id) for t in tasks if t in self._actors]
        ray.wait(aborts, num_returns=len(aborts), timeout=30)
        if err is None:
            return None
        cause = getattr(err, "cause", None)
        if isinstance(cause, TaskFailure):
            if cause.error_name == "AbortedError" and cause.node_name is None:
                with self._lock:  # a task forgot a stage: ship them again next time
                    for shipped in self._shipped.values():
                        shipped.clear()
            return cause.error(self._graph)
        if isinstance(err, ray.exceptions.RayActorError) or \
                isinstance(cause, ray.exceptions.RayActorError):
            return self._unavailable(tasks, err)
        if isinstance(err, ray.exceptions.RayError):
            return errors.UnknownError(None, None, f"The cluster run failed: {err}")
        return err

    def _unavailable(self, tasks: list, err: Exception) -> errors.OpError:
        """UnavailableError naming the dead task(s); AbortedError when a new task has
        been started at a dead one's address (the session must be created again)."""
        ray = self._ray
        pings = {t: self._actors[t].ping.remote() for t in tasks if t in self._actors}
        dead = []
        for task, ref in pings.items():
            try:
                ray.get(ref, timeout=30)
            except (ray.exceptions.RayError, TimeoutError):
                dead.append(task)
        names = ", ".join(task_name(t) for t in dead) or "a task of the cluster"
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        for task in dead:
            replacement = ray_tasks.find_task_actor(self._addresses[task])
            if replacement is not None:
                return errors.AbortedError(
                    None, None, f"Task {task_name(task)} was restarted: the session's state "
                    "on it is gone; create the session again (and restore a checkpoint)")
        return errors.UnavailableError(None, None, f"Task {names} is unavailable: its Ray "
                                       f"actor died ({reason})")


def _shared_feeds(part: Partitioning, feed_values: Sequence, ray) -> dict:
    """Each fed value used by several stages, put in Ray's object store once."""
    uses: dict = {}
    for stage in part.stages:
        for source in stage.input_sources:
            if source[0] == "feed":
                uses[source[1]] = uses.get(source[1], 0) + 1
    return {i: ray.put(feed_values[i]) for i, count in uses.items() if count > 1}


def _collect(ray, refs: list) -> None:
    """Takes the outcome of a failed run's calls that have ended (Ray would log each
    failure nobody asked for); calls still blocked are left to end on their own."""
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=5)
    for ref in ready:
        try:
            ray.get(ref)
        except Exception:  # the run's error is reported once, by the caller
            continue


def _writable(value):
    """A fetched array the caller may modify (Ray hands out read-only views)."""
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()
    return value

