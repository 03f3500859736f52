"""The default session: a per-thread stack of sessions entered with ``as_default``.

It lives on the ground floor so that ``Tensor.eval``, ``Operation.run`` and
``Variable.load`` can find the session without importing the runtime: any object
with a ``graph`` and a ``run(fetches, feed_dict)`` method can be pushed here.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Optional

__all__ = ["get_default_session", "default_session", "push_default_session",
           "remove_default_session", "run_in_default_session"]

_local = threading.local()


def _session_stack() -> list:
    try:
        return _local.sessions
    except AttributeError:
        _local.sessions = []
        return _local.sessions


def get_default_session() -> Optional[Any]:
    """The innermost session entered as the default in this thread, or None."""
    stack = _session_stack()
    return stack[-1] if stack else None


def push_default_session(session: Any) -> None:
    """Makes ``session`` the default until ``remove_default_session`` (InteractiveSession)."""
    _session_stack().append(session)


def remove_default_session(session: Any) -> None:
    """Takes ``session`` off this thread's stack, wherever it stands; no-op if absent."""
    stack = _session_stack()
    if session in stack:
        stack.remove(session)


@contextlib.contextmanager
def default_session(session: Any) -> Iterator[Any]:
    """Makes ``session`` the default, and its graph the default graph, inside the block."""
    stack = _session_stack()
    stack.append(session)
    try:
        with session.graph.as_default():
            yield session
    finally:
        stack.remove(session)


def run_in_default_session(fetch, feed_dict, session: Optional[Any]):
    """Backs ``Tensor.eval`` and ``Operation.run``: runs ``fetch`` in ``session`` or the default."""
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                         "registered. Use `with sess.as_default()` or pass an explicit "
                         "session to `eval(session=sess)`")
    if session.graph is not fetch.graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's "
                         "graph is different from the session's graph.")
    return session.run(fetch, feed_dict)
