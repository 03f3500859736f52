"""TF1's ``tensor_util`` helpers: ``make_tensor_proto``, ``make_ndarray`` and
``get_static_value`` (values as ``TensorProto`` and back; values known while building),
and the small conversions TF1 programs call: ``convert_to_tensor_or_indexed_slices``,
``convert_to_tensor_or_sparse_tensor``, ``dimension_at_index``, ``init_scope``."""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import numpy as np
from tensorboard.compat.proto import tensor_pb2

from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.framework.tensor_shape import Dimension, TensorShape
from gradflow.framework.tensor_proto import make_ndarray
from gradflow.framework.tensor_proto import make_tensor_proto as _array_proto

__all__ = ["make_tensor_proto", "make_ndarray", "get_static_value",
           "convert_to_tensor_or_indexed_slices", "convert_to_tensor_or_sparse_tensor",
           "dimension_at_index", "init_scope"]


def make_tensor_proto(values, dtype=None, shape=None, verify_shape: bool = False,
                      allow_broadcast: bool = False) -> tensor_pb2.TensorProto:
    """``values`` as a ``TensorProto`` of ``dtype`` and ``shape``. With a ``shape`` larger
    than ``values``, the last value repeats (or ``values`` broadcasts, with
    ``allow_broadcast``); more values than ``shape`` holds is a ValueError."""
    array = np.asarray(values) if dtype is None or dtypes.as_dtype(dtype) is dtypes.string \
        else np.asarray(values, dtype=dtypes.as_dtype(dtype).as_numpy_dtype)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        count = int(np.prod(shape, dtype=np.int64))
        if verify_shape and array.shape != shape:
            raise TypeError(f"Expected Tensor's shape: {shape}, but got {array.shape}.")
        if allow_broadcast:
            try:
                array = np.broadcast_to(array, shape)
            except ValueError as err:
                raise TypeError(f"Expected Tensor's shape: {shape}, but got "
                                f"{array.shape}.") from err
        elif array.size > count:
            raise ValueError(f"Too many elements provided. Takes at most {count}, but got "
                             f"{array.size}.")
        elif array.size == count:
            array = array.reshape(shape)
        elif array.size == 0:
            raise ValueError(f"make_tensor_proto: values is empty but shape {shape} needs "
                             f"{count} elements")
        else:
            flat = array.reshape(-1)
            array = np.concatenate([flat, np.repeat(flat[-1:], count - flat.size)]
                                   ).reshape(shape)
    return _array_proto(array, dtype)


def get_static_value(tensor, partial: bool = False) -> Optional[np.ndarray]:
    """The value of ``tensor`` when it is known while building the graph, else None."""
    if partial:
        raise ValueError("get_static_value: partial=True (partially known values) is not "
                         "supported; pass partial=False")
    return constant_value(tensor)


def convert_to_tensor_or_indexed_slices(value, dtype=None, name: Optional[str] = None):
    """``value`` itself when it is ``IndexedSlices``, else ``convert_to_tensor(value)``."""
    if isinstance(value, IndexedSlices):
        if dtype is not None and dtypes.as_dtype(dtype) is not value.dtype:
            raise ValueError(f"Incompatible tensor conversion requested to dtype "
                             f"{dtypes.as_dtype(dtype).name} for IndexedSlices with dtype "
                             f"{value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name: Optional[str] = None):
    """``value`` as a SparseTensor when it is one (or a ``SparseTensorValue``), else
    ``convert_to_tensor(value)``."""
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and dtypes.as_dtype(dtype) is not value.dtype:
            raise RuntimeError(f"Sparse dtype mismatch. Requested: "
                               f"{dtypes.as_dtype(dtype).name},  Actual: {value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def dimension_at_index(shape, index: int) -> Dimension:
    """Dimension ``index`` of ``shape`` (an unknown one when the rank is unknown)."""
    shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if shape.ndims is None:
        return Dimension(None)
    return shape.dims[index]


@contextlib.contextmanager
def init_scope() -> Iterator[None]:
    """Builds in the outermost graph (out of any function or loop body being built)
    with no control dependencies, as variable initializers are built."""
    graph = get_default_graph()
    while graph.outer_graph is not None:
        graph = graph.outer_graph
    with graph.as_default(), graph.control_dependencies(None):
        yield
