"""TF1's queue-based input helpers: producers of file names, slices and ranges, and
``batch``/``shuffle_batch`` (and their ``_join`` forms) over queues fed by runners."""
from __future__ import annotations

from typing import Optional, Sequence


from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import (GraphKeys, control_dependencies,
                                      get_default_graph, name_scope)
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops.array import gather, identity, shape_of_input, size, zeros
from gradflow.ops.logging_ops import Assert
from gradflow.ops.math import cast, greater, maximum
from gradflow.ops.data_flow_ops import (FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue,
                                        count_up_to)
from gradflow.ops.primitives import range as range_op
from gradflow.ops.random import random_shuffle
from gradflow.ops.reader_ops import matching_files
from gradflow.ops.state import Variable
from gradflow.summary.summary import scalar
from gradflow.train.queue_runner import QueueRunner, add_queue_runner

__all__ = ["limit_epochs", "input_producer", "string_input_producer", "range_input_producer",
           "slice_input_producer", "batch", "batch_join", "shuffle_batch",
           "shuffle_batch_join", "match_filenames_once"]


def limit_epochs(tensor, num_epochs: Optional[int] = None, name: Optional[str] = None):
    """``tensor``, which raises ``OutOfRangeError`` after being run ``num_epochs`` times."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        zero = zeros([], dtype=dtypes.int64)
        epochs = Variable(zero, name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = count_up_to(epochs, num_epochs)
        with control_dependencies([counter]):
            return identity(tensor, name=scope)


def _fullness_summary(queue, capacity: int, summary_name: str,
                      min_after_dequeue: int = 0) -> None:
    """TF's scalar summary of how full ``queue`` is (above ``min_after_dequeue``)."""
    size = queue.size()
    if min_after_dequeue:
        size = maximum(0, size - min_after_dequeue)
    scalar(summary_name, cast(size, dtypes.float32) * (1.0 / (capacity - min_after_dequeue)))


def input_producer(input_tensor, element_shape=None, num_epochs: Optional[int] = None,
                   shuffle: bool = True, seed: Optional[int] = None, capacity: int = 32,
                   shared_name: Optional[str] = None, summary_name: Optional[str] = None,
                   name: Optional[str] = None, cancel_op=None):
    """A FIFO queue of the rows of ``input_tensor`` (shuffled each epoch), kept full by a
    queue runner; closed after ``num_epochs``."""
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, "input_producer", [input_tensor]) as scope:
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        shape = as_shape(element_shape) if element_shape is not None else \
            input_tensor.shape[1:] if input_tensor.shape.ndims else TensorShape(None)
        if not shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             "`element_shape` must be specified")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = FIFOQueue(capacity, [input_tensor.dtype], shapes=[shape],
                          shared_name=shared_name, name=scope)
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        if summary_name is not None:
            _fullness_summary(queue, capacity, summary_name)
        return queue


def string_input_producer(string_tensor, num_epochs: Optional[int] = None,
                          shuffle: bool = True, seed: Optional[int] = None, capacity: int = 32,
                          shared_name: Optional[str] = None, name: Optional[str] = None,
                          cancel_op=None):
    """A queue of file names for a reader, ``num_epochs`` passes (shuffled each pass)."""
    with get_default_graph().atomic(), \
            name_scope(name, "input_producer", [string_tensor]) as scope:
        strings = convert_to_tensor(string_tensor, dtype=dtypes.string)
        known = constant_value(strings)
        if known is not None and known.size == 0:
            raise ValueError("string_input_producer requires a non-null input tensor")
        # TF1's graph: the names pass an Assert (a fed empty list fails the run) and
        # an Identity, inside the producer's scope
        message = "string_input_producer requires a non-null input tensor"
        with control_dependencies([Assert(greater(size(strings), 0), [message])]):
            strings = identity(strings)
        return input_producer(strings, TensorShape([]), num_epochs, shuffle, seed, capacity,
                              shared_name, f"fraction_of_{capacity}_full", scope, cancel_op)


def range_input_producer(limit, num_epochs: Optional[int] = None, shuffle: bool = True,
                         seed: Optional[int] = None, capacity: int = 32,
                         shared_name: Optional[str] = None, name: Optional[str] = None):
    """A queue of the integers ``0 .. limit-1``, ``num_epochs`` passes."""
    with get_default_graph().atomic(), name_scope(name, "input_producer", [limit]) as scope:
        values = range_op(convert_to_tensor(limit, dtype=dtypes.int32, name="limit"))
        return input_producer(values, TensorShape([]), num_epochs, shuffle, seed, capacity,
                              shared_name, f"fraction_of_{capacity}_full",
                              scope)


def slice_input_producer(tensor_list: Sequence, num_epochs: Optional[int] = None,
                         shuffle: bool = True, seed: Optional[int] = None, capacity: int = 32,
                         shared_name: Optional[str] = None, name: Optional[str] = None) -> list:
    """One slice of every tensor at a time (same row of each), as a list of tensors."""
    with get_default_graph().atomic(), name_scope(name, "input_producer", tensor_list):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        # as TF1: the first dimension read from the first tensor's shape (``Shape``,
        # ``strided_slice``), known or not while building
        rows = shape_of_input(tensors[0])[0]
        queue = range_input_producer(rows, num_epochs, shuffle, seed, capacity, shared_name)
        index = queue.dequeue()
        return [gather(t, index) for t in tensors]


