"""One task of a cluster: the body of its Ray actor.

A task holds the variables and resources (queues, readers) of every session and client
that uses it, by name, as a TF1 server's resource containers do. Clients send it stages
(``partition.py``) as GraphDefs; it imports each once into a graph of its own, compiles a
plan and runs it with the run's received tensors.

A run's writes stay in an overlay of the run (``RunContext``) across its stages on this
task and are committed only once every stage of the run, on every task, has succeeded:
by the run's last stage when it depends on all the others, else by ``finish``, which
the client makes depend on every stage. A run that fails anywhere is aborted
(``abort``) and commits nothing anywhere. Runs that write take the locks of the keys
they write before their first stage here (in that stage, or by ``begin`` calls the
client chains task by task when several tasks write, so locks are taken in one order).
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Optional, Sequence

from tensorboard.compat.proto import graph_pb2

from gradflow.framework import errors
from gradflow.framework.graph import Graph
from gradflow.io.graph_import import import_graph_def
from gradflow.runtime.executor import RunContext, compile_plan
from gradflow.runtime.state_locks import StateLocks, release

__all__ = ["TaskActor", "TaskFailure", "DONE"]

DONE = True  # a stage's first result: small, what later stages and finish wait on
_PLAN_CACHE = 512  # stages compiled per task, least recently used dropped


class TaskFailure(Exception):
    """A run's failure on a task, in a form that crosses processes: the TF1 error class
    name, its message and the failing node's name (the client rebuilds the error)."""

    def __init__(self, error_name: str, message: str, node_name: Optional[str]):
        super().__init__(error_name, message, node_name)
        self.error_name = error_name
        self.message = message
        self.node_name = node_name

    def error(self, graph) -> errors.OpError:
        """The TF1 error, its op looked up in the client's ``graph``."""
        op = None
        if self.node_name is not None:
            try:
                op = graph.get_operation_by_name(self.node_name)
            except (KeyError, ValueError):
                op = None
        kind = getattr(errors, self.error_name, errors.UnknownError)
        return kind(None, op, self.message)


def _received(values: Sequence, picks: Sequence) -> list:
    """The stage's input values: per input, (argument, position in that received
    bundle), or (argument, -1) for a value passed whole (a feed)."""
    return [values[arg] if position < 0 else values[arg][position]
            for arg, position in picks]


