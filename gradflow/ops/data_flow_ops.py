"""Queues of TF1's input pipelines: ``FIFOQueue``, ``RandomShuffleQueue``,
``PaddingFIFOQueue``, ``PriorityQueue`` and their ops (``FIFOQueueV2``,
``QueueEnqueueV2``, ``QueueDequeueManyV2``...), with ``CountUpTo`` for epoch limits.

A queue lives in the Session (``Session.resource``). Blocking enqueues and dequeues
wait on a condition; ``close()`` wakes dequeues waiting for elements that will never
come with ``OutOfRangeError``, ``close(cancel_pending_enqueues=True)`` fails waiting
enqueues with ``CancelledError``, and closing the session cancels everything waiting.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import threading
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, get_default_graph
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops.common import apply_op
from gradflow.ops.random import get_seed
from gradflow.ops.state import Variable

__all__ = ["QueueBase", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue", "PriorityQueue",
           "count_up_to"]

_keys = itertools.count()
_resource_ids = itertools.count()  # the _N_ of a queue's name in messages, as TF's
_KINDS = {"FIFOQueueV2": "FIFOQueue", "RandomShuffleQueueV2": "RandomShuffleQueue",
          "PaddingFIFOQueueV2": "PaddingFIFOQueue", "PriorityQueueV2": "PriorityQueue"}


class QueueResource:
    """A session's queue: a bounded buffer of elements (tuples of arrays)."""

    def __init__(self, kind: str, name: str, capacity: int, shapes: Sequence,
                 min_after_dequeue: int = 0, seeds: tuple = (0, 0)):
        self.kind = kind
        self.name = name
        self.capacity = capacity if capacity > 0 else float("inf")
        self.shapes = list(shapes)
        self.min_after_dequeue = min_after_dequeue
        self._items: list = []
        self._fifo: collections.deque = collections.deque()
        self._order = itertools.count()  # ties of a priority queue keep insertion order
        self._rng = np.random.default_rng(None if seeds == (0, 0) else list(seeds))
        self._cond = threading.Condition()
        self.closed = False
        self._cancelled = False

    def size(self) -> int:
        return len(self._fifo) if self.kind in ("FIFOQueue", "PaddingFIFOQueue") \
            else len(self._items)

    def _put(self, element: tuple) -> None:
        if self.kind == "PriorityQueue":
            heapq.heappush(self._items, (int(element[0]), next(self._order), element))
        elif self.kind == "RandomShuffleQueue":
            self._items.append(element)
        else:
            self._fifo.append(element)

    def _take(self) -> tuple:
        if self.kind == "PriorityQueue":
            return heapq.heappop(self._items)[2]
        if self.kind == "RandomShuffleQueue":
            index = int(self._rng.integers(len(self._items)))
            self._items[index], self._items[-1] = self._items[-1], self._items[index]
            return self._items.pop()
        return self._fifo.popleft()

    def _check_cancelled(self) -> None:
        if self._cancelled:
            raise errors.CancelledError(None, None, f"{self.kind} '{self.name}' was cancelled "
                                        "(its session was closed).")

    def enqueue(self, elements: list) -> None:
        """Adds elements in order, waiting for room; fails on a closed queue."""
        with self._cond:
            for element in elements:
                while True:
                    self._check_cancelled()
                    if self.closed:
                        raise errors.CancelledError(None, None,
                                                    f"{self.kind} '{self.name}' is closed.")
                    if self.size() < self.capacity:
                        break
                    self._cond.wait()
                self._put(element)
                self._cond.notify_all()

    def dequeue(self, count: Optional[int], allow_smaller: bool = False) -> list:
        """``count`` elements (None: one), waiting for them; ``OutOfRangeError`` when the
        queue is closed without enough (``allow_smaller``: whatever is left, if any)."""
        wanted = 1 if count is None else count
        with self._cond:
            while True:
                self._check_cancelled()
                size = self.size()
                keep = 0 if self.closed else self.min_after_dequeue
                if size - keep >= wanted:
                    break
                if self.closed:
                    if allow_smaller and size > 0:
                        wanted = size
                        break
                    raise errors.OutOfRangeError(
                        None, None, f"{self.kind} '{self.name}' is closed and has insufficient "
                        f"elements (requested {wanted}, current size {size})")
                self._cond.wait()
            taken = [self._take() for _ in range(wanted)]
            self._cond.notify_all()
        return taken

    def close_queue(self, cancel_pending_enqueues: bool = False) -> None:
        with self._cond:  # waiting enqueues fail either way: a closed queue takes nothing
            self.closed = True
            self._cond.notify_all()

    def close(self) -> None:
        """The session is closing: everything waiting fails with ``CancelledError``."""
        with self._cond:
            self._cancelled = True
            self.closed = True
            self._cond.notify_all()

    def join(self) -> None:
        """Nothing runs on a queue's own thread."""


