"""The hook protocol of ``MonitoredSession`` (TF1's ``tf.train.SessionRunHook``).

A hook sees the session's life: ``begin`` (graph still open), ``after_create_session``,
then around every ``run`` a ``before_run`` that may add fetches, feeds and options
(``SessionRunArgs``) and an ``after_run`` that gets their values (``SessionRunValues``),
and ``end`` when the session closes normally.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues"]


class SessionRunHook:
    """Base class: every method does nothing; override the ones a hook needs."""

    def begin(self) -> None:
        """Called once before the session exists; the graph may still get ops."""

    def after_create_session(self, session, coord) -> None:
        """Called once the session is created and its variables initialized or restored."""

    def before_run(self, run_context: "SessionRunContext") -> Optional["SessionRunArgs"]:
        """Called before each run; returns what to add to it, or None."""
        return None

    def after_run(self, run_context: "SessionRunContext",
                  run_values: "SessionRunValues") -> None:
        """Called after each successful run with the values this hook asked for."""

    def end(self, session) -> None:
        """Called when the session closes without an error."""


class SessionRunArgs(NamedTuple):
    """What a hook adds to a run: ``fetches`` (any nest), ``feed_dict`` and ``options``."""

    fetches: Any
    feed_dict: Optional[dict] = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """What a hook gets back: its fetches' ``results``, the run's ``options`` and
    ``run_metadata``."""

    results: Any
    options: Any
    run_metadata: Any


class SessionRunContext:
    """The run in progress: the caller's ``original_args``, the raw ``session``, and a
    way to ask the monitored session to stop."""

    def __init__(self, original_args: SessionRunArgs, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """``should_stop()`` becomes true after this run."""
        self._stop_requested = True
