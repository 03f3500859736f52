"""``train.QueueRunner``: threads that keep running a queue's enqueue ops.

Each runner thread loops ``sess.run(enqueue_op)`` until the queue's input ends
(``OutOfRangeError``: the last thread closes the queue), the coordinator asks for a
stop (the queue is then cancelled), or the session closes: runners register with
``Session.resource`` so that ``Session.close()`` ends and joins their threads.
"""
from __future__ import annotations

import itertools
import threading
from typing import Optional, Sequence

from gradflow.framework import errors
from gradflow.framework.default_session import get_default_session
from gradflow.framework.graph import GraphKeys, Operation, get_default_graph
from gradflow.ops.data_flow_ops import QueueBase
from gradflow.train.coordinator import Coordinator

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

_ids = itertools.count()
_POLL_S = 0.05


class _RunnerThreads:
    """A session resource: the threads of one runner in that session."""

    def __init__(self):
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def close(self) -> None:
        self.stop.set()

    def join(self) -> None:
        for thread in self.threads:
            if thread is not threading.current_thread():
                thread.join(5.0)


class QueueRunner:
    """Holds a queue, its enqueue ops (one thread each), and its close and cancel ops."""

    def __init__(self, queue: Optional[QueueBase] = None,
                 enqueue_ops: Optional[Sequence[Operation]] = None,
                 close_op: Optional[Operation] = None, cancel_op: Optional[Operation] = None,
                 queue_closed_exception_types: Optional[Sequence[type]] = None,
                 queue_runner_def=None, import_scope: Optional[str] = None):
        if queue_runner_def is not None or import_scope is not None:
            raise ValueError("QueueRunner: queue_runner_def and import_scope are not supported "
                             "by gradflow")
        if queue is None or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        self._closed_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        self._key = ("queue-runner", next(_ids))
        self._lock = threading.Lock()
        self._runs_per_session: dict = {}
        self._exceptions: list = []

    @property
    def queue(self) -> QueueBase:
        return self._queue

    @property
    def enqueue_ops(self) -> list:
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Operation:
        return self._close_op

    @property
    def cancel_op(self) -> Operation:
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple:
        return self._closed_types

    @property
    def exceptions_raised(self) -> list:
        return list(self._exceptions)

    @property
    def name(self) -> str:
        return self._queue.name

    def _run(self, sess, enqueue_op, coord: Optional[Coordinator], stop: threading.Event):
        decremented = False
        try:
            while not stop.is_set() and not (coord is not None and coord.should_stop()):
                try:
                    sess.run(enqueue_op)
                except self._closed_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last and not stop.is_set():
                        sess.run(self._close_op)
                    return
        except errors.CancelledError:
            return  # the queue was cancelled: a stop or the session closing
        except RuntimeError as err:
            if stop.is_set() or "closed Session" in str(err):
                return  # the session closed under us
            raise
        except Exception as err:  # noqa: BLE001 - handed to the coordinator, as TF does
            self._exceptions.append(err)
            if coord is None:
                raise
            coord.request_stop(err)
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, coord: Coordinator, stop: threading.Event) -> None:
        while not coord.wait_for_stop(_POLL_S):
            if stop.is_set():
                return
        if not stop.is_set():
            try:
                sess.run(self._cancel_op)
            except (errors.OpError, RuntimeError) as err:
                if not stop.is_set():
                    coord.request_stop(err)

    def create_threads(self, sess, coord: Optional[Coordinator] = None, daemon: bool = False,
                       start: bool = False) -> list:
        """The threads running the enqueue ops in ``sess`` (and, with ``coord``, one that
        cancels the queue on a stop request); started with ``start``."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []  # already running in this session
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions = []
        resource = sess.resource(self._key + (next(_ids),), _RunnerThreads)
        threads = [threading.Thread(target=self._run, args=(sess, op, coord, resource.stop),
                                    name="gradflow-queue-runner", daemon=daemon)
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, coord, resource.stop),
                                            name="gradflow-queue-runner-cancel", daemon=daemon))
        resource.threads.extend(threads)
        for thread in threads:
            if coord is not None:
                coord.register_thread(thread)
            if start:
                thread.start()
        return threads


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds ``qr`` to the graph's ``QUEUE_RUNNERS`` collection."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord: Optional[Coordinator] = None, daemon: bool = True,
                        start: bool = True, collection: str = GraphKeys.QUEUE_RUNNERS) -> list:
    """Starts the threads of every queue runner in the collection; returns them."""
    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    threads = []
    for runner in sess.graph.get_collection(collection):
        threads.extend(runner.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