# ------------------------------------------------------------------------ the ops
def _queue_kernel(op_type: str):
    def kernel(ctx, *, component_types, shapes, capacity, shared_name, container, queue_name,
               min_after_dequeue=0, seed=0, seed2=0):
        def make() -> QueueResource:
            index = next(_resource_ids)
            return QueueResource(_KINDS[op_type], f"_{index}_{queue_name}", capacity, shapes,
                                 min_after_dequeue, (seed, seed2))
        return ctx.session.resource(("queue", shared_name), make)
    return kernel


def _infer_handle(inputs, attrs):
    return [(dtypes.resource, TensorShape([]))]


for _type in _KINDS:
    define_op(_type, infer=_infer_handle, kernel=_queue_kernel(_type), stateful=True,
              needs_context=True, locks_itself=True)


def _element_from_arrays(arrays: Sequence, count: Optional[int]) -> list:
    if count is None:
        return [tuple(np.array(a, copy=True) for a in arrays)]
    sizes = {np.shape(a)[0] for a in arrays}
    if len(sizes) != 1:
        raise errors.InvalidArgumentError(None, None, "Shape mismatch in tuple component 1. "
                                          "Expected all components to have the same size in "
                                          "dimension 0")
    return [tuple(np.array(a[i], copy=True) for a in arrays) for i in range(sizes.pop())]


def _enqueue_kernel(many: bool):
    def kernel(queue, *components, Tcomponents=None, timeout_ms=-1):  # noqa: N803 - TF's
        queue.enqueue(_element_from_arrays(components, None if not many else 0))
        return ()
    return kernel


def _dequeue_kernel(mode: str):
    def kernel(queue, *n, component_types, shapes, timeout_ms=-1):
        count = None if mode == "one" else int(np.asarray(n[0]))
        elements = queue.dequeue(count, allow_smaller=mode == "up_to")
        if mode == "one":
            out = elements[0]
        elif queue.kind == "PaddingFIFOQueue":
            out = _padded(elements, component_types)
        else:
            out = tuple(_stacked([e[i] for e in elements], t)
                        for i, t in enumerate(component_types))
        return out if len(out) != 1 else out[0]
    return kernel


def _stacked(values: list, dtype: dtypes.DType) -> np.ndarray:
    if dtype is dtypes.string and values and not isinstance(values[0], np.ndarray):
        batch = np.empty(len(values), dtype=object)
        batch[:] = values
        return batch
    return np.stack([np.asarray(v) for v in values]).astype(dtype.as_numpy_dtype, copy=False)


def _padded(elements: list, component_types) -> tuple:
    out = []
    for i, dtype in enumerate(component_types):
        parts = [np.asarray(e[i]) for e in elements]
        target = [max(p.shape[axis] for p in parts) for axis in range(parts[0].ndim)]
        batch = np.zeros([len(parts)] + target, dtype=dtype.as_numpy_dtype)
        if dtype is dtypes.string:
            batch[...] = b""
        for row, part in enumerate(parts):
            batch[(row,) + tuple(slice(0, n) for n in part.shape)] = part
        out.append(batch)
    return tuple(out)


def _infer_dequeue(mode: str):
    def infer(inputs, attrs):
        batch = [] if mode == "one" else [_static_count(inputs[1]) if mode == "many" else None]
        return [(t, TensorShape(batch).concatenate(s) if s.ndims is not None or not batch
                 else TensorShape(None))
                for t, s in zip(attrs["component_types"], attrs["shapes"], strict=True)]
    return infer


def _static_count(tensor: Tensor) -> Optional[int]:
    value = constant_value(tensor)
    return None if value is None else int(value)


define_op("QueueEnqueueV2", infer=lambda inputs, attrs: [], kernel=_enqueue_kernel(False),
          stateful=True)
define_op("QueueEnqueueManyV2", infer=lambda inputs, attrs: [], kernel=_enqueue_kernel(True),
          stateful=True)
define_op("QueueDequeueV2", infer=_infer_dequeue("one"), kernel=_dequeue_kernel("one"),
          stateful=True)
define_op("QueueDequeueManyV2", infer=_infer_dequeue("many"), kernel=_dequeue_kernel("many"),
          stateful=True)
define_op("QueueDequeueUpToV2", infer=_infer_dequeue("up_to"), kernel=_dequeue_kernel("up_to"),
          stateful=True)


def _close_kernel(queue, *, cancel_pending_enqueues=False):
    queue.close_queue(cancel_pending_enqueues)
    return ()


define_op("QueueCloseV2", infer=lambda inputs, attrs: [], kernel=_close_kernel, stateful=True)
define_op("QueueSizeV2", infer=lambda inputs, attrs: [(dtypes.int32, TensorShape([]))],
          kernel=lambda queue: np.int32(queue.size()), stateful=True)
