"""How datasets yield their elements at run time: the values of ``tf.data``'s variant tensors.

A dataset op's kernel returns a ``DatasetValue``: a recipe that, given an
``IterationEnv``, yields elements as tuples of NumPy arrays (the flat components).
The env belongs to one initialized iterator: it runs graph functions (map, filter,
flat_map bodies) through a run context of the session, and owns the background threads
(``prefetch``, parallel ``map``) so that closing it (re-initialization, ``Session.close``)
stops them all.
"""
from __future__ import annotations

import collections
import concurrent.futures
import os
import queue
import threading
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from gradflow.framework import errors

__all__ = ["DatasetValue", "IterationEnv", "IteratorResource", "END_OF_SEQUENCE",
           "batch_components", "pad_components"]

END_OF_SEQUENCE = "End of sequence"
_POLL_S = 0.05  # how often a blocked producer or consumer looks at the stop flag
_JOIN_S = 5.0


class IterationEnv:
    """What one initialized iterator's elements are made with; ``close()`` stops it all."""

    def __init__(self, ctx):
        # a run context of its own: functions of the pipeline run outside any user run
        self.ctx = type(ctx)(ctx.session, ctx.store) if ctx is not None else None
        self.stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pools: list[concurrent.futures.ThreadPoolExecutor] = []
        self._lock = threading.Lock()

    def call(self, function, args: Sequence) -> list:
        return self.ctx.call(function, list(args))

    def start_thread(self, target: Callable, name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()
        return thread

    def pool(self, workers: int) -> concurrent.futures.ThreadPoolExecutor:
        pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="gradflow-map")
        with self._lock:
            self._pools.append(pool)
        return pool

    def check_stopped(self) -> None:
        if self.stop.is_set():
            raise errors.CancelledError(None, None, "Iterator was cancelled (its session was "
                                        "closed or it was re-initialized)")

    def close(self) -> None:
        """Tells every thread to stop (they notice within ``_POLL_S``)."""
        self.stop.set()

    def join(self) -> None:
        """Waits for the threads (and pools) of this env to end."""
        with self._lock:
            threads, self._threads = self._threads, []
            pools, self._pools = self._pools, []
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(_JOIN_S)


class DatasetValue:
    """The run-time value of a dataset tensor: ``iterate(env)`` yields its elements."""

    __slots__ = ("make", "cache")

    def __init__(self, make: Callable[[IterationEnv], Iterator[tuple]]):
        self.make = make
        self.cache: Optional[list] = None  # filled by a memory cache() after a full pass

    def iterate(self, env: IterationEnv) -> Iterator[tuple]:
        return self.make(env)


class IteratorResource:
    """A session's iterator: made by ``IteratorV2``/``OneShotIterator``, set by
    ``MakeIterator``, read by ``IteratorGetNext``."""

    def __init__(self, output_types: Sequence, output_shapes: Sequence):
        self.output_types = list(output_types)
        self.output_shapes = list(output_shapes)
        self._lock = threading.Lock()
        self._env: Optional[IterationEnv] = None
        self._elements: Optional[Iterator[tuple]] = None

    @property
    def initialized(self) -> bool:
        return self._elements is not None

    def initialize(self, dataset: DatasetValue, ctx) -> None:
        old = self._env
        if old is not None:
            old.close()
            old.join()
        env = IterationEnv(ctx)
        with self._lock:
            self._env = env
            self._elements = dataset.iterate(env)

    def get_next(self) -> tuple:
        if self._elements is None:
            raise errors.FailedPreconditionError(
                None, None, "GetNext() failed because the iterator has not been initialized. "
                "Ensure that you have run the initializer operation for this iterator before "
                "getting the next element.")
        with self._lock:
            try:
                element = next(self._elements)
            except StopIteration:
                raise errors.OutOfRangeError(None, None, END_OF_SEQUENCE) from None
        self._check(element)
        return element

    def _check(self, element: tuple) -> None:
        for index, (value, shape) in enumerate(zip(element, self.output_shapes, strict=True)):
            if not shape.is_compatible_with(np.shape(value)):
                raise errors.InvalidArgumentError(
                    None, None, f"Component {index} of the element has shape "
                    f"{list(np.shape(value))}, incompatible with the iterator's {shape}")

    def close(self) -> None:
        if self._env is not None:
            self._env.close()

    def join(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            env.join()


def _stack(values: list, index: int) -> np.ndarray:
    if isinstance(values[0], bytes) and all(type(v) is bytes for v in values):
        batch = np.empty(len(values), dtype=object)  # string scalars: keep them objects
        batch[:] = values
        return batch
    if not isinstance(values[0], (str, bytes)):
        try:
            return np.stack(values)
        except ValueError:
            pass  # elements of different shapes: named below
    first = np.shape(values[0])
    for value in values[1:]:
        if np.shape(value) != first:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot add tensor to the batch: number of elements does not "
                f"match. Shapes are: [tensor]: {list(np.shape(value))}, [batch]: {list(first)}")
    if isinstance(values[0], (str, bytes)):  # string scalars: keep them objects
        batch = np.empty(len(values), dtype=object)
        batch[:] = values
        return batch
    return np.stack(values)


