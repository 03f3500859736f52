"""``SessionManager``: creates sessions that are ready to train, as TF1's does.

The chief calls ``prepare_session``: restore the latest checkpoint of
``checkpoint_dir`` (or run ``init_op``/``init_fn``), run the local init op once the
model is ready for it, and check the model is ready. Other workers call
``wait_for_session``: make sessions until one is ready (the chief has initialized the
shared variables), trying every ``recovery_wait_secs`` up to ``max_wait_secs``.
``recover_session`` only restores. A session's readiness is what ``ready_op`` reports:
an empty list of uninitialized variable names.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from gradflow.framework import errors
from gradflow.framework.graph import Graph, get_default_graph
import gradflow.logging as tf_logging
from gradflow.runtime.session import Session
from gradflow.train.saver import get_checkpoint_state

__all__ = ["SessionManager", "ready_or_message"]


def ready_or_message(op, session, message: str) -> tuple:
    """``(True, None)`` when ``op`` (a ready op) reports nothing uninitialized, else
    ``(False, "Variables not initialized: a, b")``; ``message`` is logged when the op
    fails for another reason than an uninitialized value."""
    if op is None:
        return True, None
    try:
        value = session.run(op)
    except errors.FailedPreconditionError as err:
        if "uninitialized" not in str(err):
            tf_logging.warning(f"{message} : error [{err}]")
            raise
        return False, str(err)
    value = np.asarray(value)
    if value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(v.decode("utf-8") if isinstance(v, bytes) else str(v)
                      for v in value.reshape(-1))
    return False, "Variables not initialized: " + names


def _name_of(op) -> Optional[str]:
    return None if op is None else op.name


class SessionManager:
    """Makes sessions for a graph with its ready, local init and ready-for-local-init
    ops (see the module docstring)."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph: Optional[Graph] = None, recovery_wait_secs: float = 30,
                 local_init_run_options=None, local_init_feed_dict: Optional[dict] = None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(f"If you pass a ready_for_local_init_op you must also pass a "
                             f"local_init_op , ready_for_local_init_op "
                             f"[{ready_for_local_init_op}]")
        if recovery_wait_secs is None or recovery_wait_secs < 0:
            raise ValueError(f"recovery_wait_secs must be a non-negative number, got "
                             f"{recovery_wait_secs!r}")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict

    def _new_session(self, master: str, config) -> Session:
        return Session(master, graph=self._graph, config=config)

    def _restore_checkpoint(self, master: str, saver, checkpoint_dir: Optional[str],
                            checkpoint_filename_with_path: Optional[str],
                            wait_for_checkpoint: bool, max_wait_secs: float,
                            config) -> tuple:
        """A new session, and whether a checkpoint was restored into it."""
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        session = self._new_session(master, config)
        if saver is None or not (checkpoint_dir or checkpoint_filename_with_path):
            return session, False
        if checkpoint_filename_with_path:
            saver.restore(session, checkpoint_filename_with_path)
            return session, True
        waited = 0.0
        state = get_checkpoint_state(checkpoint_dir)
        while state is None or not state.model_checkpoint_path:
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return session, False
            tf_logging.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = get_checkpoint_state(checkpoint_dir)
        saver.restore(session, state.model_checkpoint_path)
        # A restarted saver keeps counting the directory's checkpoints (TF1).
        saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        return session, True

    def prepare_session(self, master: str, init_op=None, saver=None,
                        checkpoint_dir: Optional[str] = None,
                        checkpoint_filename_with_path: Optional[str] = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config=None, init_feed_dict: Optional[dict] = None,
                        init_fn: Optional[Callable] = None) -> Session:
        """A session restored from a checkpoint, or initialized; then locally
        initialized and checked ready (RuntimeError says what is not)."""
        session, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config)
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if init_op is not None:
                session.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(session)
        local_ready, message = self._try_run_local_init_op(session)
        if not local_ready:
            raise RuntimeError(f"Init operations did not make model ready for local_init.  "
                               f"Init op: {_name_of(init_op)}, init fn: {init_fn}, error: "
                               f"{message}")
        ready, message = ready_or_message(self._ready_op, session, "Model not ready")
        if not ready:
            raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                               f"{_name_of(init_op)}, init fn: {init_fn}, local_init_op: "
                               f"{self._local_init_op}, error: {message}")
        return session

    def recover_session(self, master: str, saver=None, checkpoint_dir: Optional[str] = None,
                        checkpoint_filename_with_path: Optional[str] = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config=None) -> tuple:
        """``(session, initialized)``: a session restored from a checkpoint, and whether
        it came out ready (False: nothing restored, or not ready after the local init)."""
        session, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config)
        local_ready, message = self._try_run_local_init_op(session)
        if not restored:
            return session, False
        if not local_ready:
            source = checkpoint_dir or checkpoint_filename_with_path
            tf_logging.info(f"Restoring model from {source} did not make model ready for "
                            f"local init: {message}")
            return session, False
        ready, message = ready_or_message(self._ready_op, session, "Model not ready")
        if not ready:
            tf_logging.info(f"Restoring model did not make model ready: {message}")
            return session, False
        return session, True

    def wait_for_session(self, master: str, config=None,
                         max_wait_secs: float = float("inf")) -> Session:
        """A session once the model is ready in it (the chief initialized it); a
        ``DeadlineExceededError`` after ``max_wait_secs``."""
        start = time.monotonic()
        while True:
            session = self._new_session(master, config)
            ready, not_ready_message = False, None
            local_ready, not_ready_local_message = self._try_run_local_init_op(session)
            if local_ready:
                ready, not_ready_message = ready_or_message(self._ready_op, session,
                                                            "Model not ready")
                if ready:
                    return session
            session.close()
            remaining = max_wait_secs - (time.monotonic() - start)
            if remaining < self._recovery_wait_secs:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {max_wait_secs} secs.")
            tf_logging.info(f"Waiting for model to be ready.  Ready_for_local_init_op:  "
                            f"{not_ready_local_message}, ready: {not_ready_message}")
            time.sleep(self._recovery_wait_secs)

    def _try_run_local_init_op(self, session) -> tuple:
        if self._local_init_op is None:
            return True, None
        ready, message = ready_or_message(self._ready_for_local_init_op, session,
                                          "Model not ready for local init")
        if not ready:
            return False, message
        session.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                    options=self._local_init_run_options)
        return True, None