# ------------------------------------------------------------------------- batching
def _flat(tensors) -> tuple[list, object]:
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [tensors[k] for k in keys], keys
    if isinstance(tensors, (list, tuple)):
        return list(tensors), None
    return [tensors], "single"


def _rebuild(outputs, keys):
    outputs = outputs if isinstance(outputs, list) else [outputs]
    if keys == "single" or (keys is None and len(outputs) == 1):  # TF1 unwraps one tensor
        return outputs[0]
    if keys is not None:
        return dict(zip(keys, outputs, strict=True))
    return outputs


def _shapes(tensors: list, shapes, enqueue_many: bool, dynamic_pad: bool) -> list:
    if shapes is not None:
        result = [as_shape(s) for s in shapes]
    else:
        result = [t.shape[1:] if enqueue_many and t.shape.ndims else t.shape for t in tensors]
    for shape in result:
        if dynamic_pad:
            if shape.ndims is None:
                raise ValueError("Shapes must be of known rank with dynamic_pad=True")
        elif not shape.is_fully_defined():
            raise ValueError(f"All shapes must be fully defined: {result}")
    return result


def _batch(tensors_list: list, batch_size, capacity: int, enqueue_many: bool, shapes,
           dynamic_pad: bool, allow_smaller_final_batch: bool, shared_name, name: str,
           num_threads: int = 1, shuffle: Optional[dict] = None):
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, name) as scope:
        flat_lists, keys = [], None
        for tensors in tensors_list:
            flat, keys = _flat(tensors)
            flat_lists.append([convert_to_tensor(t) for t in flat])
        first = flat_lists[0]
        types = [t.dtype for t in first]
        for flat in flat_lists[1:]:
            if [t.dtype for t in flat] != types:
                raise TypeError("All tensors in tensors_list must have the same dtypes")
        component_shapes = _shapes(first, shapes, enqueue_many, dynamic_pad)
        if shuffle is not None:
            queue = RandomShuffleQueue(capacity, shuffle["min_after_dequeue"], types,
                                       component_shapes, seed=shuffle["seed"],
                                       shared_name=shared_name)
        elif dynamic_pad:
            queue = PaddingFIFOQueue(capacity, types, component_shapes,
                                     shared_name=shared_name)
        else:
            queue = FIFOQueue(capacity, types, component_shapes, shared_name=shared_name)
        put = queue.enqueue_many if enqueue_many else queue.enqueue
        enqueues = [put(flat) for flat in flat_lists for _ in range(num_threads)]
        add_queue_runner(QueueRunner(queue, enqueues))
        if shuffle is None:
            _fullness_summary(queue, capacity, f"fraction_of_{capacity}_full")
        else:
            least = shuffle["min_after_dequeue"]
            _fullness_summary(queue, capacity,
                              f"fraction_over_{least}_of_{capacity - least}_full", least)
        take = queue.dequeue_up_to if allow_smaller_final_batch else queue.dequeue_many
        outputs = take(batch_size, name=scope)
        return _rebuild(outputs, keys)


def batch(tensors, batch_size, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes=None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
          name: Optional[str] = None):
    """Batches of ``batch_size`` from a FIFO queue fed by ``num_threads`` runner threads."""
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name or "batch", num_threads)


def batch_join(tensors_list: Sequence, batch_size, capacity: int = 32,
               enqueue_many: bool = False, shapes=None, dynamic_pad: bool = False,
               allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
               name: Optional[str] = None):
    """Batches mixing several lists of tensors, one runner thread each."""
    return _batch(list(tensors_list), batch_size, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name or "batch_join")


def shuffle_batch(tensors, batch_size, capacity: int, min_after_dequeue: int,
                  num_threads: int = 1, seed: Optional[int] = None, enqueue_many: bool = False,
                  shapes=None, allow_smaller_final_batch: bool = False,
                  shared_name: Optional[str] = None, name: Optional[str] = None):
    """Random batches from a shuffle queue holding at least ``min_after_dequeue``."""
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, shared_name, name or "shuffle_batch", num_threads,
                  {"min_after_dequeue": min_after_dequeue, "seed": seed})


def shuffle_batch_join(tensors_list: Sequence, batch_size, capacity: int,
                       min_after_dequeue: int, seed: Optional[int] = None,
                       enqueue_many: bool = False, shapes=None,
                       allow_smaller_final_batch: bool = False,
                       shared_name: Optional[str] = None, name: Optional[str] = None):
    """``shuffle_batch`` over several lists of tensors, one runner thread each."""
    return _batch(list(tensors_list), batch_size, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, shared_name, name or "shuffle_batch_join", 1,
                  {"min_after_dequeue": min_after_dequeue, "seed": seed})


# ------------------------------------------------------------------ file patterns
def match_filenames_once(pattern, name: Optional[str] = None) -> Variable:
    """A local variable holding the files matching ``pattern`` (globbed at initialization)."""
    with get_default_graph().atomic(), name_scope(name, "matching_filenames", [pattern]) as scope:
        pattern = convert_to_tensor(pattern, dtype=dtypes.string, name="pattern")
        files = matching_files(pattern)
        return Variable(files, name=scope, trainable=False,
                        validate_shape=False, collections=[GraphKeys.LOCAL_VARIABLES])