def batch_components(elements: list) -> tuple:
    """Stacks elements (tuples of arrays) component by component."""
    return tuple(_stack([e[i] for e in elements], i) for i in range(len(elements[0])))


def pad_components(elements: list, padded_shapes: Sequence, padding_values: Sequence) -> tuple:
    """Pads each component to ``padded_shapes`` (-1: the batch's longest) and stacks them."""
    out = []
    for index, (shape, fill) in enumerate(zip(padded_shapes, padding_values, strict=True)):
        parts = [np.asarray(e[index]) for e in elements]
        rank = len(shape)
        for part in parts:
            if part.ndim != rank:
                raise errors.InvalidArgumentError(
                    None, None, f"All elements in a batch must have the same rank as the padded "
                    f"shape for component{index}: expected rank {rank} but got element with "
                    f"rank {part.ndim}")
        target = []
        for axis, size in enumerate(shape):
            longest = max(p.shape[axis] for p in parts)
            if size >= 0 and longest > size:
                raise errors.InvalidArgumentError(
                    None, None, "Attempted to pad to a smaller size than the input element.")
            target.append(longest if size < 0 else size)
        batch = np.empty([len(parts)] + target, dtype=parts[0].dtype)
        batch[...] = fill
        for row, part in enumerate(parts):
            batch[(row,) + tuple(slice(0, n) for n in part.shape)] = part
        out.append(batch)
    return tuple(out)


def blocking_get(source: "queue.Queue", env: IterationEnv):
    """``source.get()`` that gives up with ``CancelledError`` when ``env`` stops."""
    while True:
        try:
            return source.get(timeout=_POLL_S)
        except queue.Empty:
            env.check_stopped()


def prefetched(elements: Iterator[tuple], buffer_size: int, env: IterationEnv,
               name: str) -> Iterator[tuple]:
    """Yields ``elements`` as made ahead, up to ``buffer_size`` of them, by a thread that
    starts now (not on the first element asked for)."""
    buffer: queue.Queue = queue.Queue(maxsize=max(1, buffer_size))
    done = threading.Event()  # the consumer went away

    def put(item) -> bool:
        while not (env.stop.is_set() or done.is_set()):
            try:
                buffer.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for element in elements:
                if not put(("element", element)):
                    return
            put(("end", None))
        except Exception as err:  # noqa: BLE001 - handed to the consumer, raised there
            put(("error", err))

    env.start_thread(produce, name)
    return _consumed(buffer, done, env)


def _consumed(buffer: "queue.Queue", done: threading.Event, env: IterationEnv
              ) -> Iterator[tuple]:
    """The consumer's side of ``prefetched``: ``done`` tells the producer it went away."""
    try:
        while True:
            kind, value = blocking_get(buffer, env)
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        done.set()


def parallel_map(elements: Iterator[tuple], fn: Callable[[tuple], tuple], workers: int,
                 env: IterationEnv) -> Iterator[tuple]:
    """``map(fn, elements)`` with up to ``workers`` calls running at once, in order."""
    pool = env.pool(workers)
    pending: collections.deque = collections.deque()
    for element in elements:
        pending.append(pool.submit(fn, element))
        if len(pending) >= workers:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def autotune_workers() -> int:
    return max(1, os.cpu_count() or 1)
