"""gradflow values as TensorFlow's protocol buffers: ``DataType``, ``TensorShapeProto``,
``TensorProto`` (TF's own message classes, shipped by the ``tensorboard`` package).

Summaries, event files and GraphDefs are built from these, so nothing here encodes
protobuf bytes by hand.
"""
from __future__ import annotations

import numpy as np
from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2, types_pb2

from gradflow.framework import dtypes
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["datatype_enum", "dtype_from_enum", "shape_proto", "make_tensor_proto",
           "make_ndarray"]

_NAMES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF"}


def datatype_enum(dtype) -> int:
    """TF's ``DataType`` number of a gradflow dtype (``DT_FLOAT`` for float32...)."""
    dtype = dtypes.as_dtype(dtype)
    return types_pb2.DataType.Value(_NAMES.get(dtype.name, "DT_" + dtype.name.upper()))


def dtype_from_enum(value: int) -> dtypes.DType:
    name = types_pb2.DataType.Name(value)
    for dtype_name, enum_name in _NAMES.items():
        if enum_name == name:
            return dtypes.as_dtype(dtype_name)
    return dtypes.as_dtype(name[3:].lower())


def shape_proto(shape) -> tensor_shape_pb2.TensorShapeProto:
    """A static shape as a ``TensorShapeProto`` (-1 for unknown sizes)."""
    shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if shape.ndims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(dim=[
        tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else int(d))
        for d in shape.as_list()])


def make_tensor_proto(value, dtype=None) -> tensor_pb2.TensorProto:
    """An array as a ``TensorProto``: numbers as ``tensor_content`` bytes (little-endian,
    as TF writes them), strings as ``string_val``."""
    array = np.asarray(value) if dtype is None or dtypes.as_dtype(dtype) is dtypes.string \
        else np.asarray(value, dtype=dtypes.as_dtype(dtype).as_numpy_dtype)
    if dtype is None:
        dtype = dtypes.string if array.dtype.kind in "OSU" else dtypes.as_dtype(array.dtype)
    dtype = dtypes.as_dtype(dtype)
    proto = tensor_pb2.TensorProto(dtype=datatype_enum(dtype),
                                   tensor_shape=shape_proto(array.shape))
    if dtype is dtypes.string:
        proto.string_val.extend(
            v if isinstance(v, bytes) else str(v).encode("utf-8") for v in array.reshape(-1))
    else:
        little = array.astype(array.dtype.newbyteorder("<"), copy=False)
        proto.tensor_content = np.ascontiguousarray(little).tobytes()
    return proto


def make_ndarray(proto: tensor_pb2.TensorProto) -> np.ndarray:
    """The array a ``TensorProto`` holds (``tensor_content`` or the typed value lists)."""
    dtype = dtype_from_enum(proto.dtype)
    shape = [d.size for d in proto.tensor_shape.dim]
    if dtype is dtypes.string:
        return np.array(list(proto.string_val), dtype=object).reshape(shape)
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    if proto.tensor_content:
        return np.frombuffer(proto.tensor_content, np_dtype.newbyteorder("<")) \
            .astype(np_dtype).reshape(shape)
    field = {"f": "float_val", "i": "int_val", "u": "int_val", "b": "bool_val",
             "c": "scomplex_val"}[np_dtype.kind]
    if np_dtype == np.float64:
        field = "double_val"
    elif np_dtype in (np.int64, np.uint64):
        field = "int64_val"
    elif np_dtype == np.float16:
        field = "half_val"
    values = np.array(list(getattr(proto, field)))
    count = int(np.prod(shape))
    if values.size == 0:
        values = np.zeros(count)
    elif values.size < count:  # TF stores a repeated trailing value once
        values = np.concatenate([values, np.repeat(values[-1], count - values.size)])
    if np_dtype == np.float16:
        values = values.astype(np.uint16).view(np.float16)
    return values.astype(np_dtype).reshape(shape)
