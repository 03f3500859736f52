"""``MonitoredSession``, ``SingularMonitoredSession`` and ``MonitoredTrainingSession``.

A monitored session creates its session through a ``ChiefSessionCreator`` (restore the
latest checkpoint of ``checkpoint_dir``, else run the scaffold's initializers) or, on a
worker that is not the chief, a ``WorkerSessionCreator`` (wait until the chief has
initialized the model); both go through ``SessionManager`` and hand ``master`` to
``Session(target=master)``. It calls its hooks around every ``run``, and stops when a
hook asks (``should_stop()``) or when a run raises ``OutOfRangeError`` (end of input),
which ``with`` swallows as TF1 does. A run that fails with ``AbortedError`` or
``UnavailableError`` (a task of the cluster went away) closes the session, creates a
new one (which restores the latest checkpoint on the chief) and runs again, as TF1's
recoverable session does.
"""
from __future__ import annotations

import abc

from typing import Any, Callable, Optional

from gradflow.framework import errors
import gradflow.logging as logging
from gradflow.framework.graph import GraphKeys, get_default_graph
from gradflow.io.protos import RunMetadata, RunOptions
from gradflow.ops import control
from gradflow.ops.state import (global_variables, global_variables_initializer,
                                local_variables_initializer, report_uninitialized_variables)
from gradflow.runtime.session import Session
from gradflow.summary.summary import merge_all
from gradflow.train import basic_session_run_hooks as hooks_lib
from gradflow.train.coordinator import Coordinator
from gradflow.train.queue_runner import start_queue_runners
from gradflow.train.saver import Saver
from gradflow.train.session_manager import SessionManager
from gradflow.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

__all__ = ["Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
           "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession",
           "USE_DEFAULT"]

USE_DEFAULT = object()  # "argument not given": MonitoredTrainingSession picks TF1's default
# Errors after which TF1's monitored session makes a new session and runs again.
_RECOVERABLE = (errors.AbortedError, errors.UnavailableError)


def _check_master(master) -> str:
    if not isinstance(master, str):
        raise TypeError(f"master must be a string (a server's target or ''), got "
                        f"{type(master).__name__}")
    return master


class Scaffold:
    """The ops a monitored session needs, completed with TF1's defaults by ``finalize``:
    ``init_op`` (global initializer), ``ready_op`` (uninitialized variables),
    ``local_init_op``, ``summary_op`` (``merge_all``) and ``saver``."""

    def __init__(self, init_op=None, init_feed_dict: Optional[dict] = None,
                 init_fn: Optional[Callable] = None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold: Optional["Scaffold"] = None,
                 local_init_feed_dict: Optional[dict] = None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            base = copy_from_scaffold
            init_op = init_op if init_op is not None else base.init_op
            init_feed_dict = init_feed_dict or base.init_feed_dict
            init_fn = init_fn or base.init_fn
            ready_op = ready_op if ready_op is not None else base.ready_op
            ready_for_local_init_op = ready_for_local_init_op \
                if ready_for_local_init_op is not None else base.ready_for_local_init_op
            local_init_op = local_init_op if local_init_op is not None else base.local_init_op
            summary_op = summary_op if summary_op is not None else base.summary_op
            saver = saver if saver is not None else base.saver
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver
        self._finalized = False

    def finalize(self) -> "Scaffold":
        """Creates the missing ops and finalizes the default graph (no more ops)."""
        if self._finalized:
            return self
        graph = get_default_graph()
        if self._init_op is None:
            self._init_op = _collection_or(graph, "init_op", global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = _collection_or(graph, "ready_op", report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _collection_or(
                graph, "ready_for_local_init_op",
                lambda: report_uninitialized_variables(global_variables()))
        if self._local_init_op is None:
            self._local_init_op = _collection_or(
                graph, "local_init_op",
                lambda: control.group(local_variables_initializer(), name="local_init"))
        if self._summary_op is None:
            self._summary_op = _collection_or(graph, "summary_op", merge_all)
        if self._saver is None:
            self._saver = _default_saver(graph)
        graph.finalize()
        self._finalized = True
        return self

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    @staticmethod
    def default_local_init_op():
        return control.group(local_variables_initializer(), name="local_init")


def _collection_or(graph, key: str, make: Callable):
    """The single op in collection ``key``, else a new one from ``make`` (kept there)."""
    found = graph.get_collection(key)
    if len(found) > 1:
        raise RuntimeError(f"More than one item in collection {key}. Please indicate which "
                           "one to use by passing it to the tf.Scaffold constructor.")
    if found:
        return found[0]
    op = make()
    if op is not None:
        graph.add_to_collection(key, op)
    return op


def _default_saver(graph):
    savers = graph.get_collection("savers")
    if len(savers) > 1:
        raise RuntimeError("More than one item in collection savers. Please indicate which "
                           "one to use by passing it to the tf.Scaffold constructor.")
    if savers:
        return savers[0]
    saver = Saver(allow_empty=True)
    graph.add_to_collection("savers", saver)
    return saver


class SessionCreator(abc.ABC):
    """Makes the session a ``MonitoredSession`` runs."""

    @abc.abstractmethod
    def create_session(self) -> Session:
        """A new, ready session."""


class ChiefSessionCreator(SessionCreator):
    """Restores the latest checkpoint of ``checkpoint_dir`` (or the file
    ``checkpoint_filename_with_path``), else runs the scaffold's initializers; then its
    local initializer, and checks that no variable is left uninitialized."""

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config=None,
                 checkpoint_dir: Optional[str] = None,
                 checkpoint_filename_with_path: Optional[str] = None):
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        self._master = _check_master(master)
        self._scaffold = scaffold or Scaffold()
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_path = checkpoint_filename_with_path

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        init_fn = scaffold.init_fn
        manager = _session_manager(scaffold)
        return manager.prepare_session(
            self._master, saver=scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_path, config=self._config,
            init_op=scaffold.init_op, init_feed_dict=scaffold.init_feed_dict,
            init_fn=None if init_fn is None else (lambda session: init_fn(scaffold, session)))


class WorkerSessionCreator(SessionCreator):
    """A worker's session: waits (up to ``max_wait_secs``) until the chief has
    initialized the model, then runs the local initializer."""

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config=None,
                 max_wait_secs: float = 30 * 60):
        self._master = _check_master(master)
        self._scaffold = scaffold or Scaffold()
        self._config = config
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        return _session_manager(scaffold).wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs)