class TaskActor:
    """The state and the stage runner of one task (``/job:J/replica:0/task:T``)."""

    def __init__(self, cluster: dict, job_name: str, task_index: int):
        self._cluster = cluster
        self._job = job_name
        self._task = task_index
        self._store: dict = {}
        self._locks = StateLocks()
        self._resources: dict = {}
        self._resources_lock = threading.Lock()
        self._plans: collections.OrderedDict = collections.OrderedDict()
        self._plans_lock = threading.Lock()
        self._runs: dict = {}      # run id -> its RunContext (the overlay of its writes)
        self._held: dict = {}      # run id -> the locks it took
        self._aborted: set = set()
        self._runs_lock = threading.Lock()

    def info(self) -> tuple:
        """The cluster (as a dict), this task's job and index."""
        return self._cluster, self._job, self._task

    def ping(self) -> bool:
        return True

    def resource(self, key, factory: Optional[Callable[[], Any]] = None):
        """A shared resource of this task (``Session.resource``'s contract)."""
        with self._resources_lock:
            found = self._resources.get(key)
            if found is None and factory is not None:
                found = self._resources[key] = factory()
            return found

    def _take_locks(self, run_id: str, keys: Optional[tuple]) -> None:
        """Takes the locks of the keys a run writes here (None: all state), unless the
        run was aborted while this waited."""
        held = self._locks.acquire(keys)
        with self._runs_lock:
            if run_id in self._aborted:
                release(held)
                raise TaskFailure("AbortedError", "The run was aborted on another task.",
                                  None)
            self._held[run_id] = held

    def begin(self, run_id: str, keys: Optional[tuple], *_previous) -> bool:
        """Takes a run's locks here before its first stage (runs writing on several
        tasks chain these calls in task order, so two runs never wait on each other)."""
        self._take_locks(run_id, keys)
        return DONE

    def run_stage(self, run_id: str, key: str, graph_def: Optional[bytes], names: tuple,
                  control: tuple, num_waits: int, *args) -> Any:
        """Runs one stage of a run.

        ``names``: the stage graph's (input, output, target) names. ``control``:
        (take the locks first?, the keys to lock, what to do at the end: 0 keep the run
        open, 1 close it (nothing written here), 2 commit and close it (every other stage
        of the run has succeeded), the number of outputs of each bundle, where each input
        is among the arguments: ``_received``). ``args``: the ``num_waits`` results
        waited on, then the received bundles and the feeds. Returns DONE, then one list
        per bundle.
        """
        lock, keys, end, bundles, picks = control
        if lock:
            self._take_locks(run_id, keys)
        with self._runs_lock:
            if run_id in self._aborted:
                raise TaskFailure("AbortedError", "The run was aborted on another task.", None)
            context = self._runs.get(run_id)
            if context is None:
                context = self._runs[run_id] = RunContext(self, self._store)
        try:
            plan = self._plan(key, graph_def, *names)
        except (TypeError, ValueError, KeyError) as err:  # a stage this task cannot build
            raise TaskFailure("InternalError", f"Task /job:{self._job}/replica:0/task:"
                              f"{self._task} could not build a stage: {err}", None) from None
        feeds = _received(args[num_waits:], picks)
        try:
            values = plan.run(context, feeds)
        except errors.OpError as err:
            node = err.op.name if err.op is not None else None
            raise TaskFailure(type(err).__name__, err.message, node) from None
        if end:
            self.finish(run_id, (), commit=end == 2)
        if not bundles:
            return DONE
        result, start = [DONE], 0
        for count in bundles:
            result.append(values[start:start + count])
            start += count
        return tuple(result)

    def _plan(self, key: str, graph_def: Optional[bytes], inputs: list, outputs: list,
              targets: list):
        """The compiled plan of a stage: imported and compiled on first use."""
        with self._plans_lock:
            found = self._plans.get(key)
            if found is not None:
                self._plans.move_to_end(key)
                return found
        if graph_def is None:
            raise TaskFailure("AbortedError", "The stage is no longer known to this task "
                              "(it was restarted or dropped the stage): run it again.", None)
        graph = Graph()
        with graph.as_default():
            import_graph_def(graph_pb2.GraphDef.FromString(graph_def), name="")
        plan = compile_plan(graph, [graph.get_tensor_by_name(name) for name in outputs],
                            [graph.get_tensor_by_name(name) for name in inputs],
                            [graph.get_operation_by_name(name) for name in targets])
        with self._plans_lock:
            self._plans[key] = plan
            while len(self._plans) > _PLAN_CACHE:
                self._plans.popitem(last=False)
        return plan

    def finish(self, run_id: str, read_keys: Sequence[str], *_stages_done,
               commit: bool = True) -> list:
        """Commits the run's writes here (every stage of the run succeeded), releases its
        locks and returns the values of ``read_keys`` (fetched variables) after it."""
        with self._runs_lock:
            context = self._runs.pop(run_id, None)
            held = self._held.pop(run_id, ())
        try:
            if context is not None and commit:
                context.commit()
            reader = RunContext(self, self._store)
            values = []
            for key in read_keys:
                try:
                    values.append(reader.read_variable(key, key).copy())
                except errors.OpError as err:
                    raise TaskFailure(type(err).__name__, err.message, None) from None
            return values
        finally:
            release(held)

    def abort(self, run_id: str) -> bool:
        """Drops a failed run's overlay and locks; its later stages here will refuse."""
        with self._runs_lock:
            self._aborted.add(run_id)
            self._runs.pop(run_id, None)
            held = self._held.pop(run_id, ())
        release(held)
        return DONE
