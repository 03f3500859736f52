"""``Supervisor``: TF1's older training wrapper (before ``MonitoredTrainingSession``).

It completes the graph with TF1's defaults (init, local init, ready ops, a Saver, the
merged summaries, the global step) and finalizes it; ``managed_session`` /
``prepare_or_wait_for_session`` make a session through a ``SessionManager`` (the chief
restores or initializes from ``logdir``, other workers wait for the chief) and, on the
chief, start the standard services: a thread saving a checkpoint every
``save_model_secs``, one writing summaries every ``save_summaries_secs``, and the graph's
queue runners. A ``Coordinator`` stops them: ``should_stop``, ``request_stop``, ``stop``.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Callable, Iterator, Optional

from gradflow.framework.graph import GraphKeys, get_default_graph
from gradflow.io.graph_def import write_graph
from gradflow.logging import INFO, log_first_n
from gradflow.ops import control
from gradflow.ops.state import (global_variables, global_variables_initializer,
                                local_variables_initializer, report_uninitialized_variables)
from gradflow.summary.summary import merge_all
from gradflow.summary.writer import FileWriter
from gradflow.train.coordinator import Coordinator
from gradflow.train.queue_runner import start_queue_runners
from gradflow.train.saver import Saver
from gradflow.train.session_manager import SessionManager
from tensorboard.compat.proto import event_pb2, summary_pb2

__all__ = ["Supervisor"]


class _Looper(threading.Thread):
    """Calls ``target`` every ``interval`` seconds until the coordinator stops."""

    def __init__(self, coord: Coordinator, interval: Optional[float], target: Callable,
                 args=(), kwargs=None):
        super().__init__(name="gradflow-supervisor", daemon=True)
        self._coord = coord
        self._interval = interval
        self._target = target
        self._args = tuple(args or ())
        self._kwargs = dict(kwargs or {})

    def run(self) -> None:
        with self._coord.stop_on_exception():
            if self._interval is None:
                while not self._coord.should_stop():
                    self._target(*self._args, **self._kwargs)
            else:
                # as TF1's: a first call at once (the step-0 checkpoint and summaries),
                # then one every ``interval`` seconds
                due = time.time()
                while not self._coord.wait_for_stop(max(0.0, due - time.time())):
                    due += self._interval
                    self._target(*self._args, **self._kwargs)


class _StepCounter:
    """TF1's step-counter service: every ``save_summaries_secs`` it writes the training
    speed as the summary ``<global step name>/sec`` (and logs it, the first 10 times)."""

    def __init__(self, sess, global_step, writer):
        self._sess, self._global_step, self._writer = sess, global_step, writer
        self._tag = f"{global_step.op.name}/sec"
        self._last_time = time.time()
        self._last_step = int(sess.run(global_step))

    def __call__(self) -> None:
        now, step = time.time(), int(self._sess.run(self._global_step))
        elapsed = now - self._last_time
        self._last_time, added = now, step - self._last_step
        self._last_step = step
        if elapsed > 0:
            per_sec = added / elapsed
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(
                tag=self._tag, simple_value=per_sec)])
            self._writer.add_summary(summary, step)
            log_first_n(INFO, "%s: %g", 10, self._tag, per_sec)


class Supervisor:
    """Initializes, saves and supervises a training session (see the module docstring)."""

    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief: bool = True, init_op=USE_DEFAULT,
                 init_feed_dict: Optional[dict] = None, local_init_op=USE_DEFAULT,
                 logdir: Optional[str] = None, summary_op=USE_DEFAULT, saver=USE_DEFAULT,
                 global_step=USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 session_manager: Optional[SessionManager] = None,
                 summary_writer=USE_DEFAULT, init_fn: Optional[Callable] = None,
                 local_init_run_options=None):
        self._graph = graph if graph is not None else get_default_graph()
        with self._graph.as_default(), self._graph.atomic():  # a bad call adds nothing
            self._ready_op = self._default(ready_op, GraphKeys.READY_OP,
                                           report_uninitialized_variables)
            self._ready_for_local_init_op = self._default(
                ready_for_local_init_op, GraphKeys.READY_FOR_LOCAL_INIT_OP, None)
            self._init_op = self._default(init_op, GraphKeys.INIT_OP,
                                          global_variables_initializer)
            self._local_init_op = self._default(
                local_init_op, GraphKeys.LOCAL_INIT_OP,
                lambda: control.group(local_variables_initializer()))
            self._saver = self._default_saver(saver)
            self._summary_op = self._default(summary_op, GraphKeys.SUMMARY_OP, merge_all)
            self._global_step = self._default(global_step, GraphKeys.GLOBAL_STEP, None)
            self._session_manager = session_manager or SessionManager(
                local_init_op=self._local_init_op, ready_op=self._ready_op,
                ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
                recovery_wait_secs=recovery_wait_secs,
                local_init_run_options=local_init_run_options)
        self._is_chief = bool(is_chief)
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._logdir = logdir
        self._save_path = None if logdir is None else os.path.join(logdir,
                                                                   checkpoint_basename)
        self._save_summaries_secs = save_summaries_secs
        self._save_model_secs = save_model_secs
        self._stop_grace_secs = stop_grace_secs
        self._coord = Coordinator()
        self._started_threads: list = []
        if summary_writer is Supervisor.USE_DEFAULT:
            summary_writer = FileWriter(logdir) if self._is_chief and logdir else None
        self._summary_writer = summary_writer
        if self._is_chief and logdir:  # TF1's chief writes the graph for TensorBoard
            write_graph(self._graph.as_graph_def(add_shapes=True), logdir, "graph.pbtxt")
            if self._summary_writer is not None:
                self._summary_writer.add_graph(self._graph)
        self._graph.finalize()

    def _default(self, given, key: str, make: Optional[Callable]):
        """``given``, else the first of collection ``key``, else ``make()`` (kept there)."""
        if given is not Supervisor.USE_DEFAULT:
            return given
        found = self._graph.get_collection(key)
        if found:
            return found[0]
        if make is None:
            return None
        value = make()
        if value is not None:
            self._graph.add_to_collection(key, value)
        return value

    def _default_saver(self, saver):
        if saver is not Supervisor.USE_DEFAULT:
            return saver
        found = self._graph.get_collection(GraphKeys.SAVERS)
        if found:
            return found[0]
        if not global_variables():
            return None
        saver = Saver()
        self._graph.add_to_collection(GraphKeys.SAVERS, saver)
        return saver

    # ------------------------------------------------------------------- properties
    is_chief = property(lambda self: self._is_chief)
    coord = property(lambda self: self._coord)
    session_manager = property(lambda self: self._session_manager)
    saver = property(lambda self: self._saver)
    save_path = property(lambda self: self._save_path)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    global_step = property(lambda self: self._global_step)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)

    # --------------------------------------------------------------------- sessions
    def prepare_or_wait_for_session(self, master: str = "", config=None,
                                    wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200,
                                    start_standard_services: bool = True):
        """The chief's session restored from ``logdir`` or initialized (and its services
        started); another worker's once the chief has initialized the model."""
        if self._coord.joined:  # a supervisor stopped before may be used again
            self._coord.clear_stop()
        if self._is_chief:
            session = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver,
                checkpoint_dir=self._logdir, wait_for_checkpoint=wait_for_checkpoint,
                max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            if self._summary_writer is not None:
                self._summary_writer.add_graph(self._graph)
            if start_standard_services:
                self.start_standard_services(session)
        else:
            session = self._session_manager.wait_for_session(master, config=config,
                                                             max_wait_secs=max_wait_secs)
            if start_standard_services:
                self.start_queue_runners(session)
        return session

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config=None,
                        start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator:
        """A session for a ``with`` block; its end stops the services (re-raising what
        stopped them, but the end of input) and closes the session."""
        session = None
        try:
            session = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield session
        except Exception as err:  # noqa: BLE001 - handed to the coordinator, as TF1 does
            self.request_stop(err)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if session is not None:
                    session.close()

    # --------------------------------------------------------------------- services
    def start_standard_services(self, sess) -> list:
        """The chief's checkpoint and summary threads, and the graph's queue runners."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because "
                               "only chief supervisors can write events.")
        threads = []
        if self._summary_writer is not None:
            step = None if self._global_step is None else int(sess.run(self._global_step))
            self._summary_writer.add_session_log(
                event_pb2.SessionLog(status=event_pb2.SessionLog.START), step)
            if self._summary_op is not None and self._save_summaries_secs:
                threads.append(self.loop(self._save_summaries_secs, self._write_summary,
                                         (sess,)))
            if self._global_step is not None and self._save_summaries_secs:
                threads.append(self.loop(self._save_summaries_secs, _StepCounter(
                    sess, self._global_step, self._summary_writer)))
        if self._saver is not None and self._save_path and self._save_model_secs:
            threads.append(self.loop(self._save_model_secs, self._save, (sess,)))
        threads.extend(self.start_queue_runners(sess))
        return threads

    def _save(self, sess) -> None:
        self._saver.save(sess, self._save_path, global_step=self._global_step)
        if self._summary_writer is not None:
            step = None if self._global_step is None else int(sess.run(self._global_step))
            self._summary_writer.add_session_log(event_pb2.SessionLog(
                status=event_pb2.SessionLog.CHECKPOINT, checkpoint_path=self._save_path),
                step)

    def _write_summary(self, sess) -> None:
        if self._global_step is None:
            summary, step = sess.run(self._summary_op), None
        else:
            summary, step = sess.run([self._summary_op, self._global_step])
        self.summary_computed(sess, summary, step)

    def summary_computed(self, sess, summary, global_step=None) -> None:
        """Writes ``summary`` (a serialized Summary) at ``global_step`` (default: now)."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = int(sess.run(self._global_step))
        self._summary_writer.add_summary(summary, global_step)

    def start_queue_runners(self, sess, queue_runners=None) -> list:
        """Starts the queue runners (default: the graph's) under the coordinator."""
        if queue_runners is None:
            threads = start_queue_runners(sess, coord=self._coord, daemon=True, start=True)
        else:
            threads = [t for runner in queue_runners for t in runner.create_threads(
                sess, coord=self._coord, daemon=True, start=True)]
        self._started_threads.extend(threads)
        return threads

    def loop(self, timer_interval_secs: Optional[float], target: Callable, args=None,
             kwargs=None) -> threading.Thread:
        """Starts a thread calling ``target`` every ``timer_interval_secs`` seconds."""
        thread = _Looper(self._coord, timer_interval_secs, target, args, kwargs)
        self._coord.register_thread(thread)
        thread.start()
        self._started_threads.append(thread)
        return thread

    # ------------------------------------------------------------------ stopping
    def stop_on_exception(self):
        """A context that hands an exception raised in it to the coordinator."""
        return self._coord.stop_on_exception()

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def request_stop(self, ex: Optional[BaseException] = None) -> None:
        self._coord.request_stop(ex)

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def stop(self, threads=None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        """Stops and joins the services, re-raising what stopped them."""
        join = list(threads) if threads is not None else list(self._started_threads)
        self._coord.request_stop()
        try:
            self._coord.join(join, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            self._started_threads = []
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.add_session_log(
                    event_pb2.SessionLog(status=event_pb2.SessionLog.STOP))
                self._summary_writer.close()

    # TF1's other spellings
    Loop = loop
    PrepareSession = prepare_or_wait_for_session
    RequestStop = request_stop
    ShouldStop = should_stop
    StartQueueRunners = start_queue_runners
    StartStandardServices = start_standard_services
    Stop = stop
    StopOnException = stop_on_exception
    SummaryComputed = summary_computed
    WaitForStop = wait_for_stop

