"""TF1's ``tensor_util`` helpers: ``make_tensor_proto``, ``make_ndarray`` and
``get_static_value`` (values as ``TensorProto`` and back; values known while building)."""
from __future__ import annotations

from typing import Optional

import numpy as np
from tensorboard.compat.proto import tensor_pb2

from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value
from gradflow.framework.tensor_proto import make_ndarray
from gradflow.framework.tensor_proto import make_tensor_proto as _array_proto

__all__ = ["make_tensor_proto", "make_ndarray", "get_static_value"]


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
