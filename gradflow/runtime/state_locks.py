"""Locks that make every run's read-modify-write of a session's state one atomic step.

A run reads variables from the session's store and writes into an overlay committed
when it succeeds (``RunContext``). Two runs updating the same variable at once would
both read the old value and one update would be lost, so a run that writes takes,
before it starts, the lock of every state entry its plan may write (known statically,
see ``executor.state_writes``), in one global order, and releases them after its
commit. Runs that write nothing take no lock: they see committed values. A plan whose
writes cannot be known locks the whole store: it takes a gate, then every key lock;
a run that gets its keys while the gate is taken gives them back and waits for it.
"""
from __future__ import annotations

import threading
from typing import Optional

__all__ = ["StateLocks", "state_order", "release"]


def state_order(key) -> tuple:
    """The global order keys are locked in: variables (strings), then other entries."""
    return (not isinstance(key, str), repr(key))


class StateLocks:
    """Per-key locks over one session's state; ``None`` keys lock all of it."""

    def __init__(self):
        self._locks: dict = {}        # key -> its lock
        self._lock_lists: dict = {}   # a plan's sorted keys -> their locks, in that order
        self._new_lock = threading.Lock()
        self._all = threading.Lock()  # held by a run whose writes are unknown

    def acquire(self, keys: Optional[tuple]) -> tuple:
        """Blocks until the run may write ``keys`` (sorted by ``state_order``; None: every
        key). Returns the locks taken, for ``release``."""
        if keys is None:
            return self._acquire_all()
        locks = self._lock_lists.get(keys)
        if locks is None:
            locks = self._lock_lists[keys] = tuple(self._lock_of(k) for k in keys)
        while True:
            _acquire_in_order(locks)
            if not self._all.locked():
                return locks
            # a run locking everything has started: let it have these keys, then retry
            release(locks)
            with self._all:
                pass

    def _acquire_all(self) -> tuple:
        """Takes the gate (runs taking keys from now on back off), then every key lock
        that exists: a run holding one finishes first."""
        self._all.acquire()
        with self._new_lock:
            locks = tuple(self._locks[k] for k in sorted(self._locks, key=state_order))
        try:
            _acquire_in_order(locks)
        except BaseException:
            self._all.release()
            raise
        return (self._all,) + locks

    def _lock_of(self, key) -> threading.Lock:
        with self._new_lock:
            return self._locks.setdefault(key, threading.Lock())


def _acquire_in_order(locks: tuple) -> None:
    """Takes ``locks`` one after another; if interrupted, gives back those already taken."""
    taken = []
    try:
        for lock in locks:
            lock.acquire()
            taken.append(lock)
    except BaseException:
        release(tuple(taken))
        raise


def release(locks: tuple) -> None:
    """Releases what ``StateLocks.acquire`` took."""
    for lock in reversed(locks):
        lock.release()