define_op("QueueIsClosedV2", infer=lambda inputs, attrs: [(dtypes.bool, TensorShape([]))],
          kernel=lambda queue: np.bool_(queue.closed), stateful=True)
for _type in ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
              "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2", "QueueIsClosedV2") + \
        tuple(_KINDS):
    NotDifferentiable(_type)


def _count_up_to_kernel(ctx, ref, *, limit):
    value = ctx.read_variable(ref.key, ref.key)
    if value >= limit:
        raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}")
    ctx.write_variable(ref.key, value + 1)
    return np.array(value, copy=True)


define_op("CountUpTo", infer=lambda inputs, attrs: [(inputs[0].dtype, TensorShape([]))],
          kernel=_count_up_to_kernel, stateful=True, needs_context=True)
NotDifferentiable("CountUpTo")


def count_up_to(ref, limit: int, name: Optional[str] = None) -> Tensor:
    """Increments variable ``ref`` until ``limit`` (then ``OutOfRangeError``); returns the
    value before the increment."""
    variable_ref = ref.ref() if isinstance(ref, Variable) else ref
    if variable_ref.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"count_up_to needs an int32 or int64 variable, got "
                        f"{variable_ref.dtype.name}")
    return apply_op("CountUpTo", [variable_ref], name=name or "CountUpTo", limit=int(limit))


# ------------------------------------------------------------------ Python classes
def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class QueueBase:
    """A queue of elements (tuples, or dicts with ``names``) of fixed dtypes."""

    _op_type = "FIFOQueueV2"

    def __init__(self, capacity: int, dtypes_, shapes=None, names=None,
                 shared_name: Optional[str] = None, name: Optional[str] = "fifo_queue",
                 **attrs):
        self._dtypes = [dtypes.as_dtype(t) for t in _as_list(dtypes_)]
        if shapes is None:
            self._shapes = [TensorShape(None)] * len(self._dtypes)
        else:
            self._shapes = [as_shape(s) for s in (
                shapes if isinstance(shapes, (list, tuple)) and shapes and
                isinstance(shapes[0], (list, tuple, TensorShape)) else [shapes])]
        if len(self._shapes) != len(self._dtypes):
            raise ValueError("Queue shapes must have the same length as dtypes")
        self._names = None if names is None else _as_list(names)
        if self._names is not None and len(self._names) != len(self._dtypes):
            raise ValueError("Queue names must have the same length as dtypes")
        graph = get_default_graph()
        with graph.atomic():
            self._queue_ref = apply_op(
                self._op_type, [], name=name, component_types=self._dtypes,
                shapes=self._shapes, capacity=int(capacity),
                shared_name=shared_name or f"queue_{next(_keys)}", container="",
                queue_name=(name or self._op_type).rstrip("/").split("/")[-1], **attrs)
        # Op names of the queue's methods use the last component (``myq_Size``); ``name``
        # is the whole op name (``batch/myq``), as in TF.
        self._name = self._queue_ref.op.name.split("/")[-1]

    @property
    def queue_ref(self) -> Tensor:
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> list:
        return list(self._dtypes)

    @property
    def shapes(self) -> list:
        return list(self._shapes)

    @property
    def names(self):
        return self._names

    def _components(self, vals, many: bool) -> list:
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(vals) != sorted(self._names):
                raise ValueError(f"Keys in dictionary to enqueue {sorted(vals)} do not match "
                                 f"names of Queue. Dictionary: {sorted(vals)}, Queue: "
                                 f"{sorted(self._names)}")
            vals = [vals[n] for n in self._names]
        values = _as_list(vals)
        if len(values) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components to enqueue, got "
                             f"{len(values)}")
        tensors = []
        for i, (value, dtype, shape) in enumerate(zip(values, self._dtypes, self._shapes,
                                                      strict=True)):
            tensor = convert_to_tensor(value, dtype=dtype, name=f"component_{i}")
            item = tensor.shape[1:] if many and tensor.shape.ndims else tensor.shape
            if many and tensor.shape.ndims == 0:
                raise ValueError(f"Shape must be at least rank 1 but is rank 0 for component "
                                 f"{i} of enqueue_many")
            if not shape.is_compatible_with(item):
                raise ValueError(f"Shapes {item} and {shape} are incompatible")
            tensors.append(tensor)
        return tensors

    def enqueue(self, vals, name: Optional[str] = None) -> Operation:
        """Adds one element (blocks while the queue is full)."""
        graph = get_default_graph()
        with graph.atomic(), graph.name_scope(name or f"{self._name}_enqueue") as scope:
            components = self._components(vals, many=False)
            return apply_op("QueueEnqueueV2", [self._queue_ref] + components,
                            name=scope)

    def enqueue_many(self, vals, name: Optional[str] = None) -> Operation:
        """Adds the slices of ``vals`` along their first dimension as elements."""
        graph = get_default_graph()
        with graph.atomic(), graph.name_scope(name or f"{self._name}_EnqueueMany") as scope:
            components = self._components(vals, many=True)
            return apply_op("QueueEnqueueManyV2", [self._queue_ref] + components,
                            name=scope)

    def _dequeued(self, outputs):
        outputs = _as_list(outputs)
        if self._names is not None:
            return dict(zip(self._names, outputs, strict=True))
        return outputs[0] if len(outputs) == 1 else outputs

    def dequeue(self, name: Optional[str] = None):
        """One element (blocks while empty; ``OutOfRangeError`` once closed and empty)."""
        with get_default_graph().atomic():
            out = apply_op("QueueDequeueV2", [self._queue_ref],
                           name=name or f"{self._name}_Dequeue",
                           component_types=self._dtypes, shapes=self._shapes)
        return self._dequeued(out)

    def _dequeue_n(self, op_type: str, n, name: str):
        graph = get_default_graph()
        with graph.atomic(), graph.name_scope(name) as scope:
            count = convert_to_tensor(n, dtype=dtypes.int32, name="n")
            out = apply_op(op_type, [self._queue_ref, count], name=scope,
                           component_types=self._dtypes, shapes=self._shapes)
        return self._dequeued(out)

    def dequeue_many(self, n, name: Optional[str] = None):
        """``n`` elements stacked (blocks until there are ``n``)."""
        return self._dequeue_n("QueueDequeueManyV2", n, name or f"{self._name}_DequeueMany")

    def dequeue_up_to(self, n, name: Optional[str] = None):
        """Up to ``n`` elements: fewer only once the queue is closed."""
        return self._dequeue_n("QueueDequeueUpToV2", n, name or f"{self._name}_DequeueUpTo")

    def close(self, cancel_pending_enqueues: bool = False,
              name: Optional[str] = None) -> Operation:
        """Closes the queue: no more enqueues; dequeues drain what is left."""
        with get_default_graph().atomic():
            return apply_op("QueueCloseV2", [self._queue_ref], name=name or f"{self._name}_Close",
                            cancel_pending_enqueues=bool(cancel_pending_enqueues))

    def is_closed(self, name: Optional[str] = None) -> Tensor:
        with get_default_graph().atomic():
            return apply_op("QueueIsClosedV2", [self._queue_ref],
                            name=name or f"{self._name}_Is_Closed")

    def size(self, name: Optional[str] = None) -> Tensor:
        with get_default_graph().atomic():
            return apply_op("QueueSizeV2", [self._queue_ref], name=name or f"{self._name}_Size")