def _session_manager(scaffold: Scaffold) -> SessionManager:
    return SessionManager(local_init_op=scaffold.local_init_op,
                          local_init_feed_dict=scaffold.local_init_feed_dict,
                          ready_op=scaffold.ready_op,
                          ready_for_local_init_op=scaffold.ready_for_local_init_op,
                          graph=get_default_graph())


class _StepContext:
    """What ``run_step_fn``'s function gets: the raw session, hooked runs, a stop."""

    def __init__(self, monitored: "MonitoredSession"):
        self._monitored = monitored

    @property
    def session(self) -> Session:
        return self._monitored._session

    def run_with_hooks(self, *args, **kwargs):
        return self._monitored.run(*args, **kwargs)

    def request_stop(self) -> None:
        self._monitored._should_stop = True


class MonitoredSession:
    """A session that runs its hooks around every ``run`` (see the module docstring)."""

    def __init__(self, session_creator: Optional[SessionCreator] = None, hooks=None,
                 stop_grace_period_secs: float = 120):
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._graph = get_default_graph()
        self._stop_grace_period_secs = stop_grace_period_secs
        self._should_stop = False
        self._closed = False
        self._coord = Coordinator(clean_stop_exception_types=[])
        self._session = self._create_session()

    def _create_session(self) -> Session:
        """A new session from the creator, retried while a task is unavailable, with the
        graph's queue runners started under a fresh coordinator and every hook told."""
        while True:
            try:
                session = self._creator.create_session()
                break
            except _RECOVERABLE as err:
                logging.info(f"An error was raised while a session was being created. This "
                             f"may be due to a preemption of a connected worker or "
                             f"parameter server. A new session will be created. Error: {err}")
        self._coord = Coordinator(clean_stop_exception_types=[])
        if self._graph.get_collection(GraphKeys.QUEUE_RUNNERS):
            start_queue_runners(sess=session, coord=self._coord)
        for hook in self._hooks:
            hook.after_create_session(session, self._coord)
        return session

    def _stop_threads(self) -> None:
        """Asks the coordinated threads to stop and waits for them (at most the grace
        period; threads still running then are left to the session's close). Raises
        the error that stopped a thread, as TF1's close does."""
        self._coord.request_stop()
        self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                         ignore_live_threads=True)

    def _recover(self, err: Exception) -> None:
        logging.info(f"An error was raised. This may be due to a preemption in a connected "
                     f"worker or parameter server. The current session will be closed and a "
                     f"new session will be created. Error: {err}")
        try:
            try:
                self._stop_threads()
            finally:
                self._session.close()
        except _RECOVERABLE:
            pass  # the session's tasks are gone already
        self._session = self._create_session()

    def _thread_lost_a_task(self) -> bool:
        """After a failed run: when a coordinated thread stopped because a task went
        away (the likely root cause), recovers as from the run's own loss, as TF1 does."""
        try:
            self._coord.raise_requested_exception()
        except _RECOVERABLE as err:
            self._recover(err)
            return True
        except Exception:  # the run's own error is the one to raise
            return False
        return False

    @property
    def graph(self):
        return self._graph

    def should_stop(self) -> bool:
        return self._closed or self._should_stop or self._coord.should_stop()

    def run(self, fetches, feed_dict: Optional[dict] = None, options=None,
            run_metadata=None):
        """Runs ``fetches`` with the hooks' additions; returns the caller's values. A run
        that fails because a task went away is run again in a new session."""
        if self._closed:
            raise RuntimeError("Run called even after should_stop requested.")
        while True:
            try:
                return self._run_with_hooks(fetches, feed_dict, options, run_metadata)
            except _RECOVERABLE as err:
                self._recover(err)
            except Exception:
                if not self._thread_lost_a_task():
                    raise

    def _run_with_hooks(self, fetches, feed_dict: Optional[dict], options, run_metadata):
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._session)
        requests = {hook: hook.before_run(context) for hook in self._hooks}
        feeds = dict(feed_dict or {})
        hook_fetches, hook_options = {}, []
        for index, args in enumerate(requests.values()):
            if args is None:
                continue
            if args.fetches is not None:
                hook_fetches[index] = args.fetches
            for key, value in (args.feed_dict or {}).items():
                if key in feeds:
                    raise RuntimeError("Same tensor is fed by a SessionRunHook and user.")
                feeds[key] = value
            if args.options is not None:
                hook_options.append(args.options)
        options = _merged_options(options, hook_options)
        if options is not None and run_metadata is None:
            run_metadata = RunMetadata()
        results = self._session.run({"caller": fetches, "hooks": hook_fetches},
                                    feed_dict=feeds, options=options, run_metadata=run_metadata)
        for index, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(results["hooks"].get(index), options,
                                                     run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return results["caller"]

    def run_step_fn(self, step_fn: Callable[[Any], Any]):
        """``step_fn(step_context)``: runs with the raw session or through the hooks."""
        return step_fn(_StepContext(self))

    def close(self) -> None:
        self._close(None)

    def _close(self, exception_type) -> None:
        if self._closed:
            return
        try:
            if exception_type is None:
                for hook in self._hooks:
                    hook.end(self._session)
        finally:
            self._closed = True
            try:
                self._stop_threads()
            finally:
                self._session.close()

    def __enter__(self) -> "MonitoredSession":
        return self

    def __exit__(self, exception_type, exception, traceback) -> bool:
        ends_input = exception_type is not None and \
            issubclass(exception_type, (errors.OutOfRangeError, StopIteration))
        self._close(None if ends_input else exception_type)
        return ends_input


def _merged_options(options, hook_options: list):
    """The caller's options with the hooks' (the highest trace level wins)."""
    if not hook_options:
        return options
    merged = RunOptions()
    if options is not None:
        merged.CopyFrom(options)
    for extra in hook_options:
        merged.trace_level = max(merged.trace_level, extra.trace_level)
        merged.output_partition_graphs |= extra.output_partition_graphs
    return merged


class SingularMonitoredSession(MonitoredSession):
    """A ``MonitoredSession`` with a chief session creator built from its arguments; its
    ``raw_session()`` is the underlying ``gf.Session``."""

    def __init__(self, hooks=None, scaffold: Optional[Scaffold] = None, master: str = "",
                 config=None, checkpoint_dir: Optional[str] = None,
                 stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path: Optional[str] = None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self) -> Session:
        return self._session


def _pick(steps, secs, default_steps, default_secs) -> tuple:
    """TF1's rule: both left out -> the defaults; one given -> the other is off."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802
                             checkpoint_dir: Optional[str] = None,
                             scaffold: Optional[Scaffold] = None, hooks=None,
                             chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT,
                             config=None, stop_grace_period_secs: float = 120,
                             log_step_count_steps: Optional[int] = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir: Optional[str] = None,
                             save_graph_def: bool = True) -> MonitoredSession:
    """A ``MonitoredSession`` for training, with TF1's default hooks: a checkpoint every
    600 s in ``checkpoint_dir``, summaries every 100 steps and steps/sec every
    ``log_step_count_steps`` steps in ``summary_dir`` (default ``checkpoint_dir``)."""
    _check_master(master)
    scaffold = scaffold or Scaffold()
    if not is_chief:  # a worker: no checkpoints, no summaries, only the caller's hooks
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)
    summary_steps, summary_secs = _pick(save_summaries_steps, save_summaries_secs, 100, None)
    checkpoint_steps, checkpoint_secs = _pick(save_checkpoint_steps, save_checkpoint_secs,
                                              None, 600)
    summary_dir = summary_dir or checkpoint_dir
    all_hooks = list(chief_only_hooks or [])
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_lib.StepCounterHook(output_dir=summary_dir,
                                                       every_n_steps=log_step_count_steps))
        if (summary_steps and summary_steps > 0) or (summary_secs and summary_secs > 0):
            all_hooks.append(hooks_lib.SummarySaverHook(
                scaffold=scaffold, save_steps=summary_steps, save_secs=summary_secs,
                output_dir=summary_dir))
    if checkpoint_dir and ((checkpoint_secs and checkpoint_secs > 0) or
                           (checkpoint_steps and checkpoint_steps > 0)):
        all_hooks.append(hooks_lib.CheckpointSaverHook(
            checkpoint_dir, save_steps=checkpoint_steps, save_secs=checkpoint_secs,
            scaffold=scaffold, save_graph_def=save_graph_def))
    all_hooks.extend(hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                  checkpoint_dir=checkpoint_dir)
    return MonitoredSession(session_creator=creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)