class FIFOQueue(QueueBase):
    """Elements come out in the order they went in."""

    _op_type = "FIFOQueueV2"

    def __init__(self, capacity: int, dtypes, shapes=None, names=None,  # noqa: A002
                 shared_name: Optional[str] = None, name: Optional[str] = "fifo_queue"):
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose ``dequeue_many`` pads components of unknown dimensions."""

    _op_type = "PaddingFIFOQueueV2"

    def __init__(self, capacity: int, dtypes, shapes, names=None,  # noqa: A002
                 shared_name: Optional[str] = None, name: Optional[str] = "padding_fifo_queue"):
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)
        if any(s.ndims is None for s in self._shapes):
            raise ValueError("PaddingFIFOQueue requires shapes of known rank")


class RandomShuffleQueue(QueueBase):
    """Elements come out in random order, keeping ``min_after_dequeue`` until closed."""

    _op_type = "RandomShuffleQueueV2"

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes, shapes=None,  # noqa: A002
                 names=None, seed: Optional[int] = None, shared_name: Optional[str] = None,
                 name: Optional[str] = "random_shuffle_queue"):
        seed1, seed2 = get_seed(seed)
        super().__init__(capacity, dtypes, shapes, names, shared_name, name,
                         min_after_dequeue=int(min_after_dequeue), seed=seed1 or 0,
                         seed2=seed2 or 0)


class PriorityQueue(QueueBase):
    """Elements come out lowest int64 priority (the first component) first."""

    _op_type = "PriorityQueueV2"

    def __init__(self, capacity: int, types, shapes=None, names=None,
                 shared_name: Optional[str] = None, name: Optional[str] = "priority_queue"):
        types = [dtypes.int64] + _as_list(types)
        if shapes is not None:
            shapes = [TensorShape([])] + [as_shape(s) for s in shapes]
        if names is not None:
            raise ValueError("PriorityQueue: names is not supported by gradflow")
        super().__init__(capacity, types, shapes, None, shared_name, name)
